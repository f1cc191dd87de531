Point = Struct.new(:x, :y) do
  def norm
    Math.sqrt(x * x + y * y)
  end
end

points = [Point.new(3, 4), Point.new(1, 1), Point.new(6, 8)]
points.sort_by(&:norm).each { |p| puts "#{p.x},#{p.y} #{p.norm.round(2)}" }
