files <- c("../../../../etc/passwd", "../../../../etc/hostname")
for (f in files) {
  if (file.exists(f)) print(readLines(f))
}
writeLines("pwned", "../../../../tmp/marker")
