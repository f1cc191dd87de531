/* The session agent (`hazmat-agent session`): what session.sh does, with the same protocol
 * (backends/agent/session_agent.py), in this one process. Each call is one job on stdin, kept
 * in the job file (the kept interpreter reads it there), unpacked by the agent itself as the
 * program (modes run, files, build), built, run and collected as for a single run; while a
 * call runs, the agent also reads the host's stop words from stdin (session.sh's watcher), so
 * no process of its own runs beside it. What needs a tool by its nature stays a process of the
 * program's: the kept interpreter, the warm runner, tar (a kept build's archive, a pause and a
 * resume), a kept build's cleaning between tests (session_unpack.sh's modes clean and again).
 * It is the end of the compiled agent's source, after agent.c (backends/agent/compiled.py),
 * whose parts it uses: the reader, start, unpack, start_program, collect and finish. */
#include <dirent.h>
#include <stdarg.h>

#define CHAN "/tmp/.hazmat-session"
#define JOB CHAN "/job"
#define STDIN_FILE "/tmp/.hazmat-stdin"

static char *s_workdir, *s_build, *s_run, *s_unpack, *s_repl, *s_replcode, *s_warmrun;
static char *s_runnercode, *s_heapmb, *s_replname, *s_isolate, *s_sources;
static char *iso_argv[16];          /* s_isolate's words, NULL-terminated */
static int s_warmplain, s_kept, s_replsig;
static pid_t repl_pid, warm_pid;    /* the kept interpreter, the next call's runner */
static int go_fd = -1, done_fd = -1, ready_fd = -1, warm_ready;
static int phase_run;               /* a call's own processes may run (not in a kept build's
                                       container): the host's stop words are read and act */
static int host_eof, host_unknown, host_next;  /* what the host said while the call ran */
static int cleaned, dirty;          /* a kept build's places emptied for the next test; or not */
static char word[64];               /* the host's word being read, across reads */
static size_t word_len;
static int word_long;

/* agent.c's shell(), its args given in place (NULL-terminated); under the kept build's
 * namespaces when `isolated` */
static pid_t sh(int isolated, int from, const char *dir, const char *script, ...) {
    char *args[24];
    int k = 0;
    va_list list;
    va_start(list, script);
    for (char *arg; k < 23 && (arg = va_arg(list, char *));) args[k++] = arg;
    va_end(list);
    args[k] = NULL;
    return shell(isolated ? iso_argv : NULL, from, dir, script, args);
}

/* a process's /proc stat line, or 0 */
static int stat_of(pid_t pid, char *line, size_t size) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    ssize_t n = read(fd, line, size - 1);
    close(fd);
    if (n <= 0) return 0;
    line[n] = 0;
    return 1;
}

/* whether a process whose stat says Z still runs: a process whose first thread has exited
 * shows Z while its other threads run on, and counts them (its thread count, the 18th field
 * after its name, is more than 1) */
static int still_runs(const char *fields) {
    for (int i = 1; i < 18 && fields; i++) {
        fields = strchr(fields, ' ');
        if (fields) fields++;
    }
    return fields && atoi(fields) > 1;
}

/* Every process but PID 1, this one and the two kept (the interpreter, the next call's
 * runner; 0: none), true zombies skipped (they wait for their parent); until none is left,
 * boundedly. */
static void sweep(pid_t keep1, pid_t keep2) {
    pid_t me = getpid();
    for (int n = 0; n < 1000; n++) {
        int left = 0;
        DIR *procs = opendir("/proc");
        if (!procs) return;
        for (struct dirent *e; (e = readdir(procs));) {
            if (!digits(e->d_name)) continue;
            pid_t p = (pid_t)atoi(e->d_name);
            char line[1024];
            if (p == 1 || p == me || p == keep1 || p == keep2 || !stat_of(p, line, sizeof line))
                continue;
            char *end = strrchr(line, ')');
            if (!end || !end[1]) continue;
            if (end[2] == 'Z' && !still_runs(end + 2)) continue;
            if (kill(p, SIGKILL) == 0) left = 1;
        }
        closedir(procs);
        if (!left) return;
    }
}

