threads = Integer(ENV.fetch('THREADS', '2'))
home = ENV['HOME']
puts "threads=#{threads} home=#{home}"
