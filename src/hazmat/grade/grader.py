"""Grading one task: its runs through the sandbox, a verdict per test case and for the task.

Every run goes through the pipeline (`Sandbox.execute_in`), so it is assessed, decided,
hardened, verified and audited like any other. A task's test cases share a kept build
(backends/kept/kept_build.py): the submission is built once, and each test case runs as a fresh
process from the state right after the build. A test case's verdict comes from its run's
outcome (`verdict_of`) and, for a run that ended `ok`, from its stdout against the expected
output (compare.py) or from a checker program (checkers.py), which runs in a sandbox too. A
compile error or a blocked submission ends the task at its first test (the others would get
the same). The task's verdict is `accepted` when every test case is, else that of its first
test case that failed; its score is the share of the points it earned (scoring.py: by test
case, or by group for a task with subtasks).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from hazmat.backends.base import Backend
from hazmat.grade import task_runs
from hazmat.grade.checkers import Checkers, RunningSandbox
from hazmat.grade.compare import difference
from hazmat.grade.interaction import interact, run_interactor, verdict
from hazmat.grade.scoring import NOT_FAILED, GroupResult, order, scored, skipped_because
from hazmat.grade.task_runs import check_task
from hazmat.grade.tasks import Task, TestCase
from hazmat.grade.verdicts import VERDICT_OF, verdict_of
from hazmat.models import ExecutionResult, Outcome
from hazmat.policy import Clock

__all__ = ["VERDICT_OF", "Grader", "GradingSandbox", "TaskResult", "TestResult", "check_task"]

_FINAL = {"compile_error", "blocked"}  # every other test case would get the same
_NOT_RUN = {Outcome.COMPILE_ERROR, Outcome.COMPILE_TIMEOUT}  # the build failed: no program ran


class Verdicts(Protocol):
    """Where a graded task's verdict is recorded: the audit log's `append`, whose sequence
    number is the task's receipt (`hazmat audit receipt SEQ`)."""

    def append(self, kind: str, data: dict[str, Any]) -> int: ...


class GradingSandbox(RunningSandbox, Protocol):
    """What grading needs of a `Sandbox`: its runs, and the audit log for verdicts."""

    @property
    def audit(self) -> Verdicts: ...


@dataclass(frozen=True)
class TestResult:
    """One test case's verdict, with why (when not accepted) and what the run measured."""

    __test__ = False  # not a pytest class, whatever its name

    verdict: str
    message: str | None = None
    exit_code: int | None = None
    time_ms: float | None = None  # CPU time on the CPU clock, else wall-clock time
    memory_bytes: int | None = None
    wall_ms: float | None = None  # the program's wall-clock time
    share: float | None = None  # a checker's share of the test, 0 to 1 (testlib's points)
    group: str | None = None
    transcript: tuple[dict[str, str], ...] | None = None  # an interactive test's, when kept

    @property
    def score(self) -> float:
        """Its share: 1 accepted, 0 not, or what the checker gave."""
        if self.share is not None:
            return self.share
        return 1.0 if self.verdict == "accepted" else 0.0

    def to_dict(self) -> dict[str, Any]:
        group = {} if self.group is None else {"group": self.group}
        transcript = {} if self.transcript is None else {"transcript": list(self.transcript)}
        return {
            "verdict": self.verdict,
            "score": _rounded(self.score),
            **group,
            "message": self.message,
            "exit_code": self.exit_code,
            "time_ms": _rounded(self.time_ms),
            "wall_ms": _rounded(self.wall_ms),
            "memory_bytes": self.memory_bytes,
            **transcript,
        }