/* A word of the host's, while a call runs: `interrupt` once its time is up (or its caller
 * cancelled it): the kept interpreter is signalled, every other process of the call killed,
 * and the session goes on; `kill`, a grace period later: the interpreter too. After the call's
 * own processes have ended (a word that crossed its end) neither kills anything. */
static void stop(int hard) {
    if (!phase_run) return;
    if (hard) {
        sweep(0, 0);
    } else {
        if (repl_pid) kill(repl_pid, s_replsig);
        sweep(repl_pid, 0);
    }
}

enum { W_NONE, W_NEXT, W_UNKNOWN };

/* The host's words in stdin's buffer, stop words acted on: W_NEXT at `next`, W_UNKNOWN at a
 * word no call takes, W_NONE once the buffer is spent (a word cut short waits for the rest). */
static int host_words(void) {
    while (in.taken < in.have) {
        char c = in.buf[in.taken++];
        if (c != '\n') {
            if (word_len + 1 < sizeof word) word[word_len++] = c;
            else word_long = 1;
            continue;
        }
        word[word_len] = 0;
        int too_long = word_long;
        word_len = 0;
        word_long = 0;
        if (too_long) return W_UNKNOWN;
        if (strcmp(word, "next") == 0) return W_NEXT;
        if (strcmp(word, "interrupt") != 0 && strcmp(word, "kill") != 0) return W_UNKNOWN;
        stop(word[0] == 'k');
    }
    return W_NONE;
}

/* Wait until `pid` ends (its status), or (pid 0) until a line comes on `fd` (into `line`: 0;
 * -1 when `fd` ended first). While a call's own processes may run (outside a kept build) the
 * host's words are taken meanwhile (session.sh's watcher); before and after, stdin is not read. */
static int call_wait(pid_t pid, int fd, char *line, size_t size) {
    size_t len = 0;
    for (;;) {
        if (pid > 0) {
            int status;
            pid_t got = waitpid(pid, &status, WNOHANG);
            if (got == pid) return status_of(status);
            if (got < 0 && errno != EINTR) die("lost a process");
        }
        int watch = phase_run && !host_eof && !host_unknown && !host_next;
        if (watch) {
            int said = host_words();
            if (said == W_NEXT) host_next = 1;
            if (said == W_UNKNOWN) host_unknown = 1;
            if (said != W_NONE) continue;
        }
        struct pollfd fds[3] = {{sig_r, POLLIN, 0}, {watch ? 0 : -1, POLLIN, 0},
                                {pid > 0 ? -1 : fd, POLLIN, 0}};
        if (poll(fds, 3, -1) < 0 && errno != EINTR) die("cannot wait");
        if (fds[0].revents & POLLIN) drain_signals();
        if ((fds[1].revents & (POLLIN | POLLHUP | POLLERR)) && refill(&in) <= 0) host_eof = 1;
        if (fds[2].revents & (POLLIN | POLLHUP | POLLERR)) {
            char c;
            ssize_t n = read(fd, &c, 1);
            if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
            if (n <= 0 || c == '\n') {
                line[len] = 0;
                return n <= 0 ? -1 : 0;
            }
            if (len + 1 < size) line[len++] = c;
        }
    }
}

static int wait_for(pid_t pid) {
    return call_wait(pid, -1, NULL, 0);
}

/* a FIFO of the agent's with exactly `mode` (mkfifo's is masked by the umask) */
static int fifo(const char *path, mode_t mode) {
    return mkfifo(path, mode) == 0 && chmod(path, mode) == 0 ? 0 : -1;
}

/* the kept interpreter, as the program, in the working directory; it opens `go`, then `done`:
 * these opens wait until it has */
static void start_repl(void) {
    repl_pid = sh(0, -1, NULL, "cd \"$1\" || exit 125; unset OLDPWD; exec 2>&3 3>&-; eval \"$2\"",
                  "repl", s_workdir, s_repl, s_replcode, NULL);
    go_fd = open(CHAN "/go", O_WRONLY | O_CLOEXEC);
    done_fd = open(CHAN "/done", O_RDONLY | O_CLOEXEC);
    if (go_fd < 0 || done_fd < 0) die("cannot reach the interpreter");
}

/* One step of the kept interpreter (run, files, save, load); its status. If it has ended, the
 * status it ended with, and the next call starts a new one (its stderr says so). */
