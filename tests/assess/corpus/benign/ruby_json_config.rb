require 'json'

config = JSON.parse(File.read('config.json'))
threads = config.fetch('threads', 2)
names = config['names'].map(&:upcase).sort
File.write('out.json', JSON.pretty_generate({ 'threads' => threads, 'names' => names }))
puts "wrote out.json"
