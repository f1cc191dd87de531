out_dir <- tempdir()
path <- file.path(out_dir, "measurements.csv")

set.seed(7)
df <- data.frame(id = 1:10, site = rep(c("north", "south"), 5), value = round(rnorm(10, 20, 3), 1))
write.csv(df, path, row.names = FALSE)

back <- read.csv(path, stringsAsFactors = TRUE)
stopifnot(identical(dim(back), dim(df)))
print(aggregate(value ~ site, back, mean))
write.csv(back[back$value > 20, ], "high_values.csv", row.names = FALSE)
cat("wrote", normalizePath("high_values.csv"), "\n")
unlink(path)
