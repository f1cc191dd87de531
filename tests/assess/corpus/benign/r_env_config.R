threads <- as.integer(Sys.getenv("THREADS", unset = "2"))
home <- Sys.getenv("HOME")
verbose <- tolower(Sys.getenv("VERBOSE", "false")) %in% c("1", "true", "yes")
args <- commandArgs(trailingOnly = TRUE)
name <- if (length(args) >= 1) args[[1]] else "world"
cat(sprintf("threads=%d home=%s verbose=%s\n", threads, home, verbose))
cat("hello", name, "\n")
