"""A kept build (backends/kept/kept_build.py): one submission's tests in one container, built once,
each test a fresh process from the state right after the build; on the real engine, runc and
runsc."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from hazmat import Outcome, Sandbox
from hazmat.backends.container.engine import Engine
from hazmat.backends.docker.driver import DockerBackend
from hazmat.backends.kept.kept_build import SHARED_NOTE
from hazmat.models import ExecutionResult
from hazmat.testing import as_asked

pytestmark = [pytest.mark.docker, pytest.mark.matrix]

# `dirty` leaves something in every place a program can leave state, and a process behind (a
# child whose first thread has exited, so it shows Z, while its other thread puts the files back
# and holds a memfd and an abstract socket); `tcp` leaves a connection in TIME_WAIT; `check`
# says what of all that it finds
PROBE = r"""
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <mqueue.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/xattr.h>
#include <unistd.h>

static const char *paths[] = {"left", "/tmp/left", "/dev/shm/left", "locked/f", 0};

static void put(const char *path, const char *text, int mode) {
    unlink(path);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
    if (fd >= 0) { write(fd, text, strlen(text)); close(fd); }
}

static int abstract(int listening) {
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    memcpy(a.sun_path, "\0hazmat-probe", 13);
    socklen_t n = offsetof(struct sockaddr_un, sun_path) + 13;
    int r = listening ? (bind(s, (void *)&a, n) || listen(s, 1)) : connect(s, (void *)&a, n);
    if (!listening) close(s);
    return r == 0;
}

static void *linger(void *unused) {
    memfd_create("hazmat-probe", 0);
    abstract(1);
    for (;;) {
        put("/work/survivor", "x", 0644); put("/tmp/survivor", "x", 0644);
        put("/dev/shm/survivor", "x", 0644);
        usleep(1000);
    }
    return unused;
}

static struct sockaddr_in loopback(int port) {
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return a;
}

static int others(void) {
    int n = 0;
    DIR *d = opendir("/proc");
    struct dirent *e;
    while ((e = readdir(d))) {
        int pid = atoi(e->d_name);
        char p[64];
        struct stat st;
        snprintf(p, sizeof p, "/proc/%d", pid);
        if (pid > 0 && pid != getpid() && stat(p, &st) == 0 && st.st_uid == getuid()) n++;
    }
    closedir(d);
    return n;
}

