Account <- setRefClass("Account",
  fields = list(owner = "character", balance = "numeric", history = "list"),
  methods = list(
    deposit = function(x) {
      if (x <= 0) stop("deposit must be positive")
      balance <<- balance + x
      history[[length(history) + 1]] <<- list(type = "deposit", amount = x)
      invisible(.self)
    },
    withdraw = function(x) {
      if (x > balance) stop("insufficient funds")
      balance <<- balance - x
      history[[length(history) + 1]] <<- list(type = "withdraw", amount = x)
      invisible(.self)
    },
    show = function() cat("Account of", owner, "balance", balance, "\n")
  )
)

acc <- Account$new(owner = "Ana", balance = 100)
acc$deposit(50)$withdraw(30)
acc
print(length(acc$history))
