/* The single-run agent as one compiled process: what prologue.sh and agent.sh do, in the same
 * order and with the same protocol (backends/agent/single.py), without a shell or a helper
 * process on a run's path (backends/agent/compiled.py builds it and says when it is used).
 *
 * Where it differs from the shell agent, only in how:
 *   - the job is read from stdin in large reads, not a byte at a time (a shell cannot read a
 *     line without reading past it; under gVisor each read is a system call of 25-45 us), and
 *     what follows the agent's part is passed on to the program's stdin, a pipe the agent
 *     holds from the start (the runner's, and the stage script's);
 *   - the program's uid is taken here (no setpriv), the way setpriv takes it: the bounding set
 *     and the inheritable and ambient sets emptied, no supplementary group, then the uid and
 *     gid, which clears the permitted and effective sets.
 * Everything else (the stage and collect scripts, the runner's start, the language's setup,
 * the allowlist relay) is started exactly as agent.sh starts it. */
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
static int stdin_eof, feed_broken;
static char buf[BUF];               /* read from stdin, not yet taken or passed on */
static size_t have, taken;

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

/* a process of the program's: its uid, `argv` run with fd 0 from `in` */
static pid_t start(char *const argv[], int in, int quiet, int mute) {
    pid_t pid = fork();
    if (pid < 0) die("cannot start a process");
    if (pid == 0) {
        wire(in, quiet, mute);
        drop();
        execve(argv[0], argv, environ);
        _exit(127);
    }
    return pid;
}

