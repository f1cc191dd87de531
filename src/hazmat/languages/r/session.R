# An R session's interpreter, kept between calls (languages/r/__init__.py: Repl). It unpacks
# each call's job itself (the agent's unpack script's default mode: a process costs 20-50 ms
# under gVisor). Each call's main.R is evaluated in the same workspace, its visible values
# printed as R's console would; an error ends the call (status 1) and not the session, and so
# do quit() (its status) and the agent's interrupt (status 130). A pause saves the workspace
# into the working directory (mode save) and its resume loads it (mode load), each reporting
# the names on stdout as a line of JSON (sessions/pausing.py).
local({
    Sys.unsetenv("R_HAZMAT_REPL")
    workdir <- getwd()
    saved <- file.path(workdir, ".hazmat-variables.RData")
    shown <- "/tmp/.hazmat-displays"
    # R's fd 0 is this file (the command empties and opens it): each call's stdin is written
    # where fd 0's offset is, which R cannot move back, and what a call leaves unread is read
    # away after it, so file("stdin") reads the call's own. What was read is a hole in the
    # file, taking no space in /tmp
    stdin <- "/tmp/.hazmat-r-stdin"
    options(warn = 1)  # a warning is printed as it happens: a call never returns to top level
    go <- fifo("/tmp/.hazmat-session/go", "r", blocking = TRUE)
    done <- fifo("/tmp/.hazmat-session/done", "w", blocking = TRUE)
    # what the program sees instead of base R's: its call's arguments, and a quit() that ends
    # the call (the session goes on)
    call_args <- character(0)
    own <- new.env()
    own$commandArgs <- function(trailingOnly = FALSE) {
        if (trailingOnly) call_args else c("R", "--no-echo", "--file=main.R", "--args", call_args)
    }
    own$quit <- own$q <- function(save = "default", status = 0, runLast = TRUE) {
        invokeRestart("hazmat_quit", status)
    }
    attach(own, name = "hazmat:session", warn.conflicts = FALSE)
    json <- function(names) {
        if (!length(names)) return("[]")
        names <- gsub("([\"\\\\])", "\\\\\\1", gsub("[[:cntrl:]]", "?", names))
        paste0("[", paste0("\"", names, "\"", collapse = ", "), "]")
    }
    # the call's env and args (/tmp/.hazmat-job.sh, shell as the host quoted it): read by a
    # shell only when there are any
    apply_job <- function() {
        job <- "/tmp/.hazmat-job.sh"
        call_args <<- character(0)
        lines <- if (file.exists(job)) readLines(job, warn = FALSE) else character(0)
        if (!length(lines) || identical(lines, "set -- ")) return()
        con <- pipe(paste(
            "exec sh -c '. /tmp/.hazmat-job.sh && printf \"%s\\0\" \"$#\" \"$@\" && env -0'"
        ), "rb")
        data <- raw(0)
        while (length(part <- readBin(con, "raw", 65536L))) data <- c(data, part)
        close(con)
        ends <- which(data == as.raw(0L))
        starts <- c(1L, ends[-length(ends)] + 1L)
        parts <- mapply(function(a, b) rawToChar(data[seq.int(a, length.out = b - a)]), starts, ends)
        n <- as.integer(parts[1L])
        call_args <<- parts[seq_len(n) + 1L]
        env <- parts[-seq_len(n + 1L)]
        env <- env[!grepl("^(PWD|OLDPWD|SHLVL|_)=", env)]  # the shell's own
        eq <- regexpr("=", env, fixed = TRUE)
        do.call(Sys.setenv, as.list(setNames(substring(env, eq + 1L), substring(env, 1L, eq - 1L))))
    }
    # R's console's words: a condition from the program's top level names no call
    top <- quote(eval(exprs[[i]], globalenv()))
    where <- function(cond) {
        call <- conditionCall(cond)
        if (is.null(call) || identical(call, top)) "" else
            paste0(" in ", deparse(call, nlines = 1L)[1L], " ")
    }
    failed <- function(e) {
        cat("Error", where(e), ": ", conditionMessage(e), "\n", file = stderr(), sep = "")
        1L
    }
    warned <- function(w) {
        cat("Warning", where(w), ": ", conditionMessage(w), "\n", file = stderr(), sep = "")
        invokeRestart("muffleWarning")
    }
    # the call's job (backends/agent/session_agent.py): the env and args in their two forms
    # (R reads the shell's), the input files (main.R first), and to the end the call's stdin,
    # written where R's fd 0 reads next
    unpack <- function() {
        job <- "/tmp/.hazmat-session/job"
        data <- readBin(job, "raw", file.size(job))
        ends <- which(data == as.raw(10L))
        pos <- 1L
        line <- function() {
            end <- ends[ends >= pos][1L]
            if (is.na(end)) stop("truncated job")
            text <- rawToChar(data[seq.int(pos, length.out = end - pos)])
            pos <<- end + 1L
            text
        }
        take <- function(n) {
            if (pos + n - 1L > length(data)) stop("truncated job")
            part <- data[seq.int(pos, length.out = n)]
            pos <<- pos + n
            part
        }
        sizes <- as.integer(strsplit(line(), " ", fixed = TRUE)[[1L]])
        take(sizes[1L])
        writeBin(take(sizes[2L]), "/tmp/.hazmat-job.sh")
        unlink(file.path(workdir, "main.R"))
        for (i in seq_len(as.integer(line()))) {
            head <- line()
            space <- regexpr(" ", head, fixed = TRUE)
            name <- file.path(workdir, substring(head, space + 1L))
            if (!dir.exists(dirname(name))) dir.create(dirname(name), recursive = TRUE)
            unlink(name)
            writeBin(take(as.integer(substr(head, 1L, space - 1L))), name)
        }
        if (pos <= length(data)) {
            # R's fd 0 is at the file's end (every call's stdin is read to it): the file is
            # emptied, which frees what was read, and the new stdin written from there on
            at <- file.size(stdin)
            con <- file(stdin, "wb")
            seek(con, at, rw = "write")
            writeBin(data[pos:length(data)], con)
            close(con)
        }
        0L
    }
    unpacked <- function() {
        tryCatch(unpack(), error = function(e) {
            cat("hazmat-agent: cannot unpack the call: ", conditionMessage(e), "\n",
                file = stderr(), sep = "")
            125L
        })
    }
    # main.R's expressions in the workspace, each visible value printed
    source_main <- function() {
        exprs <- parse(file.path(workdir, "main.R"), keep.source = FALSE)
        for (i in seq_along(exprs)) {
            result <- withCallingHandlers(
                withVisible(eval(exprs[[i]], globalenv())),
                warning = warned
            )
            if (result$visible) print(result$value)
        }
        0L
    }
    run <- function() {
        unlink(shown)
        apply_job()
        status <- tryCatch(
            withRestarts(source_main(), hazmat_quit = function(status) as.integer(status)),
            error = failed,
            interrupt = function(e) 130L
        )
        show <- getOption("hazmat.displays")
        if (is.function(show)) try(show(), silent = TRUE)
        con <- file("stdin", "rb")
        while (length(readBin(con, "raw", 65536L))) NULL
        close(con)
        status
    }
    step <- function(mode) {
        if (mode == "save") {
            names <- ls(globalenv(), all.names = TRUE)
            save(list = names, envir = globalenv(), file = saved)
            cat("{\"saved\": ", json(names), ", \"lost\": {}}\n", sep = "")
            return(0L)
        }
        if (mode == "load") {  # the agent has unpacked the paused session's files
            names <- if (file.exists(saved)) load(saved, envir = globalenv()) else character(0)
            unlink(saved)
            cat("{\"loaded\": ", json(names), "}\n", sep = "")
            return(0L)
        }
        status <- unpacked()
        if (status != 0L || mode != "run") return(status)
        run()
    }
    repeat {
        mode <- tryCatch(readLines(go, n = 1L), interrupt = function(e) NA)
        if (length(mode) == 0L) break
        if (is.na(mode)) next
        status <- tryCatch(step(mode), error = failed, interrupt = function(e) 130L)
        flush(stdout())
        flush(stderr())
        writeLines(as.character(status), done)
        flush(done)
    }
})