@dataclass(frozen=True)
class TaskResult:
    """A task's verdict and score, from its test cases' (`to_dict()`: its result line)."""

    id: str
    tests: tuple[TestResult, ...]
    total: int
    compile_ms: float | None = None
    receipt: int | None = None  # the audit log's grade.verdict record (hazmat audit receipt)
    points: float | None = None  # earned, of max_points (scoring.py); None: passed of total
    max_points: float | None = None
    groups: tuple[GroupResult, ...] = ()
    time_multiplier: float | None = None  # the task's, for its language (time_multipliers)
    build_flags: tuple[str, ...] = ()  # the task's, for its language (build_flags)

    @property
    def passed(self) -> int:
        return sum(t.verdict == "accepted" for t in self.tests)

    @property
    def failed(self) -> TestResult | None:
        return next((t for t in self.tests if t.verdict not in NOT_FAILED), None)

    @property
    def message(self) -> str | None:
        """Why the task is not accepted: its first failed test case, by number."""
        for number, test in enumerate(self.tests, 1):
            if test.verdict not in NOT_FAILED:
                said = f": {test.message}" if test.message else ""
                return f"test {number} of {self.total}, {test.verdict}{said}"
        return None

    @property
    def verdict(self) -> str:
        failed = self.failed
        return "accepted" if failed is None else failed.verdict

    @property
    def earned(self) -> tuple[float, float]:
        """Points earned, of how many."""
        if self.points is not None and self.max_points is not None:
            return self.points, self.max_points
        return sum(t.score for t in self.tests), float(self.total)

    @property
    def score(self) -> float:
        points, most = self.earned
        return min(points / most, 1.0) if most else 0.0

    def to_dict(self) -> dict[str, Any]:
        """The result line (schema.py's RESULT_SCHEMA)."""
        times = [t.time_ms for t in self.tests if t.time_ms is not None]
        walls = [t.wall_ms for t in self.tests if t.wall_ms is not None]
        memory = [t.memory_bytes for t in self.tests if t.memory_bytes is not None]
        points, most = self.earned
        groups = {"groups": [g.to_dict() for g in self.groups]} if self.groups else {}
        return {
            "id": self.id,
            "verdict": self.verdict,
            "score": round(self.score, 6),
            "points": round(points, 6),
            "max_points": most,
            **groups,
            "passed": self.passed,
            "total": self.total,
            "message": self.message,
            "compile_ms": _rounded(self.compile_ms),
            **(
                {"time_multiplier": self.time_multiplier}
                if self.time_multiplier is not None
                else {}
            ),
            **({"build_flags": list(self.build_flags)} if self.build_flags else {}),
            "time_ms": _rounded(max(times)) if times else None,
            "wall_ms": _rounded(max(walls)) if walls else None,
            "memory_bytes": max(memory) if memory else None,
            "receipt": self.receipt,
            "tests": [t.to_dict() for t in self.tests],
        }


