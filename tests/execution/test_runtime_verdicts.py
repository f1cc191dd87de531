"""Verdicts that do not depend on the runtime, on the real engine (issue 62): a program's memory
is its own under runc and gVisor (gVisor's own memory is neither counted nor able to end a
program within its limit), in both tiers, on the grader's two paths (a kept build's test, and
a test alone in a fresh container after its build); and a thread refused at the pids limit
names that limit, not the output limit its crash report then passed."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from hazmat import Outcome, Sandbox
from hazmat.backends.container.engine import Engine
from hazmat.backends.docker.driver import DockerBackend
from hazmat.backends.oci.driver import OciBackend
from hazmat.testing import as_asked

pytestmark = [pytest.mark.docker, pytest.mark.matrix]

MiB = 1024 * 1024
# touches the MiB its stdin names, every page, and says so
TOUCH = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(void) {
    long mib = 0;
    if (scanf("%ld", &mib) != 1) return 2;
    char *p = malloc((size_t)mib << 20);
    if (p == NULL) return 3;
    memset(p, 1, (size_t)mib << 20);
    printf("ok %d\n", p[mib] + p[(mib << 20) - 1]);
    return 0;
}
"""
# 50,000 goroutines waiting, then threads, each held by a goroutine, until the pids limit
# refuses one: Go's runtime then dumps every goroutine's stack (megabytes: past the output
# limit) and exits
THREADS = """package main

import (
	"fmt"
	"runtime"
	"time"
)

func main() {
	block := make(chan int)
	for i := 0; i < 50000; i++ {
		go func() { <-block }()
	}
	for i := 0; i < 1000; i++ {
		go func() {
			runtime.LockOSThread()
			time.Sleep(time.Hour)
		}()
	}
	time.Sleep(5 * time.Second)
	fmt.Println("all started")
}
"""


@pytest.fixture(scope="module", params=["docker", "oci"])
def tier(request: pytest.FixtureRequest, engine: Engine) -> Iterator[Sandbox]:
    backend = DockerBackend(engine) if request.param == "docker" else OciBackend(engine)
    with Sandbox(as_asked(), backend=backend) as sandbox:
        yield sandbox


def test_memory_near_the_limit_is_judged_alike_under_both_runtimes(
    tier: Sandbox, runtime: str
) -> None:
    tests = [
        {"stdin": "240", "expected_stdout": "ok 2\n"},  # 94% of the limit: accepted
        {"stdin": "300", "expected_stdout": "ok 2\n"},  # 117%: memory_limit
        # alone in a fresh container (a memory limit of its own), built there: the build's
        # own budget and peak are not the program's
        {"stdin": "240", "expected_stdout": "ok 2\n", "memory_mb": 257},
    ]
    task = {"id": "touch", "language": "c", "code": TOUCH, "memory_mb": 256, "tests": tests}
    [result] = tier.map([task], runtime=runtime, trust="unknown")
    verdicts = [(t.verdict, t.message) for t in result.tests]
    assert [v for v, _ in verdicts] == ["accepted", "memory_limit", "accepted"], verdicts
    said = verdicts[1][1] or ""
    assert said.startswith("the program") and "memory limit of 256 MB" in said, said
    for test in (result.tests[0], result.tests[2]):
        # the program's own peak: what it touched, within its limit (gVisor's own not in it)
        assert test.memory_bytes is not None and 240 * MiB <= test.memory_bytes <= 256 * MiB


def test_a_thread_refused_at_the_pids_limit_is_not_the_output_limit(tier: Sandbox) -> None:
    """Under runc the host counts the refusal (pids.events); under gVisor the refusal is the
    Sentry's own (`nproc`), which no counter shows the host (docs/security.md, runsc's pids)."""
    result = tier.run(
        THREADS, "go", runtime="runc", trust="unknown", override_reason="a thread bomb on purpose"
    )
    assert result.outcome is Outcome.PIDS_LIMIT, (result.outcome, result.error, result.notes)
    assert any("passed the output limit" in note for note in result.notes), result.notes
