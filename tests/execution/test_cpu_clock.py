"""The CPU clock on the real engine, runc and runsc (backends/container/cpu_time.py): a run's
timeout as the CPU time of the program and all its processes, read from its cgroup on the host; a
program that sleeps stopped as idle by the wall-clock backstop; a grader's tests measured so. No
figure here depends on the machine's load: what is asserted is which rule stopped a program,
and bounds that follow from the rule itself."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from hazmat import Outcome, Sandbox
from hazmat.backends.container.engine import Engine
from hazmat.backends.docker.driver import DockerBackend
from hazmat.testing import as_asked

pytestmark = [pytest.mark.docker, pytest.mark.matrix]

OVERRIDE = "CPU clock tests fork and spin on purpose"
SPIN = "while True:\n    pass\n"
# the parent only waits: a limit on its own CPU time would call it idle
CHILD_SPINS = "import os\nif os.fork() == 0:\n    while True:\n        pass\nos.wait()\n"


@pytest.fixture(scope="module")
def sb(engine: Engine) -> Iterator[Sandbox]:
    with Sandbox(as_asked(), backend=DockerBackend(engine)) as sandbox:
        yield sandbox


def test_a_program_that_spins_is_stopped_at_its_cpu_time(sb: Sandbox, runtime: str) -> None:
    result = sb.run(SPIN, timeout=1, clock="cpu", runtime=runtime, trust="unknown")
    assert result.outcome is Outcome.TIMEOUT
    assert result.error is not None and "of CPU time, past its limit of 1 s" in result.error
    assert result.cpu_time_ms is not None and result.cpu_time_ms >= 1000
    assert result.clock == "cpu" and result.limits.cpus == result.limits.measured_cpus == 1.0


def test_the_cpu_time_of_every_process_counts(sb: Sandbox, runtime: str) -> None:
    result = sb.run(
        CHILD_SPINS,
        timeout=1,
        clock="cpu",
        runtime=runtime,
        trust="unknown",
        override_reason=OVERRIDE,
    )
    assert result.outcome is Outcome.TIMEOUT
    assert result.error is not None and "of CPU time" in result.error, result.error


def test_a_program_that_sleeps_is_stopped_as_idle_by_the_backstop(
    sb: Sandbox, runtime: str
) -> None:
    result = sb.run(
        "import time\ntime.sleep(30)", timeout=1, clock="cpu", runtime=runtime, trust="unknown"
    )
    assert result.outcome is Outcome.TIMEOUT
    assert result.error is not None and "stopped as idle" in result.error, result.error
    # its own wall-clock time reached the backstop (2 s for a 1 s limit): at least that passed
    assert result.program_ms is not None and result.program_ms >= 2000
    assert result.cpu_time_ms is not None and result.cpu_time_ms < 1000


def test_a_graders_tests_are_measured_in_cpu_time_and_wall_time(sb: Sandbox, runtime: str) -> None:
    code = "import sys\nn = int(sys.stdin.read())\nprint(sum(range(n)))\n"
    tests = [{"stdin": "10", "expected_stdout": "45\n"}]
    tasks = [
        {"id": "cpu", "language": "python", "code": code, "tests": tests, "timeout": 2},
        {"id": "wall", "language": "python", "code": code, "tests": tests, "timeout": 2,
         "clock": "wall"},
        {"id": "spin", "language": "python", "code": SPIN, "tests": tests, "timeout": 1},
    ]  # fmt: skip
    graded = {r.id: r for r in sb.map(tasks, runtime=runtime, trust="unknown")}
    cpu, wall, spin = (graded[name].tests[0] for name in ("cpu", "wall", "spin"))
    assert cpu.verdict == wall.verdict == "accepted"
    assert cpu.time_ms is not None and cpu.wall_ms is not None
    assert wall.time_ms == wall.wall_ms  # on the wall clock its time is its wall-clock time
    assert spin.verdict == "time_limit" and spin.time_ms is not None and spin.time_ms >= 1000
    assert spin.message is not None and "of CPU time" in spin.message
