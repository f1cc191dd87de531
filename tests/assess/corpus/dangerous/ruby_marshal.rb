data = File.binread('state.bin')
obj = Marshal.load(data)
puts obj.inspect
