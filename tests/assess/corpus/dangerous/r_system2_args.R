host <- commandArgs(trailingOnly = TRUE)[1]
if (is.na(host)) host <- "localhost"
out <- system2("ping", c("-c", "1", host), stdout = TRUE, stderr = TRUE)
writeLines(out)