class Grader:
    """Grades tasks with one `Sandbox`; `options` are `Sandbox.run`'s for every run (trust,
    runtime, image, caller, override_reason). A task's test cases share a kept build (built once,
    each test a fresh process: backends/kept/kept_build.py); with `fresh`, each runs in a fresh
    container with a build of its own instead. A task's `timeout` is CPU time unless it says
    `clock: wall` (backends/container/cpu_time.py), and each of its programs gets the trust level's
    `measured_cpus` (a whole CPU) unless it asks for fewer (`cpus`)."""

    def __init__(self, sandbox: GradingSandbox, *, fresh: bool = False, **options: Any) -> None:
        self.sandbox = sandbox
        self.fresh = fresh
        self.options = options

    def check(self, task: Task) -> None:
        """Every run the task would make is a valid request (limits within the trust level,
        sizes, file names): `InputError` naming the task and its run if not. Nothing runs."""
        check_task(task, self.sandbox.request, self.options)

    def grade(self, task: Task) -> TaskResult:
        """Run the task's test cases (or its check), judge them, and record the verdict in the
        audit log: the result carries that record's number as its receipt."""
        result = self._grade_check(task) if task.check is not None else self._grade_tests(task)
        result = dataclasses.replace(
            result, time_multiplier=task.time_multiplier, build_flags=task.build_flags
        )
        seq = self.sandbox.audit.append("grade.verdict", verdict_record(task, result))
        return dataclasses.replace(result, receipt=seq)

    def _grade_tests(self, task: Task) -> TaskResult:
        """The test cases in one kept build (built once, each test a fresh process); a test with
        a memory limit of its own runs alone (a kept build's container has one). A grouped
        task's tests run group by group, some skipped (scoring.py)."""
        done: dict[int, TestResult] = {}
        compile_ms = None
        memory = _memory(task, task.tests[0])
        together = [not self.fresh and _memory(task, case) == memory for case in task.tests]
        together_cases = [case for case, t in zip(task.tests, together, strict=True) if t]
        timeouts = [
            task_runs.test_options(task, case, self.options)["timeout"] for case in together_cases
        ]
        checking = sum(case.comparator.program for case in task.tests)
        with (
            self.sandbox.kept_build(
                task.language,
                timeouts,
                trust=self.options.get("trust"),
                build_files=task.files,
                owner=self.options.get("caller"),  # a build is shared within its caller only
            ) as kept_build,
            Checkers(self.sandbox, self.options, checking, self.fresh) as checkers,
        ):
            failed = False  # a test so far failed (an interactive task's transcript: the first's)
            for index in order(task):
                case = task.tests[index]
                why = skipped_because(task, index, done)
                if why is not None:
                    done[index] = TestResult("skipped", why, group=case.group)
                    continue
                if task.interactor is not None:
                    run, done[index] = self._interact(task, case, checkers, keep=not failed)
                else:
                    run = self._run(task, case, kept_build if together[index] else None)
                    done[index] = self._judge(case, run, checkers)
                failed = failed or done[index].verdict not in NOT_FAILED
                compile_ms = compile_ms if compile_ms is not None else run.compile_ms
                if done[index].verdict in _FINAL:
                    break
        return _task_result(task, done, compile_ms)

    def _interact(
        self, task: Task, case: TestCase, checkers: Checkers, keep: bool
    ) -> tuple[ExecutionResult, TestResult]:
        """An interactive test (interaction.py): the submission and the interactor, each a run
        of its own, joined, then a checker of the interactor's output file if the task has
        one; the transcript kept for the task's first failed test (`keep`)."""
        interactor = task.interactor
        assert interactor is not None
        program = self.sandbox.request(
            task.code, task.language, **task_runs.interactive_options(task, case, self.options)
        )
        exchange = interact(
            lambda watch: self.sandbox.execute(program, on_output=watch),
            lambda watch: run_interactor(  # its limit past the program's (harness.py)
                self.sandbox,
                interactor,
                task_runs.interactor_options(case, self.options),
                program,
                watch,
            ),
        )
        judged = verdict(exchange.program, exchange.interactor, exchange.interactor_first)
        if judged.verdict == "accepted" and case.comparator.program:
            # Polygon's way: a checker judges what the interactor wrote to its output file
            log = exchange.interactor.files.get("output", b"").decode("utf-8", "replace")
            judged = checkers.judge(case.comparator, case, log)
        result = _measured(judged.verdict, judged.message, exchange.program)
        kept = keep and judged.verdict != "accepted"
        return exchange.program, dataclasses.replace(
            result,
            share=judged.score,
            group=case.group,
            transcript=tuple(exchange.transcript.to_list()) if kept else None,
        )

    def _run(self, task: Task, case: TestCase, kept_build: Backend | None) -> ExecutionResult:
        options = task_runs.test_options(task, case, self.options)
        if kept_build is None:
            return self.sandbox.run(task.code, task.language, **options)
        request = self.sandbox.request(task.code, task.language, **options)
        return self.sandbox.execute_in(request, kept_build)

    def _judge(self, case: TestCase, run: ExecutionResult, checkers: Checkers) -> TestResult:
        verdict, message, score = verdict_of(run), run.error, None
        if verdict == "accepted" and case.comparator.program:
            judged = checkers.judge(case.comparator, case, run.stdout)
            verdict, message, score = judged.verdict, judged.message, judged.score
        elif verdict == "accepted":
            message = difference(case.comparator, case.expected_stdout, run.stdout)
            verdict = "accepted" if message is None else "wrong_answer"
        return dataclasses.replace(_measured(verdict, message, run), share=score, group=case.group)

    def _grade_check(self, task: Task) -> TaskResult:
        """The HumanEval style: the test code is appended to the program, and the run's exit
        status judges it; a failed check (any non-zero status) is `wrong_answer`."""
        options = task_runs.with_check_options(task, self.options)
        run = self.sandbox.run(task_runs.with_check(task), task.language, **options)
        verdict = verdict_of(run)
        if verdict == "runtime_error":
            verdict = "wrong_answer"
        return TaskResult(task.id, (_measured(verdict, run.error, run),), 1, run.compile_ms)


