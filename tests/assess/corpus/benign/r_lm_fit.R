data(mtcars)
fit <- lm(mpg ~ wt + hp, data = mtcars)
print(summary(fit))
cat(sprintf("R^2 = %.3f\n", summary(fit)$r.squared))

new_cars <- data.frame(wt = c(2.5, 3.2), hp = c(110, 150))
pred <- predict(fit, newdata = new_cars, interval = "confidence")
print(round(pred, 2))

plot(fitted(fit), resid(fit), xlab = "Fitted", ylab = "Residuals", main = "Residuals vs fitted")
abline(h = 0, lty = 2)
