/* The single-run agent as one compiled process: what prologue.sh, agent.sh, stage.sh and
 * collect.sh do, in the same order and with the same protocol (backends/agent/single.py),
 * with no shell or helper process of its own on a run's path (backends/agent/compiled.py
 * builds it and says when it is used). `hazmat-agent session` is the session agent, what
 * session.sh does (agent_session.c, put after this file, over the same parts).
 *
 * Where it differs from the shell agent, only in how:
 *   - the job is read from stdin in large reads, not a byte at a time (a shell cannot read a
 *     line without reading past it; under gVisor each read is a system call of 25-45 us), and
 *     what follows the agent's part is passed on to the program's stdin, a pipe the agent
 *     holds from the start (the runner's, and the run command's);
 *   - the program's uid is taken here (no setpriv), the way setpriv takes it: the bounding set
 *     and the inheritable and ambient sets emptied, no supplementary group, then the uid and
 *     gid, which clears the permitted and effective sets;
 *   - the input files are written by the agent itself, with the program's uid and gid as its
 *     effective ones (so the files are the program's, and it can write nothing the program
 *     could not), before anything of the program's has run: no `head` per file, no shell;
 *   - the output files are read by a fork of the agent that has taken the program's uid for
 *     good and forgotten the nonce, once nothing of the program's runs: no `wc` and `head`
 *     per file, no shell; a file it cannot open is `missing`, and one that shrank is padded,
 *     so the records stay whole.
 * What is a shell command by its nature is still run by /bin/sh, as the program's: the
 * language's setup and build step, its runner's start, and its run command (with the env and
 * args the host quoted), the shell replacing itself with the program (`exec`). The allowlist
 * relay is socat, started as agent.sh starts it. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define RELAY_LISTENING " 0100007F:@RELAY_HEX@ 00000000:0000 0A"
#define RELAY_PORT "@RELAY_PORT@"
#define MAX_LINE 4096
#define BUF (64 * 1024)

extern char **environ;

static unsigned uid;
static int sig_r = -1, sig_w = -1;  /* SIGCHLD, as a byte on a pipe */
static int feed = -1;               /* the program's stdin: the write end the agent holds */
static int program_in_fd = -1;      /* and its read end, the program's fd 0 */
static int job_fd = -1;             /* the run command's env and args: its fd 4 */
static int stdin_eof, feed_broken;
/* what is read from a file (stdin, or a session's job file) and not yet taken or passed on */
struct reader {
    int fd;
    char buf[BUF];
    size_t have, taken;
};
static struct reader in;            /* stdin */

/* more of `r`'s file into its spent buffer: the bytes read, 0 at its end, -1 on an error */
static ssize_t refill(struct reader *r) {
    for (;;) {
        ssize_t n = read(r->fd, r->buf, BUF);
        if (n < 0 && errno == EINTR) continue;
        if (n > 0) {
            r->have = (size_t)n;
            r->taken = 0;
        }
        return n;
    }
}
/* what carries the nonce, wiped in the fork that reads the program's files */
static char job_line[MAX_LINE], nonce[MAX_LINE], marker[MAX_LINE + 64];
static char file_buf[BUF];          /* an output file's bytes, read in the collecting fork */

static void say(int fd, const char *text, size_t len) {
    while (len > 0) {
        ssize_t n = write(fd, text, len);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return;
        text += n;
        len -= (size_t)n;
    }
}

static void die(const char *why) {
    char line[512];
    int n = snprintf(line, sizeof line, "hazmat-agent: %s\n", why);
    say(2, line, (size_t)n);
    _exit(125);
}

static const char *need(const char *name) {
    const char *value = getenv(name);
    return value ? value : "";
}

/* setpriv --reuid --regid --clear-groups --inh-caps=-all --bounding-set=-all */
static void drop(void) {
    for (int cap = 0; cap < 64; cap++)
        if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno == EINVAL) break;
    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
    struct __user_cap_header_struct head = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct data[2];
    if (syscall(SYS_capget, &head, data) != 0) _exit(125);
    data[0].inheritable = data[1].inheritable = 0;
    if (syscall(SYS_capset, &head, data) != 0) _exit(125);
    if (setgroups(0, NULL) != 0 || setresgid(uid, uid, uid) != 0 ||
        setresuid(uid, uid, uid) != 0)
        _exit(125);
}