static int status_of(int status) {
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Pass what stdin brings on to the program's stdin until `pid` has ended; its status. */
static int relay_until(pid_t pid) {
    for (;;) {
        int status;
        pid_t got = waitpid(pid, &status, WNOHANG);
        if (got == pid) return status_of(status);
        if (got < 0 && errno != EINTR) die("lost a process");
        struct pollfd fds[3] = {{sig_r, POLLIN, 0}, {-1, POLLIN, 0}, {-1, POLLOUT, 0}};
        if (taken < have && !feed_broken) fds[2].fd = feed;
        else if (!stdin_eof && !feed_broken) fds[1].fd = 0;
        if (poll(fds, 3, -1) < 0 && errno != EINTR) die("cannot wait");
        if (fds[0].revents & POLLIN) {
            char drain[64];
            while (read(sig_r, drain, sizeof drain) > 0) {}
        }
        if (fds[1].revents & (POLLIN | POLLHUP | POLLERR)) {
            ssize_t n = read(0, buf, BUF);
            if (n > 0) {
                have = (size_t)n;
                taken = 0;
            } else if (n == 0 || errno != EINTR) {
                stdin_eof = 1;
                close(feed);
                feed = -1;
            }
        }
        if (fds[2].revents & (POLLOUT | POLLERR | POLLHUP)) {
            ssize_t n = write(feed, buf + taken, have - taken);
            if (n > 0) {
                taken += (size_t)n;
            } else if (n < 0 && errno == EPIPE) {
                feed_broken = 1;  /* nothing reads the program's stdin any more */
            }
        }
    }
}

/* One line of the job from stdin (the agent's own part), read in large reads: what comes
 * after the line stays in the buffer, for the next line or for the program's stdin
 * (relay_until passes it on first). */
static int read_line(char *line, size_t size) {
    size_t len = 0;
    for (;;) {
        while (taken < have) {
            char c = buf[taken++];
            if (c == '\n') {
                line[len] = 0;
                return 1;
            }
            if (len + 1 >= size) die("unknown job format");
            line[len++] = c;
        }
        ssize_t n = read(0, buf, BUF);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return 0;
        have = (size_t)n;
        taken = 0;
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

int main(void) {
    const char *uid_text = need("HAZMAT_UID");
    unsigned long long asked = digits(uid_text) && strlen(uid_text) <= 10
                                   ? strtoull(uid_text, NULL, 10) : 0;
    if (asked == 0 || asked >= 4294967295ULL) die("no uid for the program");
    uid = (unsigned)asked;
    char *workdir = strdup(need("HAZMAT_WORKDIR")), *build = strdup(need("HAZMAT_BUILD"));
    char *run = strdup(need("HAZMAT_RUN")), *warm = strdup(need("HAZMAT_WARM"));
    char *stage = strdup(need("HAZMAT_STAGE")), *collect = strdup(need("HAZMAT_COLLECT"));
    char *setup = strdup(need("HAZMAT_PREPARE")), *egress = strdup(need("HAZMAT_EGRESS"));
    const char *drops[] = {"HAZMAT_UID", "HAZMAT_WORKDIR", "HAZMAT_BUILD", "HAZMAT_RUN",
                           "HAZMAT_WARM", "HAZMAT_STAGE", "HAZMAT_COLLECT", "HAZMAT_PREPARE",
                           "HAZMAT_EGRESS", "OLDPWD"};
    for (size_t i = 0; i < sizeof drops / sizeof *drops; i++) unsetenv(drops[i]);

    int pipes[2];
    if (pipe2(pipes, O_CLOEXEC | O_NONBLOCK) != 0) die("cannot make a pipe");
    sig_r = pipes[0];
    sig_w = pipes[1];
    struct sigaction act = {0};
    act.sa_handler = on_child;
    act.sa_flags = SA_RESTART | SA_NOCLDSTOP;
    sigaction(SIGCHLD, &act, NULL);
    signal(SIGPIPE, SIG_IGN);

    if (*setup) {
        char *argv[] = {"/bin/sh", "-c", "cd /tmp && eval \"$1\"", "prepare", setup, NULL};
        int status;
        waitpid(start(argv, -1, 1, 1), &status, 0);
    }
    if (*egress) {
        if (!on_path("socat")) die("the image has no socat: rebuild it (hazmat images build)");
        char listen[128], connect[4200];
        snprintf(listen, sizeof listen, "TCP-LISTEN:%s,bind=127.0.0.1,reuseaddr,fork", RELAY_PORT);
        snprintf(connect, sizeof connect, "UNIX-CONNECT:%s", egress);
        char *argv[] = {"/bin/sh", "-c", "exec socat \"$1\" \"$2\"", "relay", listen, connect,
                        NULL};
        start(argv, -1, 1, 1);
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
    feed = program_in[1];
    if (fcntl(feed, F_SETFL, O_NONBLOCK) != 0) die("cannot make a pipe");
    pid_t runner = 0;
    if (*warm) {
        /* the runner unpacks the input files itself unless a build step needs them first */
        setenv("HAZMAT_UNPACK", *build ? "0" : "1", 1);
        char *argv[] = {"/bin/sh", "-c", "cd \"$1\" || exit 125; unset OLDPWD; exec 3>&-; eval \"$2\"",
                        "warm", workdir, warm, NULL};
        runner = start(argv, program_in[0], 0, 0);
    } else {
        say(1, "hazmat-ready\n", 13);
    }
    /* Nothing of hazmat's reaches the program: the runner (started above with its own copy)
     * clears its environment itself; the agent drops every HAZMAT_ variable before the job. */
    drop_hazmat_variables();

    char line[MAX_LINE], nonce[MAX_LINE], maxfile[32], maxtotal[32], maxown[32];
    if (!read_line(line, sizeof line)) die("no job on stdin");
    char magic[16], version[16], nwant_text[32];
    if (sscanf(line, "%15s %15s %31s %31s %4095s %31s %31s", magic, version, nwant_text,
               maxfile, nonce, maxtotal, maxown) != 7 ||
        strcmp(magic, "hazmat") != 0 || strcmp(version, "7") != 0 || !digits(nwant_text) ||
        strlen(nwant_text) > 6)
        die("unknown job format");
    long nwant = strtol(nwant_text, NULL, 10);
    size_t wants_len = 0, wants_size = 1;
    char *wants = calloc(1, 1);
    int callers = 0, owns_there = 0;
    for (long i = 0; i < nwant; i++) {
        char name[MAX_LINE];
        if (!read_line(name, sizeof name)) die("truncated job");
        size_t len = strlen(name);
        wants = realloc(wants, wants_size += len + 1);
        if (!wants) die("out of memory");
        memcpy(wants + wants_len, name, len);
        wants[wants_len + len] = '\n';
        wants_len += len + 1;
        wants[wants_len] = 0;
        if (name[0] != '/') callers = 1;
    }
    char *stage_argv[] = {"/bin/sh", "-c", stage, "stage", workdir, runner ? "1" : "",
                          build, run, "unpack", NULL};
    int rc = 0;
    if (!runner || *build) {
        /* the rest of the job is unpacked, built and (without a runner) run as the program */
        rc = relay_until(start(stage_argv, program_in[0], 0, 0));
        if (*build) {
            /* the host's compile budget ends here, and the program's own time limit starts;
             * the host sets the program's memory limit, then sends `go` and its stdin */
            char built[MAX_LINE + 64];
            int n = snprintf(built, sizeof built, "--hazmat-built-%s-- %d\n", nonce, rc);
            say(1, built, (size_t)n);
            if (rc == 0) {
                char go[16];
                if (!read_line(go, sizeof go) || strcmp(go, "go") != 0)
                    die("no go-ahead after the build");
            }
            if (rc == 0 && !runner) {
                stage_argv[5] = "";
                stage_argv[6] = "";
                stage_argv[8] = "run";
                rc = relay_until(start(stage_argv, program_in[0], 0, 0));
            }
        }
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
    /* whether the files section is worth its processes: a file the caller asked for, or one
     * of hazmat's own (an absolute name: the displays) that is there, tested as root without
     * reading it */
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
    char marker[MAX_LINE + 64];
    if (nwant > 0 && (callers || owns_there)) {
        int n = snprintf(marker, sizeof marker, "--hazmat-files-%s--\n", nonce);
        say(1, marker, (size_t)n);
        int names[2];
        if (pipe2(names, O_CLOEXEC) != 0) die("cannot make a pipe");
        char *argv[] = {"/bin/sh", "-c", collect, "collect", workdir, maxfile, maxtotal,
                        maxown, NULL};
        pid_t collector = start(argv, names[0], 0, 1);
        close(names[0]);
        say(names[1], wants, wants_len);
        close(names[1]);
        int status;
        while (waitpid(collector, &status, 0) < 0 && errno == EINTR) {}
    }
    int n = snprintf(marker, sizeof marker, "--hazmat-end-%s-- %d\n", nonce, rc);
    say(1, marker, (size_t)n);
    say(2, marker, (size_t)n);
    /* Stay, stopped, until the host removes the container: its cgroup, and the figures the host
     * reads from it (refused forks, peak memory, CPU time), must outlive the run. */
    kill(getpid(), SIGSTOP);
    return rc;
}
