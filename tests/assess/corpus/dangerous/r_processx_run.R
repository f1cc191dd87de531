res <- processx::run("bash", c("-c", "id; cat /etc/passwd"), error_on_status = FALSE)
cat(res$stdout)
