set.seed(2024)

estimate_pi <- function(n) {
  x <- runif(n)
  y <- runif(n)
  4 * mean(x^2 + y^2 <= 1)
}
print(sapply(c(1e2, 1e4, 1e5), estimate_pi))

# bootstrap CI for a median
sample_data <- rexp(80, rate = 0.2)
boots <- replicate(2000, median(sample(sample_data, replace = TRUE)))
print(quantile(boots, c(0.025, 0.975)))

# random walk
steps <- sample(c(-1, 1), 1000, replace = TRUE)
walk <- cumsum(steps)
cat("max distance:", max(abs(walk)), "\n")
plot(walk, type = "l", main = "Random walk")