int main(void) {
    char what[16] = "";
    if (scanf("%15s", what) != 1) return 2;
    if (strcmp(what, "dirty") == 0) {
        if (fork() == 0) {
            pthread_t t;
            pthread_create(&t, 0, linger, 0);
            pthread_exit(0);
        }
        mkdir("locked", 0700);
        for (int i = 0; paths[i]; i++) put(paths[i], "x", 0644);
        chmod("locked", 0);
        shmget(4242, 4096, IPC_CREAT | 0600);
        mqd_t q = mq_open("/hazmat-probe", O_CREAT | O_RDWR, 0600, 0);
        if (q != (mqd_t)-1) mq_send(q, "x", 1, 0);
        setxattr(".", "user.hazmat", "x", 1, 0);
        syscall(SYS_add_key, "user", "hazmat-probe", "x", 1, -4 /* the user's keyring */);
        chmod(".", 0700);
        put("/tmp/.hazmat-build/main", "#!/bin/sh\necho replaced\n", 0755);
        put("main.c", "int main(void) { return 3; }\n", 0644);
        usleep(50000);
        puts("dirtied");
        return 0;
    }
    if (strcmp(what, "tcp") == 0) {  /* the client closes first: TIME_WAIT on its port 4243 */
        int l = socket(AF_INET, SOCK_STREAM, 0), c = socket(AF_INET, SOCK_STREAM, 0), one = 1;
        struct sockaddr_in server = loopback(4242), client = loopback(4243);
        setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        setsockopt(c, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        bind(l, (void *)&server, sizeof server);
        listen(l, 1);
        bind(c, (void *)&client, sizeof client);
        if (connect(c, (void *)&server, sizeof server) == 0) {
            int s = accept(l, 0, 0);
            close(c);
            usleep(20000);
            close(s);
        }
        puts("connected");
        return 0;
    }
    int found = 0;
    for (int i = 0; paths[i]; i++)
        if (access(paths[i], F_OK) == 0 || (i == 3 && access("locked", F_OK) == 0)) {
            printf("found %s\n", paths[i]);
            found = 1;
        }
    const char *left[] = {"/work/survivor", "/tmp/survivor", "/dev/shm/survivor", 0};
    for (int i = 0; left[i]; i++)
        if (access(left[i], F_OK) == 0) { printf("found %s\n", left[i]); found = 1; }
    if (others()) { printf("found %d other processes\n", others()); found = 1; }
    if (abstract(0)) { puts("found an abstract socket"); found = 1; }
    if (shmget(4242, 0, 0) >= 0) { puts("found a shared memory segment"); found = 1; }
    if (mq_open("/hazmat-probe", O_RDONLY) != (mqd_t)-1) {
        puts("found a message queue");
        found = 1;
    }
    if (syscall(SYS_request_key, "user", "hazmat-probe", 0, 0) >= 0) {
        puts("found a key");
        found = 1;
    }
    char value[8];
    if (getxattr(".", "user.hazmat", value, sizeof value) >= 0) {
        puts("found an xattr");
        found = 1;
    }
    struct stat st;
    if (stat(".", &st) == 0 && (st.st_mode & 07777) != 01777) {
        printf("found the working directory at mode %o\n", st.st_mode & 07777);
        found = 1;
    }
    int b = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in port = loopback(4243);
    if (bind(b, (void *)&port, sizeof port) != 0) { puts("found port 4243 taken"); found = 1; }
    if (!found) puts("clean");
    return 0;
}
"""


@pytest.fixture(scope="module")
def cold(engine: Engine) -> Iterator[Sandbox]:
    with Sandbox(as_asked(), backend=DockerBackend(engine)) as sandbox:
        yield sandbox


def run_tests(
    sandbox: Sandbox, code: str, language: str, runtime: str, cases: list[dict[str, object]]
) -> tuple[list[ExecutionResult], int]:
    """Each case in one kept build; the results and how many containers the kept build started."""
    timeouts = [case.get("timeout") for case in cases]
    with sandbox.kept_build(language, timeouts) as kept_build:  # type: ignore[arg-type]
        results = [
            sandbox.execute_in(
                sandbox.request(code, language, runtime=runtime, **case),  # type: ignore[arg-type]
                kept_build,
            )
            for case in cases
        ]
    return results, kept_build.containers


def test_each_test_starts_from_the_state_right_after_the_build(cold: Sandbox, runtime: str) -> None:
    steps = ["check", "dirty", "check", "dirty", "check", "tcp", "check"]
    results, containers = run_tests(cold, PROBE, "c", runtime, [{"stdin": step} for step in steps])
    said = [(r.outcome, r.stdout) for r in results]
    clean = (Outcome.OK, "clean\n")
    assert said == [
        clean,
        (Outcome.OK, "dirtied\n"),
        clean,
        (Outcome.OK, "dirtied\n"),
        clean,
        (Outcome.OK, "connected\n"),
        clean,
    ], [r.stderr for r in results]
    # Linux lists TCP's TIME_WAIT (and every other socket) in /proc/net: a test that leaves
    # one moves the next to a new container; under gVisor each test has a network namespace
    # of its own, and everything else is cleared in place under both
    assert containers == (2 if runtime == "runc" else 1)
    # built once: the first test carries the build's time, the others none
    assert results[0].compile_ms is not None and results[0].compile_ms > 0
    assert [r.compile_ms for r in results[1:]] == [None] * 6


def test_a_test_that_ends_the_container_costs_a_container_not_a_build(
    cold: Sandbox, runtime: str
) -> None:
    code = (
        "#include <stdio.h>\n"
        'int main(void) { int n; scanf("%d", &n); while (n < 0) {} printf("%d\\n", 2 * n); }\n'
    )
    cases: list[dict[str, object]] = [
        {"stdin": "1"},
        {"stdin": "-1", "timeout": 0.5},
        {"stdin": "3"},
        {"stdin": "4"},
    ]
    results, containers = run_tests(cold, code, "c", runtime, cases)
    said = [(r.outcome, r.stdout) for r in results]
    assert said == [
        (Outcome.OK, "2\n"),
        (Outcome.TIMEOUT, ""),
        (Outcome.OK, "6\n"),
        (Outcome.OK, "8\n"),
    ]
    assert containers == 2
    assert [r.compile_ms is None for r in results] == [False, True, True, True]


def test_a_tests_own_file_wins_over_the_tasks_and_is_gone_for_the_next(
    cold: Sandbox, runtime: str
) -> None:
    task = {
        "id": "files",
        "language": "python",
        "code": "print(open('data.txt').read())",
        "files": {"data.txt": "the task's"},
        "tests": [
            {"expected_stdout": "the task's"},
            {"files": {"data.txt": "the test's"}, "expected_stdout": "the test's"},
            {"expected_stdout": "the task's"},
        ],
    }
    (result,) = list(cold.map([task], runtime=runtime))
    assert [t.verdict for t in result.tests] == ["accepted"] * 3, result.message


EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "grading" / "tasks.jsonl"


def test_a_process_left_by_one_test_cannot_answer_the_next(cold: Sandbox, runtime: str) -> None:
    # the example set's submission whose first test leaves a process (its first thread gone,
    # so it shows Z) that would write each later test's answer into the shared output
    (task,) = [
        json.loads(line)
        for line in EXAMPLES.read_text().splitlines()
        if json.loads(line)["id"] == "survivor-c-wrong-wrong_answer"
    ]
    (result,) = list(cold.map([task], runtime=runtime))
    assert [t.verdict for t in result.tests] == ["accepted", "wrong_answer", "wrong_answer"]
    assert result.verdict == "wrong_answer"


def test_each_test_reports_its_own_peak_memory(cold: Sandbox) -> None:
    code = (
        "#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n"
        "int main(void) {\n"
        '    int mb; scanf("%d", &mb);\n'
        "    char *p = malloc((size_t)mb << 20); if (p) memset(p, 1, (size_t)mb << 20);\n"
        '    printf("%d\\n", p ? p[mb] : -1);\n}\n'
    )
    cases: list[dict[str, object]] = [{"stdin": "96"}, {"stdin": "1"}]
    results, _ = run_tests(cold, code, "c", "runc", cases)
    assert [r.outcome for r in results] == [Outcome.OK, Outcome.OK]
    big, small = (r.peak_memory_bytes or 0 for r in results)
    assert big > 96 << 20
    assert small < 64 << 20, "the second test's peak is the first one's"


def test_a_build_that_fails_is_every_tests_compile_error(cold: Sandbox, runtime: str) -> None:
    results, containers = run_tests(
        cold, "int main(void) { return x; }", "c", runtime, [{"stdin": "1"}, {"stdin": "2"}]
    )
    assert [r.outcome for r in results] == [Outcome.COMPILE_ERROR] * 2
    assert "undeclared" in results[0].stderr
    assert containers == 1


def test_the_same_source_is_built_once_for_two_tasks(cold: Sandbox) -> None:
    """A second kept build of the same C source starts from the first one's build (the
    Sandbox's build cache): its tests get the same answers, and no build time."""
    code = (
        "#include <stdio.h>\n"
        'int main(void) { int n; scanf("%d", &n); printf("%d shared\\n", 3 * n); }\n'
    )
    cases: list[dict[str, object]] = [{"stdin": "1"}, {"stdin": "2"}]
    first, _ = run_tests(cold, code, "c", "runc", cases)
    second, _ = run_tests(cold, code, "c", "runc", cases)
    assert [r.stdout for r in first] == [r.stdout for r in second] == ["3 shared\n", "6 shared\n"]
    assert first[0].compile_ms is not None and first[0].compile_ms > 0
    assert second[0].compile_ms == 0 and SHARED_NOTE in second[0].notes
    assert SHARED_NOTE not in first[0].notes


# Each reads its test's stdin and says whether it is the language's runner (its command line
# is the runner's, backends/agent/runners.py), which is started before the test's job
AHEAD = {
    "python": (
        "import sys\nn = int(sys.stdin.read())\n"
        "ahead = open('/proc/self/cmdline', 'rb').read().split(b'\\0')[1] == b'-c'\n"
        "print(2 * n, 'ahead' if ahead else 'cold')\n"
    ),
    "javascript": (
        "const fs = require('fs');\nconst n = Number(fs.readFileSync(0, 'utf8'));\n"
        "const ahead = fs.readFileSync('/proc/self/cmdline', 'utf8').includes('.hazmat-runner');\n"
        "console.log(2 * n, ahead ? 'ahead' : 'cold');\n"
    ),
    "typescript": (
        "import * as fs from 'fs';\nconst n: number = Number(fs.readFileSync(0, 'utf8'));\n"
        "const ahead = fs.readFileSync('/proc/self/cmdline', 'utf8').includes('.hazmat-runner');\n"
        "console.log(2 * n, ahead ? 'ahead' : 'cold');\n"
    ),
    "ruby": (
        # the runner sets $0 (and so the command line): its frames are under the top level's
        "n = STDIN.read.to_i\nahead = caller.any? { |f| f.start_with?('-e:') }\n"
        "puts \"#{2 * n} #{ahead ? 'ahead' : 'cold'}\"\n"
    ),
}


@pytest.mark.parametrize("language", sorted(AHEAD))
def test_a_runners_test_is_a_process_started_before_its_job(cold: Sandbox, language: str) -> None:
    """Each test runs in the language's runner, started as a fresh process after the last
    test ended (the first one's once the build is done), reading its own test's stdin."""
    cases: list[dict[str, object]] = [{"stdin": str(n)} for n in (1, 2, 3)]
    results, containers = run_tests(cold, AHEAD[language], language, "runc", cases)
    said = [(r.outcome, r.stdout) for r in results]
    assert said == [(Outcome.OK, f"{2 * n} ahead\n") for n in (1, 2, 3)], [
        r.stderr for r in results
    ]
    assert containers == 1


# `dirty` leaves what the next test's interpreter would take in at its start if it started
# before the places were emptied (the user site's .pth and customize files, under HOME=/tmp; a
# module the runner imports, which it survives), and a process that puts them back until it is
# killed; `check` says what of that it finds, and whether it is the runner
LEFT_FOR_THE_RUNNER = r"""
import os, site, sys, time
user_site = site.getusersitepackages()
def leave():
    os.makedirs(user_site, exist_ok=True)
    for path, text in [
        (f"{user_site}/hazmat-probe.pth", "import os; os.environ['LEAKED'] = 'pth'\n"),
        (f"{user_site}/usercustomize.py", "import os; os.environ['LEAKED'] = 'usercustomize'\n"),
        ("/work/ctypes.py", "import os; os.environ['LEAKED'] = 'ctypes'\n"),
    ]:
        with open(path, "w") as f:
            f.write(text)
if sys.stdin.read().strip() == "dirty":
    leave()
    if os.fork() == 0:
        os.setsid()
        while True:
            leave()
            time.sleep(0.001)
    print("dirtied")
else:
    ahead = open("/proc/self/cmdline", "rb").read().split(b"\0")[1] == b"-c"
    print(os.environ.get("LEAKED", "clean"), "ahead" if ahead else "cold")
"""


def test_what_a_test_leaves_cannot_reach_the_next_tests_interpreter(
    cold: Sandbox, runtime: str
) -> None:
    cases: list[dict[str, object]] = [{"stdin": s} for s in ("check", "dirty", "check", "check")]
    results, _ = run_tests(cold, LEFT_FOR_THE_RUNNER, "python", runtime, cases)
    said = [(r.outcome, r.stdout) for r in results]
    clean = (Outcome.OK, "clean ahead\n")
    assert said == [clean, (Outcome.OK, "dirtied\n"), clean, clean], [r.stderr for r in results]


JAVA_AHEAD = """import java.util.*;

public class Main {
    public static void main(String[] args) {
        int n = new Scanner(System.in).nextInt();
        if (n < 0) {
            throw new IllegalStateException("negative");
        }
        boolean ahead = Arrays.stream(Thread.currentThread().getStackTrace())
            .anyMatch(f -> f.getClassName().equals("HazmatRunner"));
        long ours = System.getenv().keySet().stream().filter(k -> k.startsWith("HAZMAT")).count();
        System.out.println(2 * n + " " + (ahead ? "ahead" : "cold") + " [" + String.join("|", args)
            + "] " + System.getenv().getOrDefault("EXTRA", "-") + " " + ours);
    }
}
"""


def test_a_java_test_is_a_jvm_started_before_its_job(cold: Sandbox) -> None:
    """Each Java test runs in a JVM started before its job (HazmatRunner.java) with its own
    stdin and args and the environment `java` gives it; a test with variables of its own runs
    with `java`; an uncaught exception reads and ends as with `java Main`."""
    cases: list[dict[str, object]] = [
        {"stdin": "1"},
        {"stdin": "2", "args": ["a b", "\u00e9\U0001f600"]},
        {"stdin": "3", "env": {"EXTRA": "yes"}},
        {"stdin": "-1"},
        {"stdin": "4"},
    ]
    results, containers = run_tests(cold, JAVA_AHEAD, "java", "runc", cases)
    said = [r.stdout for r in results]
    assert said == [
        "2 ahead [] - 0\n",
        "4 ahead [a b|\u00e9\U0001f600] - 0\n",
        "6 cold [] yes 0\n",
        "",
        "8 ahead [] - 0\n",
    ], [r.stderr for r in results]
    assert containers == 1
    alone = cold.run(JAVA_AHEAD, "java", runtime="runc", stdin="-1")
    assert (
        (results[3].exit_code, results[3].stderr)
        == (1, alone.stderr)
        == (
            1,
            'Exception in thread "main" java.lang.IllegalStateException: negative\n'
            "\tat Main.main(Main.java:7)\n",
        )
    )
