make_counter <- function(start = 0) {
  count <- start
  list(
    inc = function(by = 1) {
      count <<- count + by
      invisible(count)
    },
    get = function() count
  )
}

make_multiplier <- function(k) function(x) x * k

c1 <- make_counter()
c1$inc()
c1$inc(5)
cat("counter:", c1$get(), "\n")

double <- make_multiplier(2)
triple <- make_multiplier(3)
print(double(1:5))
print(triple(1:5))

adders <- lapply(1:3, function(i) function(x) x + i)
print(sapply(adders, function(f) f(10)))
