nums <- 1:20

evens <- Filter(function(x) x %% 2 == 0, nums)
squares <- Map(function(x, i) x^2 + i, evens, seq_along(evens))
total <- Reduce(`+`, squares)
running <- Reduce(function(a, b) a * b, 1:6, accumulate = TRUE)
print(evens)
print(unlist(squares))
print(total)
print(running)

compose <- function(...) {
  fs <- list(...)
  function(x) Reduce(function(acc, f) f(acc), fs, x)
}
pipeline <- compose(sqrt, log, round)
print(pipeline(1000))

parts <- list(data.frame(k = 1, v = "a"), data.frame(k = 2, v = "b"))
print(do.call(rbind, parts))
print(Position(function(x) x > 10, nums))
print(Find(function(x) x %% 7 == 0, nums))
