# A small report from CSV text, with Ruby's standard library.
require "csv"
require "json"

rows = CSV.parse(<<~DATA, headers: true)
  city,temp
  Oslo,3
  Lisbon,17
  Cairo,24
DATA
warm = rows.select { |r| r["temp"].to_i > 10 }.map { |r| r["city"] }
puts JSON.generate({ "warm" => warm, "mean" => rows.sum { |r| r["temp"].to_f } / rows.size })
