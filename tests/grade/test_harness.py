"""The programs that judge a submission are judged apart from it (grade/harness.py): their
limits outlast the submission's, and their crashes are `infra_error`, never a testlib code.
Without an engine: the guard line, the limits' arithmetic, a crash's verdict, the grace after
the submission ends. On the real engine (one cell): an idle or computing submission beside an
interactor is `time_limit` whatever its timeout; crashing interactors and checkers are
`infra_error`; a deliberate exit still judges."""

from __future__ import annotations

import ast
import dataclasses
import threading
from collections.abc import Iterator
from types import MappingProxyType

import pytest

from hazmat import Policy, Sandbox, TrustLevel
from hazmat.backends.base import Job
from hazmat.backends.container.cpu_time import CpuLimit
from hazmat.backends.container.engine import Engine
from hazmat.backends.docker.driver import DockerBackend
from hazmat.grade import checkers
from hazmat.grade.grader import Grader
from hazmat.grade.harness import CRASHED, MARGIN_S, as_judge, guarded, harness_timeout
from hazmat.grade.interaction import interact
from hazmat.grade.tasks import parse_task
from hazmat.models import ExecutionResult, Outcome, ProgramException
from hazmat.policy import Clock
from hazmat.testing import RecordingBackend, as_asked, report
from hazmat.watch import Watch

SHAPES = {
    "a statement first": "import sys\nx = 1\nraise ValueError(x)\n",
    "a docstring and __future__": (
        '"""Doc, ünïcode."""\nfrom __future__ import annotations\nx = 1\nraise ValueError(x)\n'
    ),
    "a def first": "def f():\n    return 1\nraise ValueError(f())\n",
    "a blank line, then a def": "\ndef f():\n    return 1\nraise ValueError(f())\n",
    "a comment first": "# -*- coding: latin-1 -*-\nx = 1\nraise ValueError(x)\n",
    "a decorator first": "@staticmethod\ndef f():\n    pass\nraise ValueError(1)\n",
    "a statement and a comment": "x = 1  # one\nraise ValueError(x)\n",
}


@pytest.mark.parametrize("shape", SHAPES)
def test_the_guard_line_keeps_the_programs_lines_where_it_can(shape: str) -> None:
    code = SHAPES[shape]
    checked = guarded(code, "python")
    assert f"_exit({CRASHED})" in checked
    raised = [n for n in ast.walk(ast.parse(checked)) if isinstance(n, ast.Raise)]
    moved = 1 if shape in ("a def first", "a decorator first") else 0
    assert raised[0].lineno == len(code.splitlines()) + moved
    compile(checked, "main.py", "exec", dont_inherit=True)  # still a program, __future__ first
    assert guarded(code, "cpp") == code and guarded("", "python") == ""


def test_a_program_that_does_not_compile_gets_the_guard_on_a_line_of_its_own() -> None:
    assert guarded("def (:\n", "python").endswith("\ndef (:\n")
    assert guarded("x = 1\r\ny = 2\r\n", "python").split("\n", 1)[1] == "x = 1\r\ny = 2\r\n"


@pytest.mark.parametrize("clock", [Clock.CPU, Clock.WALL])
@pytest.mark.parametrize("limit", [0.1, 1.0, 7.5, 15.0, 30.0, 3600.0])
def test_an_interactors_limit_is_past_the_latest_moment_the_submission_is_stopped(
    limit: float, clock: Clock
) -> None:
    """The submission is stopped at its CPU limit, its idle backstop or (a starved machine)
    its cap on the CPU clock; at its limit on the wall clock. The interactor outlasts all."""
    latest = CpuLimit(limit).cap_s if clock is Clock.CPU else limit
    assert harness_timeout(limit, clock) >= latest + MARGIN_S
    assert harness_timeout(limit, clock) > CpuLimit(limit).backstop_s or clock is Clock.WALL


