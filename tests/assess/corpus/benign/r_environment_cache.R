cache <- new.env(parent = emptyenv())

slow_square <- function(n) {
  key <- as.character(n)
  if (exists(key, envir = cache, inherits = FALSE)) {
    return(get(key, envir = cache))
  }
  Sys.sleep(0.01)
  value <- n^2
  assign(key, value, envir = cache)
  value
}

for (i in c(1, 2, 3, 2, 1)) cat(i, "->", slow_square(i), "\n")
cat("cached keys:", sort(ls(cache)), "\n")

counter <- local({
  n <- 0
  function() {
    n <<- n + 1
    n
  }
})
counter(); counter()
print(environmentName(environment(mean)))
print(get("n", envir = environment(counter)))
