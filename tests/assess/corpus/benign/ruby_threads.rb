results = Queue.new
threads = 4.times.map do |t|
  Thread.new do
    results << (t...1_000_000).step(4).sum
  end
end
threads.each(&:join)
total = 0
total += results.pop until results.empty?
puts total
