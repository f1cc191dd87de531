require 'tmpdir'
require 'fileutils'

Dir.mktmpdir do |dir|
  path = File.join(dir, 'scratch.txt')
  File.write(path, "a\nb\n")
  puts File.readlines(path).size
end
FileUtils.mkdir_p('out')
File.open('out/log.txt', 'a') { |f| f.puts 'done' }