def test_the_judges_limits_are_never_short_of_the_submissions_on_a_scripted_backend() -> None:
    """A task asking all of its level's time (with a multiplier): the interactor's wall-clock
    limit is past the submission's cap, the checker's CPU limit at least the submission's."""

    def answer(job: Job) -> object:
        files = job.program.files
        if "answer" in files and "output" not in files:  # the interactor
            return report(files={"output": b"log"})
        return report()

    backend = RecordingBackend(answer=answer)  # type: ignore[arg-type]
    task = {
        "id": "t",
        "language": "python",
        "code": "print(1)",
        "timeout": 7.5,
        "time_multipliers": {"python": 2},
        "tests": [{"stdin": "1"}],
        "interactor": {"language": "python", "code": "print(1)"},
        "comparator": {"name": "testlib", "code": "int main() {}"},
    }
    with Sandbox(backend=backend) as sandbox:
        assert Grader(sandbox).grade(parse_task(task)).verdict == "accepted"
    program, interactor, checker = backend.jobs
    assert program.clock is Clock.CPU and program.limits.timeout_s == 15
    assert interactor.clock is Clock.WALL
    assert interactor.limits.timeout_s >= CpuLimit(15).cap_s + MARGIN_S
    assert checker.clock is Clock.CPU and checker.limits.timeout_s >= 15


def ended(status: int, stderr: str, exception: ProgramException | None) -> ExecutionResult:
    """A finished run's result, as the pipeline gives it (only what judging reads matters)."""
    return ExecutionResult(
        outcome=Outcome.ERROR,
        exit_code=status,
        stdout="",
        stderr=stderr,
        duration_ms=1.0,
        limits=Policy().settings("unknown").limits,
        runtime=Policy().settings("unknown").runtime,
        truncated=False,
        image="hazmat/python",
        language="python",
        trust=TrustLevel.UNKNOWN,
        exception=exception,
    )


def test_a_crash_is_the_programs_failure_whichever_convention_it_follows() -> None:
    boom = ProgramException("ValueError", "boom", "Traceback ...")
    crashed = ended(CRASHED, "Traceback (most recent call last):\nValueError: boom\n", boom)
    for judged in (
        checkers.testlib_judged(as_judge(crashed, "raise ValueError('boom')", "python")),
        checkers.hazmat_judged(as_judge(crashed, "raise ValueError('boom')", "python")),
    ):
        assert judged.verdict == "infra_error" and "it raised ValueError: boom" in str(judged)
    eof = ProgramException("EOFError", "EOF when reading a line", "Traceback ...")
    hung_up = as_judge(ended(CRASHED, "", eof), "input()", "python", "interactor")
    assert checkers.testlib_judged(hung_up, "the interactor").verdict == "wrong_answer"
    assert checkers.testlib_judged(
        as_judge(ended(CRASHED, "", eof), "input()", "python")
    ).verdict == ("infra_error")  # a checker reads files: EOF on its stdin is its own bug
    syntax = ProgramException("SyntaxError", "invalid syntax", '  File "main.py", line 1')
    broken = as_judge(ended(1, "SyntaxError: invalid syntax\n", syntax), "def (:\n", "python")
    assert checkers.testlib_judged(broken).verdict == "infra_error"
    assert "does not compile: SyntaxError" in str(checkers.testlib_judged(broken).message)
    chose = ended(1, "wrong answer 3 is not 4\n", None)
    assert checkers.testlib_judged(
        as_judge(chose, "import sys; sys.exit(1)", "python")
    ).verdict == ("wrong_answer")
    # a status 1 with a traceback the checker printed itself, from code that compiles: its own
    printed = ended(1, "", syntax)
    assert (
        checkers.hazmat_judged(as_judge(printed, "print('x')", "python")).verdict == "wrong_answer"
    )


def test_an_interactor_still_running_after_the_program_ended_is_cancelled() -> None:
    def program(watch: Watch) -> ExecutionResult:
        watch.ready.set()
        watch.ended.set()
        return ended(0, "", None)

    seen: list[str | None] = []

    def interactor(watch: Watch) -> ExecutionResult:
        watch.ready.set()
        stop = threading.Event()
        while not watch.cancelled:  # a program that never reads: it waits to be stopped
            stop.wait(0.01)
        seen.append(watch.reason)
        return dataclasses.replace(ended(0, "", None), outcome=Outcome.CANCELLED)

    exchange = interact(program, interactor, grace_s=0.0)
    assert exchange.interactor.outcome is Outcome.CANCELLED
    assert seen == ["the program ended 0 s ago and it did not"]


# on the engine ----------------------------------------------------------------------------

INTERACTOR = """import sys
secret = int(open("input").read())
line = sys.stdin.readline().split()
if not line:
    sys.exit(print("unexpected eof", file=sys.stderr) or 8)
sys.exit(0 if line == ["!", str(secret)] else 1)
"""