static void on_child(int sig) {
    (void)sig;
    int saved = errno;
    if (write(sig_w, "c", 1) < 0) { /* the pipe is full: a wake-up is pending anyway */ }
    errno = saved;
}

/* fd 0 from `in` (-1: /dev/null), fd 1 /dev/null when `quiet`, fd 2 /dev/null when `mute`;
 * fd 3 the program's stderr, as the shell agent leaves it to the scripts it starts */
static void wire(int in, int quiet, int mute) {
    int null = open("/dev/null", O_RDWR);
    if (null < 0 || dup2(2, 3) < 0) _exit(125);
    if (dup2(in >= 0 ? in : null, 0) < 0) _exit(125);
    if (quiet && dup2(null, 1) < 0) _exit(125);
    if (mute && dup2(null, 2) < 0) _exit(125);
    if (null > 2) close(null);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGCHLD, SIG_DFL);
    signal(SIGPIPE, SIG_DFL);
}

/* a process of the program's: its uid, `argv` (found on PATH) run in `dir` (NULL: /) with fd 0
 * from `from` */
static pid_t start(char *const argv[], int from, const char *dir, int quiet, int mute) {
    pid_t pid = fork();
    if (pid < 0) die("cannot start a process");
    if (pid == 0) {
        wire(from, quiet, mute);
        if (job_fd >= 0 && dup2(job_fd, 4) < 0) _exit(125);
        drop();
        if (dir && chdir(dir) != 0) {
            say(3, "hazmat-agent: no working directory\n", 35);
            _exit(125);
        }
        execvp(argv[0], argv);
        _exit(127);
    }
    return pid;
}

