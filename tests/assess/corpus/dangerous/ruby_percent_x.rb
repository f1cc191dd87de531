info = %x(uname -a; id)
puts info