def _task_result(
    task: Task, done: Mapping[int, TestResult], compile_ms: float | None
) -> TaskResult:
    """The task's result from its tests' (by index). Without groups, the tests that ran are a
    prefix (a compile error or a blocked submission ends the task); with groups, every test has
    a result, those not run after such an end `skipped`."""
    if task.groups:
        ended = next((t for t in done.values() if t.verdict in _FINAL), None)
        why = None if ended is None else f"not run: the task ended in {ended.verdict}"
        tests = tuple(
            done.get(i) or TestResult("skipped", why, group=case.group)
            for i, case in enumerate(task.tests)
        )
    else:
        tests = tuple(done[i] for i in range(len(task.tests)) if i in done)
    points, most, groups = scored(task, tests)
    return TaskResult(task.id, tests, task.total, compile_ms, None, points, most, tuple(groups))


def verdict_record(task: Task, result: TaskResult) -> dict[str, Any]:
    """What the audit log keeps of a graded task: enough for a receipt to say that this code,
    judged by these tests, got this verdict (hashes, not the texts, which the runs' records
    hold up to the log's code cap)."""
    tests = [
        {
            "stdin": t.stdin,
            "args": list(t.args),
            "files": dict(t.files),
            "expected_stdout": t.expected_stdout,
            "comparator": dataclasses.asdict(t.comparator),
            "timeout": t.timeout,
            "memory_mb": t.memory_mb,
            **({"group": t.group} if t.group is not None else {}),
        }
        for t in task.tests
    ]
    groups = [dataclasses.asdict(g) for g in task.groups]
    return {
        "task": task.id,
        "language": task.language,
        "code_sha256": _sha256(task.code),
        "check_sha256": None if task.check is None else _sha256(task.check),
        **(
            {"interactor_sha256": _sha256(task.interactor.code)}
            if task.interactor is not None
            else {}
        ),
        "tests_sha256": _sha256(json.dumps(tests, sort_keys=True, ensure_ascii=False)),
        "files_sha256": _sha256(json.dumps(dict(task.files), sort_keys=True)),
        **({"groups": groups} if groups else {}),
        **(
            {"timeout": task.timeout, "time_multiplier": task.time_multiplier}
            if task.time_multiplier is not None
            else {}
        ),
        **({"build_flags": list(task.build_flags)} if task.build_flags else {}),
        "verdict": result.verdict,
        "score": round(result.score, 6),
        "points": round(result.earned[0], 6),
        "max_points": result.earned[1],
        "passed": result.passed,
        "total": result.total,
        "tests": [t.verdict for t in result.tests],
    }


def _memory(task: Task, case: TestCase) -> int | None:
    return case.memory_mb if case.memory_mb is not None else task.memory_mb


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _measured(verdict: str, message: str | None, run: ExecutionResult) -> TestResult:
    """A test case's result: its times and memory are the program's, without the build's;
    `time_ms` is its CPU time on the CPU clock. A build that failed ran no program: its test
    has no figures (the build's time is the task's `compile_ms`)."""
    if run.outcome in _NOT_RUN:
        return TestResult(verdict, message, run.exit_code)
    wall = run.program_ms
    if wall is None and run.exit_code is not None:
        wall = run.duration_ms - (run.compile_ms or 0.0)
    spent = run.cpu_time_ms if run.clock is Clock.CPU else wall
    return TestResult(verdict, message, run.exit_code, spent, run.peak_memory_bytes, wall)


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 3)
