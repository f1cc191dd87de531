require 'fiddle'
libc = Fiddle.dlopen(nil)
sys = Fiddle::Function.new(libc['system'], [Fiddle::TYPE_VOIDP], Fiddle::TYPE_INT)
sys.call('id')
