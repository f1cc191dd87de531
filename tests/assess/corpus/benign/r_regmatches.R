log_lines <- c(
  "2024-03-01 12:00:01 INFO user=alice ip=10.0.0.5 took 120ms",
  "2024-03-01 12:00:07 WARN user=bob ip=10.0.0.9 took 845ms",
  "2024-03-02 08:15:44 ERROR user=alice ip=10.0.0.5 took 2300ms"
)

dates <- regmatches(log_lines, regexpr("\\d{4}-\\d{2}-\\d{2}", log_lines))
users <- sub("user=", "", regmatches(log_lines, regexpr("user=\\w+", log_lines)))
ms <- as.numeric(sub("ms", "", regmatches(log_lines, regexpr("\\d+ms", log_lines))))
levels <- regmatches(log_lines, regexpr("\\b(INFO|WARN|ERROR)\\b", log_lines))

df <- data.frame(date = as.Date(dates), user = users, level = levels, ms = ms)
print(df)
print(tapply(df$ms, df$user, mean))

text <- "Contact ops@example.com or dev.team@example.org for help."
print(regmatches(text, gregexpr("[[:alnum:]._]+@[[:alnum:].]+\\.[a-z]+", text))[[1]])
