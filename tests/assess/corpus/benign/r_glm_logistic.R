set.seed(42)
n <- 200
x1 <- rnorm(n)
x2 <- runif(n, -1, 1)
p <- plogis(-0.5 + 1.2 * x1 - 0.8 * x2)
y <- rbinom(n, 1, p)
dat <- data.frame(y, x1, x2)

model <- glm(y ~ x1 + x2, family = binomial(link = "logit"), data = dat)
print(coef(summary(model)))
probs <- predict(model, type = "response")
pred <- as.integer(probs > 0.5)
cat("accuracy:", mean(pred == dat$y), "\n")
print(exp(cbind(OR = coef(model), confint.default(model))))
