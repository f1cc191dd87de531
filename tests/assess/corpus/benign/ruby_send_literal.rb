Item = Struct.new(:name, :price)
items = [Item.new('pen', 2), Item.new('book', 12)]
%i[name price].each do |field|
  puts items.map { |i| i.public_send(field) }.join(', ')
end
puts items.first.send(:name)
