path <- if (file.exists("input.txt")) "input.txt" else stop("input.txt not found")
text <- tolower(paste(readLines(path, warn = FALSE), collapse = " "))
words <- unlist(strsplit(gsub("[^a-z' ]", " ", text), "\\s+"))
words <- words[nzchar(words)]
freq <- sort(table(words), decreasing = TRUE)
top <- head(freq, 10)
for (w in names(top)) cat(sprintf("%-12s %d\n", w, top[[w]]))
barplot(top, las = 2, main = "Top words")