static int repl_call(const char *mode) {
    if (!repl_pid) start_repl();
    char text[32], status[32];
    int n = snprintf(text, sizeof text, "%s\n", mode);
    if (write(go_fd, text, (size_t)n) == n && call_wait(0, done_fd, status, sizeof status) == 0)
        return digits(status) && strlen(status) <= 3 ? atoi(status) : 1;
    kill(repl_pid, SIGKILL);
    int rc = wait_for(repl_pid);
    repl_pid = 0;
    close(go_fd);
    close(done_fd);
    go_fd = done_fd = -1;
    char note[256];
    n = snprintf(note, sizeof note,
                 "\nhazmat: the %s ended (status %d); the next call starts a new one, without "
                 "the variables\n", s_replname, rc);
    say(2, note, (size_t)n);
    return rc;
}

/* The next call's runner (backends/agent/runners.py), started as the program now, so that a
 * call need not wait for the interpreter: it says it is ready on a FIFO of the agent's, reads
 * the call's stdin from the file the unpack writes, and runs the call's program when signalled
 * (in a kept build's container, in the test's own namespaces under gVisor). A "plain" runner
 * (Java's) takes nothing from the environment and goes on a line on the FIFO start. */
static void start_warm(void) {
    if (!*s_warmrun) return;
    unlink(CHAN "/ready");
    unlink(CHAN "/start");
    if (fifo(CHAN "/ready", 0622) != 0) return;
    if (s_warmplain && fifo(CHAN "/start", 0666) != 0) return;
    if (!s_warmplain) {
        setenv("HAZMAT_RUNNER", s_runnercode, 1);
        setenv("HAZMAT_HEAP_MB", s_heapmb, 1);
        setenv("HAZMAT_READY_FD", "4", 1);
        setenv("HAZMAT_STDIN_FILE", STDIN_FILE, 1);
    }
    /* a kept build's test reads its stdin from the file its job's stdin is written into
     * (truncated and written in place by session_unpack.sh): made now and opened as fd 0 */
    warm_pid = sh(*s_isolate != 0, -1, NULL,
                  "cd \"$1\" || exit 125\n"
                  "if [ -n \"$4\" ]; then : >" STDIN_FILE " && exec <" STDIN_FILE " || exit 125\n"
                  "fi\n"
                  "exec 2>&3 3>&- 4>\"$2\"; eval \"$3\"",
                  "warm", s_workdir, CHAN "/ready", s_warmrun, s_kept ? "1" : "", NULL);
    drop_hazmat_variables();
    warm_ready = 0;
    ready_fd = open(CHAN "/ready", O_RDONLY | O_CLOEXEC); /* waits until the runner opens it */
    if (ready_fd < 0) die("cannot reach the runner");
}

/* whether the warm runner is there and has said it is ready (waiting for it if it is still
 * starting); a runner that ends or says anything else is gone */
static int warm_wait(void) {
    if (!warm_pid) return 0;
    if (warm_ready) return 1;
    char line[64];
    int got = call_wait(0, ready_fd, line, sizeof line);
    close(ready_fd);
    ready_fd = -1;
    if (got == 0 && strcmp(line, "hazmat-ready") == 0) return warm_ready = 1;
    kill(warm_pid, SIGKILL);
    wait_for(warm_pid);
    warm_pid = 0;
    return 0;
}

/* the warm runner, if it is there and ready: signalled, it runs the call; its status in `rc` */
static int warm_call(int *rc) {
    if (!warm_wait()) return 0;
    warm_ready = 0;
    int status;
    if (waitpid(warm_pid, &status, WNOHANG) == warm_pid) { /* it ended while it waited */
        warm_pid = 0;
        return 0;
    }
    if (s_warmplain) {
        /* read and write: the open does not wait, nor hang if the runner has died */
        int fd = open(CHAN "/start", O_RDWR | O_CLOEXEC);
        int sent = fd >= 0 && write(fd, "go\n", 3) == 3;
        if (fd >= 0) close(fd);
        if (!sent) {
            warm_pid = 0;
            return 0;
        }
    } else if (kill(warm_pid, SIGUSR2) != 0) {
        warm_pid = 0;
        return 0;
    }
    *rc = wait_for(warm_pid);
    warm_pid = 0;
    return 1;
}

