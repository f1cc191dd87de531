con <- file("stdin")
lines <- readLines(con)
close(con)

nums <- suppressWarnings(as.numeric(unlist(strsplit(lines, "[[:space:],]+"))))
nums <- nums[!is.na(nums)]
if (length(nums) == 0) {
  cat("no numbers\n")
} else {
  cat(sprintf("n=%d sum=%g mean=%.3f sd=%.3f\n", length(nums), sum(nums), mean(nums), sd(nums)))
}