static int status_of(int status) {
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* the SIGCHLD bytes on the pipe, read (the wake-up is taken) */
static void drain_signals(void) {
    char drain[64];
    while (read(sig_r, drain, sizeof drain) > 0) {}
}

/* Pass what stdin brings on to the program's stdin until `pid` has ended; its status. */
static int relay_until(pid_t pid) {
    for (;;) {
        int status;
        pid_t got = waitpid(pid, &status, WNOHANG);
        if (got == pid) return status_of(status);
        if (got < 0 && errno != EINTR) die("lost a process");
        struct pollfd fds[3] = {{sig_r, POLLIN, 0}, {-1, POLLIN, 0}, {-1, POLLOUT, 0}};
        if (in.taken < in.have && !feed_broken) fds[2].fd = feed;
        else if (!stdin_eof && !feed_broken) fds[1].fd = 0;
        if (poll(fds, 3, -1) < 0 && errno != EINTR) die("cannot wait");
        if (fds[0].revents & POLLIN) drain_signals();
        if ((fds[1].revents & (POLLIN | POLLHUP | POLLERR)) && refill(&in) <= 0) {
            stdin_eof = 1;
            close(feed);
            feed = -1;
        }
        if (fds[2].revents & (POLLOUT | POLLERR | POLLHUP)) {
            ssize_t n = write(feed, in.buf + in.taken, in.have - in.taken);
            if (n > 0) {
                in.taken += (size_t)n;
            } else if (n < 0 && errno == EPIPE) {
                feed_broken = 1;  /* nothing reads the program's stdin any more */
            }
        }
    }
}

/* One line of the job from `r` (stdin: the agent's own part), read in large reads: what comes
 * after the line stays in the buffer, for the next line or for the program's stdin
 * (relay_until passes it on first). */
static int read_line(struct reader *r, char *line, size_t size) {
    size_t len = 0;
    for (;;) {
        while (r->taken < r->have) {
            char c = r->buf[r->taken++];
            if (c == '\n') {
                line[len] = 0;
                return 1;
            }
            if (len + 1 >= size) die("unknown job format");
            line[len++] = c;
        }
        if (refill(r) <= 0) return 0;
    }
}

static int digits(const char *text) {
    if (!*text) return 0;
    for (; *text; text++)
        if (*text < '0' || *text > '9') return 0;
    return 1;
}

static int on_path(const char *name) {
    char path[4096];
    const char *dirs = need("PATH");
    while (*dirs) {
        size_t len = strcspn(dirs, ":");
        snprintf(path, sizeof path, "%.*s/%s", (int)len, dirs, name);
        if (access(path, X_OK) == 0) return 1;
        dirs += len + (dirs[len] == ':');
    }
    return 0;
}

static int relay_listening(void) {
    char text[65536];
    int fd = open("/proc/net/tcp", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    ssize_t n = read(fd, text, sizeof text - 1);
    close(fd);
    if (n <= 0) return 0;
    text[n] = 0;
    return strstr(text, RELAY_LISTENING) != NULL;
}

static void drop_hazmat_variables(void) {
    for (;;) {
        char **env = environ;
        while (*env && strncmp(*env, "HAZMAT_", 7) != 0) env++;
        if (!*env) return;
        char name[256];
        size_t len = strcspn(*env, "=");
        if (len >= sizeof name) len = sizeof name - 1;
        memcpy(name, *env, len);
        name[len] = 0;
        unsetenv(name);
    }
}

/* The program's gid and uid as the agent's effective ones (`on`), or root's again: the kernel
 * empties the effective capabilities while the uid is the program's and gives them back after,
 * from the permitted set, which stays. */
static void as_program(int on) {
    int fine = on ? setresgid(-1, uid, -1) == 0 && setresuid(-1, uid, -1) == 0
                  : setresuid(-1, 0, -1) == 0 && setresgid(-1, 0, -1) == 0;
    if (!fine) die("cannot change the effective uid");
}

/* `len` bytes of the job from `r`, written to `fd` (-1: read and dropped): what was read
 * already, then the file (`len` ALL: to its end). NULL once all are written, or why not. */
#define ALL (~0ULL)
static const char *take(struct reader *r, int fd, unsigned long long len) {
    while (len > 0) {
        if (r->taken == r->have) {
            ssize_t n = refill(r);
            if (n == 0 && len == ALL) return NULL;
            if (n <= 0) return "truncated job";
        }
        size_t part = r->have - r->taken < len ? r->have - r->taken : (size_t)len;
        for (size_t done = 0; fd >= 0 && done < part;) {
            ssize_t n = write(fd, r->buf + r->taken + done, part - done);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) return "cannot write input file";
            done += (size_t)n;
        }
        r->taken += part;
        if (len != ALL) len -= part;
    }
    return NULL;
}

enum { PUT_FOLDERS = 1, PUT_REPLACE = 2 };

/* `len` bytes of the job from `r` into the file `name` under `dir` (made, or emptied), or
 * dropped when `name` is NULL; `how`: PUT_FOLDERS makes its folders, PUT_REPLACE removes what
 * is there first (a link the program left is replaced, not followed). NULL, or why not. */
static const char *put(struct reader *r, int dir, const char *name, unsigned long long len,
                       int how) {
    int fd = -1;
    if (name) {
        char path[MAX_LINE];
        snprintf(path, sizeof path, "%s", name);
        for (char *slash = path; (how & PUT_FOLDERS) && (slash = strchr(slash + 1, '/'));) {
            *slash = 0;
            if (mkdirat(dir, path, 0777) != 0 && errno != EEXIST) return "cannot make a folder";
            *slash = '/';
        }
        if (how & PUT_REPLACE) unlinkat(dir, name, 0);
        fd = openat(dir, name, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0666);
        if (fd < 0) return "cannot write input file";
    }
    const char *why = take(r, fd, len);
    if (fd >= 0) close(fd);
    return why;
}

/* a size or count of the job: 1 to 15 ASCII digits */
static int number(const char *text, unsigned long long *value) {
    if (!digits(text) || strlen(text) > 15) return 0;
    *value = strtoull(text, NULL, 10);
    return 1;
}

/* The program's part of the job (single.py's format, from `<json_size> <sh_size>` on) from `r`
 * into the working directory, written as the program before anything of the program's has run:
 * its env and args for the runner (JSON) or the run command (shell), and the input files, their
 * folders made. A session's call (`sources`: the language's source files, which an earlier
 * call's may not outlive) writes both forms, and the rest of the job, the program's stdin, into
 * /tmp/.hazmat-stdin, as session_unpack.sh does. 0, or 125 with the reason on the program's
 * stderr, as the stage script says it. */
static int unpack(struct reader *r, const char *workdir, int runner, const char *sources) {
    as_program(1);
    const char *why = NULL;
    char line[MAX_LINE], *space;
    unsigned long long json_size, sh_size, nfiles, size;
    int dir = open(workdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (sources) {
        unlink("/tmp/.hazmat-job.json");
        unlink("/tmp/.hazmat-job.sh");
        unlink("/tmp/.hazmat-stdin");
        char names[MAX_LINE];
        snprintf(names, sizeof names, "%s", sources);
        for (char *name = strtok(names, " "); dir >= 0 && name; name = strtok(NULL, " "))
            unlinkat(dir, name, 0);
    }
    if (dir < 0) why = "no working directory";
    else if (!read_line(r, line, sizeof line)) why = "truncated job";
    else if (!(space = strchr(line, ' ')) || (*space = 0, !number(line, &json_size)) ||
             !number(space + 1, &sh_size))
        die("unknown job format");
    else if (!(why = put(r, AT_FDCWD, runner || sources ? "/tmp/.hazmat-job.json" : NULL,
                         json_size, 0)) &&
             !(why = put(r, AT_FDCWD, runner && !sources ? NULL : "/tmp/.hazmat-job.sh",
                         sh_size, 0))) {
        if (!read_line(r, line, sizeof line)) why = "truncated job";
        else if (!number(line, &nfiles)) die("unknown job format");
        for (unsigned long long i = 0; !why && i < nfiles; i++) {
            if (!read_line(r, line, sizeof line)) why = "truncated job";
            else if (!(space = strchr(line, ' ')) || (*space = 0, !number(line, &size)))
                die("unknown job format");
            else why = put(r, dir, space + 1, size, PUT_FOLDERS | PUT_REPLACE);
        }
        if (!why && sources) why = put(r, AT_FDCWD, "/tmp/.hazmat-stdin", ALL, 0);
    }
    if (dir >= 0) close(dir);
    as_program(0);
    if (!why) return 0;
    /* as stage.sh: what is left of the job stays unread, and the program does not run */
    char text[128];
    int n = snprintf(text, sizeof text, "hazmat-agent: %s\n", why);
    say(2, text, (size_t)n);
    return 125;
}

/* /bin/sh -c `script` with $0 and its args (`args`, NULL-terminated) under `prefix` (NULL, or
 * NULL-terminated words: a kept build's test's namespaces under gVisor), as the program, fd 0
 * from `from` (-1: /dev/null), in `dir` (NULL: /) */
static pid_t shell(char *const *prefix, int from, const char *dir, const char *script,
                   char *const *args) {
    char *argv[40];
    int k = 0;
    for (int i = 0; prefix && prefix[i] && k < 16; i++) argv[k++] = prefix[i];
    argv[k++] = "/bin/sh";
    argv[k++] = "-c";
    argv[k++] = (char *)script;
    for (int i = 0; args[i] && k < 39; i++) argv[k++] = args[i];
    argv[k] = NULL;
    return start(argv, from, dir, 0, 0);
}

/* The program's run command, as stage.sh runs it: its env and args (quoted by the host, in
 * /tmp/.hazmat-job.sh) sourced from fd 4, the file gone before the program starts, then `run`
 * with the args; the shell replaces itself with the program. Its stdin from `from`; under
 * `prefix` (NULL-terminated words: a kept build's test's namespaces under gVisor) if any. */
static pid_t start_program(const char *workdir, char *run, int from, char *const *prefix) {
    as_program(1); /* the file is the program's, in /tmp (sticky) */
    job_fd = open("/tmp/.hazmat-job.sh", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (job_fd >= 0) unlink("/tmp/.hazmat-job.sh");
    as_program(0);
    char *args[] = {"run", run, job_fd >= 0 ? "1" : "", NULL};
    pid_t pid = shell(prefix, from, workdir,
                      "exec 3>&-; run=$1 job=$2; set --\n"
                      "if [ -n \"$job\" ]; then . /proc/self/fd/4; exec 4<&-; fi\n"
                      "eval \"$run \\\"\\$@\\\"\"",
                      args);
    if (job_fd >= 0) close(job_fd);
    job_fd = -1;
    return pid;
}

/* The output files' records (collect.sh's), written by a fork of the agent that has taken the
 * program's uid for good and forgotten the nonce, in the working directory, once nothing of
 * the program's runs. A name that is not a regular file there (or cannot be opened) is
 * `missing`; a file read short is padded, so that the records stay whole. */
static void collect(const char *workdir, char *wants, const char *maxfile,
                    const char *maxtotal, const char *maxown) {
    pid_t pid = fork();
    if (pid < 0) die("cannot start a process");
    if (pid > 0) {
        int status;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
        return;
    }
    explicit_bzero(job_line, sizeof job_line);
    explicit_bzero(nonce, sizeof nonce);
    explicit_bzero(marker, sizeof marker);
    explicit_bzero(in.buf, sizeof in.buf);
    signal(SIGCHLD, SIG_DFL);
    drop();
    unsigned long long cap_file, total_cap, cap_own, total = 0;
    if (!number(maxfile, &cap_file) || !number(maxtotal, &total_cap) || !number(maxown, &cap_own) ||
        chdir(workdir) != 0)
        _exit(125);
    for (char *name = wants, *end; *name; name = end + 1) {
        end = strchr(name, '\n');
        *end = 0;
        int own = name[0] == '/';
        unsigned long long cap = own ? cap_own : cap_file;
        struct stat st;
        int fd = -1;
        if (lstat(name, &st) == 0 && S_ISREG(st.st_mode))
            fd = open(name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))) {
            close(fd);
            fd = -1;
        }
        char head[MAX_LINE + 64];
        unsigned long long size = fd >= 0 ? (unsigned long long)st.st_size : 0;
        const char *kind = fd < 0                               ? "missing"
                           : size > cap                         ? "too_large"
                           : !own && total + size > total_cap ? "over_total"
                                                                : "file";
        int n = snprintf(head, sizeof head, "%s %llu %s\n", kind, size, name);
        say(1, head, (size_t)n);
        if (strcmp(kind, "file") == 0) {
            if (!own) total += size;
            for (unsigned long long left = size; left > 0;) {
                ssize_t got = read(fd, file_buf, left < BUF ? (size_t)left : BUF);
                if (got < 0 && errno == EINTR) continue;
                if (got <= 0) { /* read short: the rest as zeros */
                    memset(file_buf, 0, BUF);
                    got = (ssize_t)(left < BUF ? left : BUF);
                }
                say(1, file_buf, (size_t)got);
                left -= (unsigned long long)got;
            }
        }
        if (fd >= 0) close(fd);
    }
    _exit(0);
}

/* The names of the output files the caller asked for, `nwant` lines of the job, one per line;
 * `callers` set when one is the caller's (not an absolute name: hazmat's own). */
static char *read_wants(long nwant, int *callers) {
    size_t wants_len = 0, wants_size = 1;
    char *wants = calloc(1, 1);
    if (!wants) die("out of memory");
    for (long i = 0; i < nwant; i++) {
        char name[MAX_LINE];
        if (!read_line(&in, name, sizeof name)) die("truncated job");
        size_t len = strlen(name);
        wants = realloc(wants, wants_size += len + 1);
        if (!wants) die("out of memory");
        memcpy(wants + wants_len, name, len);
        wants[wants_len + len] = '\n';
        wants_len += len + 1;
        wants[wants_len] = 0;
        if (name[0] != '/') *callers = 1;
    }
    return wants;
}

/* The call's end: its output files (those asked for, when worth it), then the end marker with
 * status `rc` on both streams (the engine forwards them independently, and the host reads until
 * both end). The files section is worth its fork when the caller asked for a file, or one of
 * hazmat's own (an absolute name: the displays) is there, tested as root without reading it. */
static void finish(const char *workdir, char *wants, long nwant, int callers, const char *maxfile,
                   const char *maxtotal, const char *maxown, int rc) {
    int owns_there = 0;
    if (nwant > 0 && !callers) {
        for (char *name = wants; *name && !owns_there;) {
            char *end = strchr(name, '\n');
            *end = 0;
            struct stat st;
            if (name[0] == '/' && lstat(name, &st) == 0) owns_there = 1;
            *end = '\n';
            name = end + 1;
        }
    }
    if (nwant > 0 && (callers || owns_there)) {
        int n = snprintf(marker, sizeof marker, "--hazmat-files-%s--\n", nonce);
        say(1, marker, (size_t)n);
        collect(workdir, wants, maxfile, maxtotal, maxown);
    }
    int n = snprintf(marker, sizeof marker, "--hazmat-end-%s-- %d\n", nonce, rc);
    say(1, marker, (size_t)n);
    say(2, marker, (size_t)n);
}

/* SIGCHLD as a byte on a pipe (sig_r), SIGPIPE ignored: a write to a reader that has gone
 * fails instead */
static void signals(void) {
    int pipes[2];
    if (pipe2(pipes, O_CLOEXEC | O_NONBLOCK) != 0) die("cannot make a pipe");
    sig_r = pipes[0];
    sig_w = pipes[1];
    struct sigaction act = {0};
    act.sa_handler = on_child;
    act.sa_flags = SA_RESTART | SA_NOCLDSTOP;
    sigaction(SIGCHLD, &act, NULL);
    signal(SIGPIPE, SIG_IGN);
}

/* the session agent's loop (agent_session.c, which compiled.py puts after this file) */
static int session(void);

int main(int argc, char **argv) {
    const char *uid_text = need("HAZMAT_UID");
    unsigned long long asked = digits(uid_text) && strlen(uid_text) <= 10
                                   ? strtoull(uid_text, NULL, 10) : 0;
    if (asked == 0 || asked >= 4294967295ULL) die("no uid for the program");
    uid = (unsigned)asked;
    signals();
    if (argc > 1 && strcmp(argv[1], "session") == 0) return session();
    char *workdir = strdup(need("HAZMAT_WORKDIR")), *build = strdup(need("HAZMAT_BUILD"));
    char *run = strdup(need("HAZMAT_RUN")), *warm = strdup(need("HAZMAT_WARM"));
    /* HAZMAT_STAGE and HAZMAT_COLLECT are the shell agent's scripts: this agent does both */
    char *setup = strdup(need("HAZMAT_PREPARE")), *egress = strdup(need("HAZMAT_EGRESS"));
    const char *drops[] = {"HAZMAT_UID", "HAZMAT_WORKDIR", "HAZMAT_BUILD", "HAZMAT_RUN",
                           "HAZMAT_WARM", "HAZMAT_STAGE", "HAZMAT_COLLECT", "HAZMAT_PREPARE",
                           "HAZMAT_EGRESS", "OLDPWD"};
    for (size_t i = 0; i < sizeof drops / sizeof *drops; i++) unsetenv(drops[i]);

    if (*setup) {
        char *argv[] = {"/bin/sh", "-c", "cd /tmp && eval \"$1\"", "prepare", setup, NULL};
        int status;
        waitpid(start(argv, -1, NULL, 1, 1), &status, 0);
    }
    if (*egress) {
        if (!on_path("socat")) die("the image has no socat: rebuild it (hazmat images build)");
        char listen[128], connect[4200];
        snprintf(listen, sizeof listen, "TCP-LISTEN:%s,bind=127.0.0.1,reuseaddr,fork", RELAY_PORT);
        snprintf(connect, sizeof connect, "UNIX-CONNECT:%s", egress);
        char *argv[] = {"/bin/sh", "-c", "exec socat \"$1\" \"$2\"", "relay", listen, connect,
                        NULL};
        start(argv, -1, NULL, 1, 1);
        int tries = 0;
        while (!relay_listening()) {
            if (++tries > 500) die("the network relay did not start");
            struct timespec pause = {0, 10 * 1000 * 1000};
            nanosleep(&pause, NULL);
        }
    }
    /* the program's stdin: what follows the agent's part of the job, passed on by the agent */
    int program_in[2];
    if (pipe2(program_in, O_CLOEXEC) != 0) die("cannot make a pipe");
    program_in_fd = program_in[0];
    feed = program_in[1];
    if (fcntl(feed, F_SETFL, O_NONBLOCK) != 0) die("cannot make a pipe");
    pid_t runner = 0;
    if (*warm) {
        /* the runner unpacks the input files itself unless a build step needs them first */
        setenv("HAZMAT_UNPACK", *build ? "0" : "1", 1);
        char *argv[] = {"/bin/sh", "-c", "cd \"$1\" || exit 125; unset OLDPWD; exec 3>&-; eval \"$2\"",
                        "warm", workdir, warm, NULL};
        runner = start(argv, program_in[0], NULL, 0, 0);
    } else {
        say(1, "hazmat-ready\n", 13);
    }
    /* Nothing of hazmat's reaches the program: the runner (started above with its own copy)
     * clears its environment itself; the agent drops every HAZMAT_ variable before the job. */
    drop_hazmat_variables();

    char maxfile[32], maxtotal[32], maxown[32];
    if (!read_line(&in, job_line, sizeof job_line)) die("no job on stdin");
    char magic[16], version[16], nwant_text[32];
    if (sscanf(job_line, "%15s %15s %31s %31s %4095s %31s %31s", magic, version, nwant_text,
               maxfile, nonce, maxtotal, maxown) != 7 ||
        strcmp(magic, "hazmat") != 0 || strcmp(version, "7") != 0 || !digits(nwant_text) ||
        strlen(nwant_text) > 6)
        die("unknown job format");
    long nwant = strtol(nwant_text, NULL, 10);
    int callers = 0;
    char *wants = read_wants(nwant, &callers);
    int rc = 0;
    if (!runner || *build) {
        /* the rest of the job is unpacked, built and (without a runner) run as the program */
        rc = unpack(&in, workdir, runner != 0, NULL);
        if (*build) {
            if (rc == 0) {
                char *argv[] = {"/bin/sh", "-c", "exec 3>&-; eval \"$1\"", "build", build, NULL};
                rc = relay_until(start(argv, -1, workdir, 0, 0));
            }
            /* the host's compile budget ends here, and the program's own time limit starts;
             * the host sets the program's memory limit, then sends `go` and its stdin */
            int n = snprintf(marker, sizeof marker, "--hazmat-built-%s-- %d\n", nonce, rc);
            say(1, marker, (size_t)n);
            if (rc == 0) {
                char go[16];
                if (!read_line(&in, go, sizeof go) || strcmp(go, "go") != 0)
                    die("no go-ahead after the build");
            }
        }
        if (rc == 0 && !runner) rc = relay_until(start_program(workdir, run, program_in_fd, NULL));
    }
    if (runner && rc == 0) {
        if (kill(runner, SIGUSR2) != 0) die("the runner is gone");
        rc = relay_until(runner);
    }
    close(program_in[0]);
    /* every process but this one and PID 1: all of them the program's; then wait (boundedly)
     * until the kernel has ended them and PID 1 has reaped them, so none outlives the result */
    kill(-1, SIGKILL);
    for (int i = 0; i < 10000 && kill(-1, 0) == 0; i++) {}
    finish(workdir, wants, nwant, callers, maxfile, maxtotal, maxown, rc);
    /* Stay, stopped, until the host removes the container: its cgroup, and the figures the host
     * reads from it (refused forks, peak memory, CPU time), must outlive the run. */
    kill(getpid(), SIGSTOP);
    return rc;
}