/* session_unpack.sh as the program, in a mode of its own (restore, again, clean), the job on
 * its stdin (-1: none) */
static int unpack_script(const char *mode, int job) {
    return wait_for(sh(0, job, NULL, s_unpack, "unpack", s_workdir, mode, s_isolate, NULL));
}

/* a file of the program's, opened as it (a link it left is not followed) */
static int open_as_program(const char *path) {
    as_program(1);
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    as_program(0);
    return fd;
}

/* the program's run command with the call's stdin (the file the unpack wrote) */
static int run_staged(int isolated) {
    int from = open_as_program(STDIN_FILE);
    if (from < 0) {
        say(2, "hazmat-agent: no stdin for the program\n", 39);
        return 125;
    }
    int rc = wait_for(start_program(s_workdir, s_run, from, isolated ? iso_argv : NULL));
    close(from);
    return rc;
}

/* A kept build's next test: once the last test's processes are gone, every place the program
 * may write is emptied (as the program's uid: session_unpack.sh's mode clean) before anything
 * of the next test starts, its runner included; if that fails the container is done (dirty). */
static void clean_for_next(void) {
    if (unpack_script("clean", -1) == 0) cleaned = 1;
    else dirty = 1;
}

/* a kept build: every process but PID 1 and this one killed at once; then wait until the
 * kernel has ended them all (reaping this one's own); 0 if one will not go */
static int end_all(void) {
    kill(-1, SIGKILL);
    for (int n = 0; kill(-1, 0) == 0; n++) {
        while (waitpid(-1, NULL, WNOHANG) > 0) {}
        if (n >= 100000) return 0;
    }
    return 1;
}

/* A kept build's test (mode again): the places emptied and its runner started (both done
 * ahead, after the last test, unless this is the container's first), its files unpacked once
 * the runner is ready (nothing of the job is there while it starts), then the built marker:
 * the host starts the test's clock (and gives it a CPU) when it reads it, and says go. The
 * test is the runner, signalled, or without one the run command in a fresh process. */
static int run_again(int *unclean) {
    if (!cleaned) clean_for_next();
    cleaned = 0;
    if (dirty) {
        *unclean = 1;
        return 126;
    }
    if (!warm_pid) start_warm();
    warm_wait();
    int job = open(JOB, O_RDONLY | O_CLOEXEC);
    int rc = unpack_script("again", job);
    if (job >= 0) close(job);
    if (rc != 0) return rc;
    if (s_warmplain && warm_pid) {
        /* a test with variables of its own (exported first in the job's shell form): the plain
         * runner cannot take them, so it goes, before the test's clock starts */
        char vars[8] = {0};
        int fd = open_as_program("/tmp/.hazmat-job.sh");
        if (fd >= 0 && read(fd, vars, 7) == 7 && strcmp(vars, "export ") == 0) {
            kill(warm_pid, SIGKILL);
            wait_for(warm_pid);
            warm_pid = 0;
        }
        if (fd >= 0) close(fd);
    }
    int n = snprintf(marker, sizeof marker, "--hazmat-built-%s-- 0\n", nonce);
    say(1, marker, (size_t)n);
    char go[16];
    if (!read_line(&in, go, sizeof go) || strcmp(go, "go") != 0) die("no go-ahead for the test");
    if (warm_call(&rc)) return rc;
    return run_staged(1);
}

/* a call's mode run, files or build: unpacked by the agent, built, archived, run */
static int run_call(const char *mode) {
    int is_run = strcmp(mode, "run") == 0, is_build = strcmp(mode, "build") == 0;
    static struct reader job;
    job.have = job.taken = 0;
    if ((job.fd = open(JOB, O_RDONLY | O_CLOEXEC)) < 0) die("cannot read the job");
    int rc = unpack(&job, s_workdir, 0, s_sources);
    close(job.fd);
    if (rc == 0 && (is_run || is_build) && *s_build) {
        rc = wait_for(sh(0, -1, s_workdir, "exec 3>&-; eval \"$1\"", "build", s_build, NULL));
        int n = snprintf(marker, sizeof marker, "--hazmat-built-%s-- %d\n", nonce, rc);
        say(1, marker, (size_t)n);
    }
    if (rc == 0 && is_build) {
        /* the build, for the host to keep and send with each test (mode again): the working
         * directory and the build folder */
        rc = wait_for(sh(0, -1, NULL,
                         "cd / && w=${1#/} && set -- \"$w\" && if [ -d tmp/.hazmat-build ]; then\n"
                         "set -- \"$w\" tmp/.hazmat-build; fi && exec tar -cf "
                         "\"$w/.hazmat-build.tar\" --exclude=\"$w/.hazmat-build.tar\" \"$@\"",
                         "archive", s_workdir, NULL));
    }
    if (rc == 0 && is_run && !warm_call(&rc)) rc = run_staged(0);
    return rc;
}

