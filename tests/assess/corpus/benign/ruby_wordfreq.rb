text = File.read('input.txt')
freq = Hash.new(0)
text.downcase.scan(/[a-z']+/) { |w| freq[w] += 1 }
freq.sort_by { |w, n| [-n, w] }.first(10).each do |w, n|
  puts "#{w} #{n}"
end
