"""The programs that judge a submission are judged apart from it (grade/harness.py): their
limits outlast the submission's, and their crashes are `infra_error`, never a testlib code.
Without an engine: the guard line, the limits' arithmetic, a crash's verdict, the grace after
the submission ends. On the real engine (one cell): an idle or computing submission beside an
interactor is `idleness_limit` or `time_limit` whatever its timeout; crashing interactors and
checkers are `infra_error`; a deliberate exit still judges."""

from __future__ import annotations

import ast
import dataclasses
import threading
from collections.abc import Iterator
from types import MappingProxyType

import pytest

from hazmat import InputError, Policy, Sandbox, TrustLevel
from hazmat.backends.base import Job
from hazmat.backends.container.cpu_time import CpuLimit
from hazmat.backends.container.engine import Engine
from hazmat.backends.docker.driver import DockerBackend
from hazmat.grade import checkers
from hazmat.grade.grader import Grader
from hazmat.grade.harness import (
    CRASHED,
    HARNESS_ENV,
    MARGIN_S,
    as_judge,
    guarded,
    harness_timeout,
    marked,
    never_ran,
)
from hazmat.grade.interaction import interact
from hazmat.grade.tasks import parse_task
from hazmat.models import ExecutionResult, Outcome, ProgramException
from hazmat.policy import Clock
from hazmat.run.intake import admit, check_request
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


