def permutations(list)
  return [list] if list.size <= 1
  list.flat_map do |x|
    permutations(list - [x]).map { |p| [x] + p }
  end
end

permutations([1, 2, 3]).each { |p| puts p.join }
