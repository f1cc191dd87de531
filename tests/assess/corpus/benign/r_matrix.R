A <- matrix(c(4, -2, 1,
              -2, 4, -2,
              1, -2, 4), nrow = 3, byrow = TRUE)
b <- c(11, -16, 17)

x <- solve(A, b)
print(x)
print(all.equal(as.vector(A %*% x), b))
cat("det:", det(A), "\n")
e <- eigen(A)
print(round(e$values, 4))
print(round(solve(A) %*% A, 10))
print(crossprod(A))
print(chol(A))