def test_code_too_deep_for_the_hosts_parser_is_guarded_and_never_an_error_of_the_host() -> None:
    """`print(1+1+...+1)` of 5,000 terms made ast.parse raise RecursionError on the host."""
    code = "print(" + "+".join(["1"] * 5000) + ")\n"
    assert guarded(code, "python").endswith(code)
    deep = ProgramException("RecursionError", "maximum recursion depth exceeded", "Traceback")
    run = dataclasses.replace(ended(1, "RecursionError\n", deep), language="python")
    assert never_ran(run, code, "python")  # the host cannot compile it either: no exception


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
    # the program and the interactor run at once: their jobs are told apart by their files
    program, interactor, checker = sorted(backend.jobs, key=lambda job: len(job.program.files))
    assert set(interactor.program.files) == {"main.py", "input", "answer"}
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
def test_a_submission_that_idles_or_computes_beside_an_interactor_is_idleness_or_time_limit(
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
    verdicts = [found[name].verdict for name in ("idle", "compute", "stretched")]
    assert verdicts == ["idleness_limit", "time_limit", "idleness_limit"], said
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


# other languages: a runner's hook (JavaScript, TypeScript, Ruby), the runtime's report (Java, Go)

JAVA_REPORT = (
    'Exception in thread "main" java.lang.IllegalStateException: bug\n\tat Main.main(Main.java:3)\n'
)
GO_REPORT = "panic: bug\n\ngoroutine 1 [running]:\nmain.main()\n\t/tmp/main.go:3 +0x25\n"
GO_FATAL = "fatal error: all goroutines are asleep - deadlock!\n\ngoroutine 1 [chan receive]:\n"


def in_language(status: int, stderr: str, language: str) -> ExecutionResult:
    return dataclasses.replace(ended(status, stderr, None), language=language)


@pytest.mark.parametrize(
    ("language", "status", "stderr", "said"),
    [
        ("javascript", CRASHED, "Error: bug\n    at main.js:1:7\n", "Error: bug"),
        ("ruby", CRASHED, "main.rb:1:in '<main>': bug (RuntimeError)\n\tfrom x\n", "main.rb:1:"),
        ("ruby", CRASHED, "main.rb: main.rb:1: syntax error (SyntaxError)\ndef (\n", "main.rb: "),
        ("typescript", 1, "wrong answer 3 is not 4\n", None),
        ("java", 1, "log line\n" + JAVA_REPORT, 'Exception in thread "main" java.lang.Illegal'),
        (
            "java",
            1,
            JAVA_REPORT + "\tSuppressed: java.io.IOException: x\n\t\tat Main.close(Main.java:9)\n"
            "\t\t... 1 more\n",
            'Exception in thread "main" java.lang.Illegal',
        ),  # try-with-resources: the last frames are indented twice
        ("java", 1, "wrong answer 3 is not 4\n", None),
        ("java", 1, "Error: Main method not found in class Main, please ...\n", "Error: Main"),
        ("java", 1, JAVA_REPORT + "wrong answer, after printing a trace\n", None),
        ("java", 2, JAVA_REPORT, None),  # testlib's _pe, chosen after a caught exception
        ("go", 2, "some output\n" + GO_REPORT, "panic: bug"),
        ("go", 2, GO_FATAL, "fatal error: all goroutines are asleep"),
        ("go", 2, "wrong output format panic: not at a line's start\n", None),
        ("go", 2, "panic: a line the checker printed, and no trace\n", None),
        ("go", 1, GO_REPORT, None),
    ],
)
def test_a_crash_in_another_language_is_told_from_a_chosen_exit(
    language: str, status: int, stderr: str, said: str | None
) -> None:
    """A runner's hook ends a crash with CRASHED; Java's and Go's crash is their runtime's
    status and report (testlib's 1 and 2 otherwise: `_wa` and `_pe`, the submission's)."""
    judged = checkers.testlib_judged(as_judge(in_language(status, stderr, language), "", language))
    if said is None:
        assert judged.verdict == "wrong_answer", judged
    else:
        assert judged.verdict == "infra_error", judged
        assert f"it crashed: {said}" in str(judged.message), judged


def test_only_the_runners_with_a_hook_are_told_the_program_judges() -> None:
    """The mark is an environment variable no caller may set (the runner takes it out); a
    Java or Go request is left as it is (its kept build's warm JVM takes no variable)."""
    policy = Policy()
    for language, hooked in (("js", True), ("typescript", True), ("ruby", True), ("go", False)):
        request = admit(policy, "x", language, **{"env": {"A": "1"}})
        judge = marked(request)
        assert (HARNESS_ENV in judge.env) is hooked and judge.env["A"] == "1"
        assert check_request(policy, judge) is request.checked  # its check kept, not redone
    with pytest.raises(InputError, match=HARNESS_ENV):
        admit(policy, "x", "ruby", **{"env": {HARNESS_ENV: "1"}})


JUDGES = {  # language -> (a checker that crashes, one that rejects on purpose with 1)
    "javascript": (
        "require('fs').readFileSync(process.argv[4]);\nthrow new Error('checker bug');\n",
        "console.error('wrong answer no');\nprocess.exit(1);\n",
    ),
    "ruby": (
        "File.read(ARGV[2])\nraise ArgumentError, 'checker bug'\n",
        "STDERR.puts 'wrong answer no'\nexit 1\n",
    ),
    "java": (
        "public class Main {\n    public static void main(String[] a) {\n"
        '        throw new IllegalStateException("checker bug");\n    }\n}\n',
        "public class Main {\n    public static void main(String[] a) {\n"
        '        System.err.println("wrong answer no");\n        System.exit(1);\n    }\n}\n',
    ),
    "go": (
        'package main\n\nfunc main() { panic("checker bug") }\n',
        'package main\n\nimport (\n\t"fmt"\n\t"os"\n)\n\n'
        'func main() {\n\tfmt.Fprintln(os.Stderr, "wrong answer no")\n\tos.Exit(1)\n}\n',
    ),
}
MORE_CRASHES = {  # what else ends a judge by a crash, not by its choice
    "node-rejection": ("javascript", "Promise.reject(new Error('checker bug'));\n"),
    "node-syntax": ("javascript", "const = 1;\n"),
    "ruby-syntax": ("ruby", "def (\n"),
    "go-deadlock": ("go", "package main\n\nfunc main() { <-make(chan int) }\n"),
    "java-no-main": ("java", "public class Main {}\n"),
}
MORE_CHOSEN = {  # a judge's own handler chose its exit: testlib's code judges
    "node-own-handler": (
        "javascript",
        "process.on('uncaughtException', () => {\n"
        "  console.error('wrong answer no');\n  process.exit(1);\n});\nnull.x;\n",
    ),
    "ruby-rescued": (
        "ruby",
        "begin\n  raise 'no'\nrescue => e\n  STDERR.puts \"wrong answer #{e}\"\n  exit 1\nend\n",
    ),
}
GO_PE = (  # testlib's _pe (2), chosen: the submission's
    'package main\n\nimport (\n\t"fmt"\n\t"os"\n)\n\n'
    'func main() {\n\tfmt.Fprintln(os.Stderr, "wrong output format no")\n\tos.Exit(2)\n}\n'
)


@pytest.mark.docker
def test_a_crashing_judge_in_any_language_is_infra_error_and_its_chosen_exit_judges(
    short_level: Sandbox,
) -> None:
    """Node, Ruby and Java ended a crash with 1 (testlib's `_wa`), Go with 2 (`_pe`): the
    submission got `wrong_answer` for the judge's bug."""

    def checked_by(task_id: str, language: str, code: str) -> dict[str, object]:
        return {
            "id": task_id,
            "language": "python",
            "code": "print(input())",
            "tests": [{"stdin": "4\n", "expected_stdout": "4\n"}],
            "comparator": {"name": "testlib", "language": language, "code": code},
        }

    crashing = {f"{lang}-crashes": (lang, code) for lang, (code, _) in JUDGES.items()}
    rejecting = {f"{lang}-rejects": (lang, code) for lang, (_, code) in JUDGES.items()}
    tasks = [
        checked_by(name, lang, code)
        for name, (lang, code) in {**crashing, **MORE_CRASHES, **rejecting, **MORE_CHOSEN}.items()
    ]
    tasks.append(checked_by("go-presentation", "go", GO_PE))
    js_interactor = "const fs = require('fs');\nfs.readFileSync('input');\nnull.x;\n"
    tasks.append(
        interactive(
            "node-interactor-crashes",
            "print('! 7', flush=True)\n",
            interactor={"language": "javascript", "code": js_interactor},
        )
    )
    found = {r.id: r for r in short_level.map(tasks, jobs=2, trust="unknown", runtime="runc")}
    said = {name: (r.verdict, r.tests[0].message) for name, r in found.items()}
    for name in [*crashing, *MORE_CRASHES, "node-interactor-crashes"]:
        assert found[name].verdict == "infra_error", said
        assert "crashed: " in str(found[name].tests[0].message), said
    for name in [*rejecting, *MORE_CHOSEN, "go-presentation"]:
        assert found[name].verdict == "wrong_answer", said
    fresh = [t for t in tasks if t["id"] in ("javascript-crashes", "ruby-crashes")]
    again = short_level.map(fresh, jobs=2, fresh=True, trust="unknown", runtime="runc")
    assert {r.verdict for r in again} == {"infra_error"}  # a fresh container for each run too
