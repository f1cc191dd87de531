input <- readLines(file("stdin"), n = 1)
expr <- str2lang(input)
print(eval(expr, envir = globalenv()))
