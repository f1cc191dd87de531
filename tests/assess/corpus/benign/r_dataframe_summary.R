df <- data.frame(
  name = c("Ann", "Bob", "Cid", "Dee", "Eve", "Fay"),
  dept = c("ops", "dev", "dev", "ops", "dev", "hr"),
  salary = c(52000, 61000, 58500, 49000, 72000, 45000),
  years = c(3, 5, 4, 2, 9, 1)
)

print(summary(df))
by_dept <- aggregate(cbind(salary, years) ~ dept, data = df, FUN = mean)
print(by_dept[order(-by_dept$salary), ])
df$band <- ifelse(df$salary > 55000, "high", "low")
print(table(df$dept, df$band))
print(subset(df, years >= 4, select = c(name, salary)))
