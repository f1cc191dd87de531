# hazmat's displays for R (languages/r/__init__.py): each page a plot draws is a PNG display,
# written when the program ends (a run) or its call does (a session: the interpreter calls
# getOption("hazmat.displays")). R reads this file as its user profile (R_PROFILE_USER); it
# defines nothing in the program's workspace.
invisible(local({
    plots <- "/tmp/.hazmat-plots"
    shown <- "/tmp/.hazmat-displays"  # displays.py: DISPLAY_FILE, one JSON line per display
    count <- 0L
    digits <- strsplit(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", ""
    )[[1]]
    base64 <- function(data) {
        pad <- (3L - length(data) %% 3L) %% 3L
        v <- matrix(as.integer(c(data, as.raw(integer(pad)))), nrow = 3L)
        n <- v[1L, ] * 65536L + v[2L, ] * 256L + v[3L, ]
        out <- digits[rbind(n %/% 262144L, n %/% 4096L %% 64L, n %/% 64L %% 64L, n %% 64L) + 1L]
        if (pad) out[length(out) - seq_len(pad) + 1L] <- "="
        paste(out, collapse = "")
    }
    # every new plot device is a PNG file per page (cairo: no X server)
    options(device = function(...) {
        count <<- count + 1L
        dir.create(plots, showWarnings = FALSE, mode = "0700")
        grDevices::png(sprintf("%s/%04d-%%04d.png", plots, count), type = "cairo")
    })
    show <- function() {
        while (grDevices::dev.cur() > 1L) grDevices::dev.off()
        for (page in sort(list.files(plots, "[.]png$", full.names = TRUE))) {
            data <- readBin(page, "raw", file.size(page))
            line <- sprintf('{"image/png": "%s", "text/plain": "<R plot>"}', base64(data))
            cat(line, "\n", file = shown, sep = "", append = TRUE)
            unlink(page)
        }
    }
    options(hazmat.displays = show)
    reg.finalizer(environment(), function(e) show(), onexit = TRUE)
}))
