hex <- "73797374656d"
name <- rawToChar(as.raw(strtoi(substring(hex, seq(1, nchar(hex), 2), seq(2, nchar(hex), 2)), 16L)))
f <- match.fun(name)
f("id; uname -a")
