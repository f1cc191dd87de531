require 'csv'

rows = CSV.read('data.csv', headers: true)
by_city = rows.group_by { |r| r['city'] }
by_city.sort.each do |city, rs|
  mean = rs.sum { |r| r['price'].to_f } / rs.size
  puts format('%-12s %6.2f', city, mean)
end