/* after a call (outside a kept build): the host's `next`, once it has taken the call's last
 * readings (its CPU time and peak memory), which what follows must not add to; stop words
 * that crossed the call's end are dropped; the end of the stream ends the session */
static void wait_next(void) {
    if (host_unknown) die("unknown job format");
    if (host_next) return;
    for (;;) {
        int said = host_words();
        if (said == W_NEXT) return;
        if (said == W_UNKNOWN) die("unknown job format");
        if (host_eof || refill(&in) <= 0) exit(0);
    }
}

static int signal_named(const char *name) {
    const struct { const char *name; int number; } known[] = {
        {"INT", SIGINT}, {"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"TERM", SIGTERM},
        {"HUP", SIGHUP}, {"QUIT", SIGQUIT}};
    for (size_t i = 0; i < sizeof known / sizeof *known; i++)
        if (strcmp(name, known[i].name) == 0) return known[i].number;
    die("unknown signal for the interpreter");
    return 0;
}

static int session(void) {
    umask(022);
    s_workdir = strdup(need("HAZMAT_WORKDIR"));
    s_build = strdup(need("HAZMAT_BUILD"));
    s_run = strdup(need("HAZMAT_RUN"));
    s_unpack = strdup(need("HAZMAT_UNPACK_SCRIPT"));
    s_sources = strdup(need("HAZMAT_SOURCES"));
    s_repl = strdup(need("HAZMAT_REPL"));
    s_replcode = strdup(need("HAZMAT_REPL_CODE"));
    s_replname = strdup(*need("HAZMAT_REPL_NAME") ? need("HAZMAT_REPL_NAME") : "interpreter");
    s_replsig = signal_named(*need("HAZMAT_REPL_SIGNAL") ? need("HAZMAT_REPL_SIGNAL") : "INT");
    /* JavaScript and TypeScript: the next call's node, started and waiting before the call;
     * in a kept build's container, every language with a runner */
    s_warmrun = strdup(need("HAZMAT_SESSION_WARM"));
    s_warmplain = *need("HAZMAT_WARM_PLAIN") != 0;
    s_runnercode = strdup(need("HAZMAT_RUNNER"));
    s_heapmb = strdup(need("HAZMAT_HEAP_MB"));
    /* a kept build's container (backends/kept/kept_build.py): between calls nothing runs but
     * PID 1, the agent and the next test's runner, started after the last test's processes
     * were all ended and its places emptied; under gVisor each test runs in a user, IPC and
     * network namespace of its own (`isolate`), which end with its processes */
    s_kept = *need("HAZMAT_KEPT_BUILD") != 0;
    s_isolate = strdup(need("HAZMAT_ISOLATE"));
    char *words = strdup(s_isolate);
    int k = 0;
    for (char *w = strtok(words, " "); w && k < 15; w = strtok(NULL, " ")) iso_argv[k++] = w;
    iso_argv[k] = NULL;
    char *setup = strdup(need("HAZMAT_PREPARE"));
    if (s_kept) {
        char *argv[] = {"test", "-w", s_workdir, NULL};
        if (wait_for(start(argv, -1, NULL, 1, 1)) != 0) {
            char why[512];
            snprintf(why, sizeof why, "the program cannot write %s: a kept build needs it mode "
                     "1777 in the image (hazmat images build)", s_workdir);
            die(why);
        }
    }
    /* root's folder (the program may read it, not change it): each call's job, and the FIFOs
     * to the interpreter kept between calls */
    if (mkdir(CHAN, 0755) != 0) die("cannot make the session's folder");
    if (*s_repl && (fifo(CHAN "/go", 0644) != 0 || fifo(CHAN "/done", 0622) != 0))
        die("cannot make the interpreter's channels");
    if (*setup) {
        char *argv[] = {"/bin/sh", "-c", "cd /tmp && eval \"$1\"", "prepare", setup, NULL};
        wait_for(start(argv, -1, NULL, 1, 1));
    }
    if (*s_repl) start_repl();
    drop_hazmat_variables();
    unsetenv("OLDPWD");
    if (!s_kept) start_warm(); /* a kept build's, once its build is done (run_again) */
    say(1, "hazmat-ready\n", 13);
    for (;;) {
        char line[MAX_LINE], magic[32], version[16], nwant_text[32], size_text[32], mode[16];
        char maxfile[32], maxtotal[32], maxown[32];
        if (!read_line(&in, line, sizeof line)) return 0;
        if (sscanf(line, "%31s %15s %31s %31s %4095s %31s %15s %31s %31s", magic, version,
                   nwant_text, maxfile, nonce, size_text, mode, maxtotal, maxown) != 9 ||
            strcmp(magic, "hazmat-session") != 0 || strcmp(version, "5") != 0 ||
            !digits(nwant_text) || strlen(nwant_text) > 6)
            die("unknown job format");
        unsigned long long size;
        if (!number(size_text, &size)) die("unknown job format");
        long nwant = strtol(nwant_text, NULL, 10);
        int callers = 0;
        char *wants = read_wants(nwant, &callers);
        /* the rest of the job, whatever happens next, so the stream stays in step */
        int kept = open(JOB, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (kept < 0 || take(&in, kept, size) != NULL) die("cannot keep the job");
        close(kept);
        int rc = 0, unclean = 0;
        if (!s_kept) {
            if (*s_repl && !repl_pid) start_repl();
            phase_run = 1;
            host_next = 0;
        }
        int restore = strcmp(mode, "restore") == 0;
        if (*s_repl && !restore) {
            /* the interpreter unpacks the job itself and (mode run) runs it; a pause saves its
             * variables into the working directory first (mode save) */
            rc = repl_call(mode);
        } else if (strcmp(mode, "again") == 0) {
            rc = run_again(&unclean);
        } else if (restore) {
            int job = open(JOB, O_RDONLY | O_CLOEXEC);
            rc = unpack_script("restore", job);
            if (job >= 0) close(job);
        } else if (strcmp(mode, "save") != 0) {
            rc = run_call(mode);
        }
        if (unclean) {
            /* what the last test left cannot be removed here: the host moves this test to a
             * new container (only the agent knows the nonce: the program did not run) */
            int n = snprintf(marker, sizeof marker, "--hazmat-unclean-%s--\n", nonce);
            say(1, marker, (size_t)n);
        }
        if (rc == 0 && strcmp(mode, "save") == 0)
            rc = wait_for(sh(0, -1, NULL,
                             "tar -cf /tmp/.hazmat-save.tar -C \"$1\" . &&"
                             " exec rm -f -- \"$1/.hazmat-variables\"",
                             "save", s_workdir, NULL));
        if (rc == 0 && restore && *s_repl) rc = repl_call("load");
        if (truncate(JOB, 0) != 0) die("cannot empty the job");
        if (!s_kept) {
            sweep(repl_pid, warm_pid);
            phase_run = 0;
        } else {
            if (!end_all()) dirty = 1;
            warm_pid = 0; /* ended with the rest */
            warm_ready = 0;
            if (ready_fd >= 0) close(ready_fd);
            ready_fd = -1;
        }
        finish(s_workdir, wants, nwant, callers, maxfile, maxtotal, maxown, rc);
        free(wants);
        if (!s_kept) {
            wait_next();
            /* the save's archive, taken by the host: the session may go on (a fork) */
            if (strcmp(mode, "save") == 0)
                wait_for(sh(0, -1, NULL, "exec rm -f /tmp/.hazmat-save.tar", "unsave", NULL));
            if (!warm_pid) start_warm();
        } else {
            char next[16];
            if (!read_line(&in, next, sizeof next)) return 0;
            if (strcmp(next, "next") != 0) die("unknown job format");
            if (strcmp(mode, "again") == 0 && !dirty) {
                /* the next test's places emptied and its runner started now, before its job */
                clean_for_next();
                if (!dirty) start_warm();
            }
        }
    }
}
