loop do
  fork { sleep }
end
