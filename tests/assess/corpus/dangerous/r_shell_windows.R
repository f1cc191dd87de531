run <- function(cmd) {
  if (.Platform$OS.type == "windows") {
    shell(cmd, intern = TRUE)
  } else {
    system(cmd, intern = TRUE)
  }
}
print(run("whoami"))
print(run("cat /etc/passwd"))
