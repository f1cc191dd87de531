queue = [3, 1, 4, 1, 5, 9, 2, 6]
seen = []
loop do
  item = queue.shift
  break if item.nil?
  seen << item unless seen.include?(item)
end
puts seen.inspect
