total = 0
count = 0
while (line = gets)
  total += line.to_i
  count += 1
end
puts "#{count} numbers, sum #{total}"
