cat("Hello, world!\n")