@pytest.fixture(scope="module")
def short_level(engine: Engine) -> Iterator[Sandbox]:
    """A sandbox whose `unknown` level allows 2 s: a task may ask for all of it."""
    policy = Policy()
    unknown = policy.settings("unknown")
    limits = unknown.limits.replace(timeout_s=2.0)
    levels = {**policy.levels, TrustLevel.UNKNOWN: dataclasses.replace(unknown, limits=limits)}
    with Sandbox(
        as_asked(dataclasses.replace(policy, levels=MappingProxyType(levels))),
        backend=DockerBackend(engine),
    ) as sandbox:
        yield sandbox


def interactive(task_id: str, code: str, **more: object) -> dict[str, object]:
    return {
        "id": task_id,
        "language": "python",
        "code": code,
        "timeout": 2,
        "interactor": {"language": "python", "code": INTERACTOR},
        "tests": [{"stdin": "7\n"}],
        **more,
    }


@pytest.mark.docker
def test_a_submission_that_idles_or_computes_beside_an_interactor_is_time_limit(
    short_level: Sandbox,
) -> None:
    """The interactor ran on the wall clock at the level's 2 s; a submission asking all 2 s
    (more than half the level's) is stopped as idle at 4 s: it was `infra_error` ("the
    interactor failed ... time limit"), with a time multiplier too."""
    tasks = [
        interactive("idle", "import time\ntime.sleep(1000)\n"),
        interactive("compute", "while True:\n    pass\n"),
        interactive(
            "stretched",
            "import time\ntime.sleep(1000)\n",
            timeout=1,
            time_multipliers={"python": 2},
        ),
        interactive("right", "print('! 7', flush=True)\n"),
    ]
    found = {r.id: r for r in short_level.map(tasks, jobs=1, trust="unknown", runtime="runc")}
    said = {name: (r.verdict, r.tests[0].message) for name, r in found.items()}
    assert [found[name].verdict for name in ("idle", "compute", "stretched")] == [
        "time_limit"
    ] * 3, said
    assert found["right"].verdict == "accepted", said


CRASHING_CHECKER = "import sys\nopen(sys.argv[3]).read()\nraise ValueError('checker bug')\n"


@pytest.mark.docker
def test_a_crashing_interactor_or_checker_is_infra_error_and_a_chosen_exit_still_judges(
    short_level: Sandbox,
) -> None:
    """A Python interactor or checker that raised ended with status 1, testlib's `_wa` (and
    hazmat's "rejected"): the submission got `wrong_answer` for the judge's bug."""
    crashing = INTERACTOR.replace("sys.exit(0 if", "raise ValueError('bug')\nsys.exit(0 if")
    judged = {
        "id": "x",
        "language": "python",
        "code": "print(input())",
        "timeout": 2,
        "tests": [{"stdin": "4\n", "expected_stdout": "4\n"}],
    }
    tasks = [
        interactive(
            "interactor-raises",
            "print('! 7', flush=True)\n",
            interactor={"language": "python", "code": crashing},
        ),
        {
            **judged,
            "id": "testlib-raises",
            "comparator": {"name": "testlib", "language": "python", "code": CRASHING_CHECKER},
        },
        {
            **judged,
            "id": "checker-raises",
            "comparator": {"name": "checker", "language": "python", "code": CRASHING_CHECKER},
        },
        {
            **judged,
            "id": "checker-broken",
            "comparator": {"name": "checker", "language": "python", "code": "def (:\n"},
        },
        {
            **judged,
            "id": "checker-rejects",
            "comparator": {
                "name": "checker",
                "language": "python",
                "code": "import sys\nprint('no')\nsys.exit(1)\n",
            },
        },
        interactive("interactor-rejects", "print('! 8', flush=True)\n"),
    ]
    found = {r.id: r for r in short_level.map(tasks, jobs=1, trust="unknown", runtime="runc")}
    said = {name: (r.verdict, r.tests[0].message) for name, r in found.items()}
    for name in ("interactor-raises", "testlib-raises", "checker-raises"):
        assert found[name].verdict == "infra_error", said
        assert "raised ValueError" in str(found[name].tests[0].message), said
    assert found["checker-broken"].verdict == "infra_error", said
    assert "does not compile: SyntaxError" in str(found["checker-broken"].tests[0].message)
    assert found["checker-rejects"].verdict == "wrong_answer", said
    assert found["interactor-rejects"].verdict == "wrong_answer", said
