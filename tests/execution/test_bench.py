"""A bench (backends/bench.py): one submission's tests in one container, built once, each
test a fresh process from the state right after the build; on the real engine, runc and runsc."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from hazmat import Outcome, Sandbox
from hazmat.backends.docker import DockerBackend
from hazmat.backends.engine import Engine
from hazmat.models import ExecutionResult

pytestmark = pytest.mark.docker

# `dirty` leaves something everywhere the program may write, and replaces its own build and
# source; `check` says what of that it finds
PROBE = r"""
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *paths[] = {"left", "/tmp/left", "/dev/shm/left", "locked/f", 0};

static void put(const char *path, const char *text, int mode) {
    unlink(path);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
    if (fd >= 0) { write(fd, text, strlen(text)); close(fd); }
}

int main(void) {
    char what[16] = "";
    if (scanf("%15s", what) != 1) return 2;
    if (strcmp(what, "dirty") == 0) {
        mkdir("locked", 0700);
        for (int i = 0; paths[i]; i++) put(paths[i], "x", 0644);
        chmod("locked", 0);
        shmget(4242, 4096, IPC_CREAT | 0600);
        put("/tmp/.hazmat-build/main", "#!/bin/sh\necho replaced\n", 0755);
        put("main.c", "int main(void) { return 3; }\n", 0644);
        puts("dirtied");
        return 0;
    }
    int found = 0;
    for (int i = 0; paths[i]; i++)
        if (access(paths[i], F_OK) == 0 || (i == 3 && access("locked", F_OK) == 0)) {
            printf("found %s\n", paths[i]);
            found = 1;
        }
    if (shmget(4242, 0, 0) >= 0) { puts("found a shared memory segment"); found = 1; }
    if (!found) puts("clean");
    return 0;
}
"""


@pytest.fixture(scope="module")
def cold(engine: Engine) -> Iterator[Sandbox]:
    with Sandbox(backend=DockerBackend(engine)) as sandbox:
        yield sandbox


def run_tests(
    sandbox: Sandbox, code: str, language: str, runtime: str, cases: list[dict[str, object]]
) -> tuple[list[ExecutionResult], int]:
    """Each case in one bench; the results and how many containers the bench started."""
    timeouts = [case.get("timeout") for case in cases]
    with sandbox.bench(language, timeouts) as bench:  # type: ignore[arg-type]
        results = [
            sandbox.execute_in(
                sandbox.request(code, language, runtime=runtime, **case),  # type: ignore[arg-type]
                bench,
            )
            for case in cases
        ]
    return results, bench.containers


def test_each_test_starts_from_the_state_right_after_the_build(cold: Sandbox, runtime: str) -> None:
    steps = ["check", "dirty", "check", "dirty", "check"]
    results, containers = run_tests(cold, PROBE, "c", runtime, [{"stdin": step} for step in steps])
    said = [(r.outcome, r.stdout) for r in results]
    assert said == [
        (Outcome.OK, "clean\n"),
        (Outcome.OK, "dirtied\n"),
        (Outcome.OK, "clean\n"),
        (Outcome.OK, "dirtied\n"),
        (Outcome.OK, "clean\n"),
    ], [r.stderr for r in results]
    # Linux lists System V IPC objects, and the agent removes them; gVisor lists none, so a
    # test that leaves one moves the next test to a new container
    assert containers == (1 if runtime == "runc" else 3)
    # built once: the first test carries the build's time, the others none
    assert results[0].compile_ms is not None and results[0].compile_ms > 0
    assert [r.compile_ms for r in results[1:]] == [None] * 4


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
