titles <- c("  the quick brown fox ", "JUMPS over", "the lazy   dog")

clean <- trimws(gsub("\\s+", " ", titles))
title_case <- function(s) {
  words <- strsplit(tolower(s), " ", fixed = TRUE)[[1]]
  paste0(toupper(substring(words, 1, 1)), substring(words, 2), collapse = " ")
}
for (t in clean) {
  cat(sprintf("%-25s -> %s (%d chars)\n", t, title_case(t), nchar(t)))
}
cat(rev(strsplit("stressed", "")[[1]]), sep = "")
cat("\n")
print(sprintf("%05.1f%%", c(3.14159, 42, 99.5)))
print(sub("(\\w+)@(\\w+)", "\\2 at \\1", "user@example"))
