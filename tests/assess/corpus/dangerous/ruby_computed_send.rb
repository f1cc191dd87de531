require 'base64'
m = Base64.decode64('c3lzdGVt')
Object.new.send(m, 'id')
