hanoi <- function(n, from = "A", to = "C", via = "B") {
  if (n == 0) return(invisible(0))
  moves <- hanoi(n - 1, from, via, to)
  cat("move disk", n, "from", from, "to", to, "\n")
  moves + 1 + hanoi(n - 1, via, to, from)
}

fib <- function(n) if (n < 2) n else fib(n - 1) + fib(n - 2)

flatten <- function(x) {
  if (!is.list(x)) return(list(x))
  do.call(c, lapply(x, flatten))
}

total <- hanoi(3)
cat("moves:", total, "\n")
print(sapply(0:15, fib))
str(flatten(list(1, list(2, list(3, 4)), 5)))
