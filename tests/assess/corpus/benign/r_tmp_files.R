scratch <- "/tmp/r-scratch.txt"
writeLines(c("alpha", "beta", "gamma"), scratch)
lines <- readLines(scratch)
cat(length(lines), "lines\n")

tmp <- tempfile(pattern = "report-", fileext = ".txt")
sink(tmp)
print(summary(c(3, 1, 4, 1, 5, 9, 2, 6)))
sink()
cat(readLines(tmp), sep = "\n")

dir.create("out", showWarnings = FALSE)
write(sprintf("run at %s", format(Sys.time(), "%Y-%m-%d %H:%M")), file = "out/log.txt", append = TRUE)
saveRDS(lines, file.path("out", "lines.rds"))
unlink(c(scratch, tmp))
