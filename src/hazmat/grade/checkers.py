"""Checker programs: a test case's output judged by a program, itself run in a sandbox.

Two conventions, both given the test's files in the working directory and, in this order, as
the program's arguments:

- hazmat's (`checker`): `input output expected`. Status 0 accepts, 1 rejects (the first line
  of its stdout says why); anything else is the checker's own failure (`infra_error`).
- testlib's (`testlib`; Polygon, Codeforces): `input output answer`, as testlib.h's
  `registerTestlibCmd` reads them. Its exit codes judge: 0 (`_ok`) accepts; 1 (`_wa`), 2
  (`_pe`), 4 (`_dirt`) and 8 (`_unexpected_eof`) are `wrong_answer`; 7 (`_points`, from
  `quitp`) gives the test the share it names, from 0 to 1 (`accepted` at 1, `wrong_answer`
  at 0, `partially_correct` with the share between); 3 (`_fail`) and anything else are the
  checker's own failure. The message is the first line testlib writes to stderr (`wrong
  answer expected 3, found 4`).

A checker that runs out of time or memory is the checker's failure too, never the
submission's, and so is one that crashes: testlib's codes count only when the checker chose
them (a checker that raises ends with `harness.CRASHED`, not with 1, which is testlib's
`_wa` and hazmat's "rejected"; Java's and Go's crashes are read from their runtime's report;
one that does not compile never ran: grade/harness.py). Its CPU
limit is its trust level's, which the submission's own limit cannot exceed.

A task's checker is built once for all its test cases, as the submission is (a
kept build of its own, backends/kept/kept_build.py): a C++ checker compiles once per task, and
once per `Sandbox` and caller for the same source (the build cache). With `fresh`, each of its
runs is a fresh container with a build of its own instead.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any, Protocol, Unpack

from hazmat._closing import Closable
from hazmat.backends.base import Backend
from hazmat.backends.kept.kept_build import KeptBuild
from hazmat.grade.harness import as_judge, guarded, marked
from hazmat.grade.tasks import Comparator, TestCase
from hazmat.models import ExecutionRequest, ExecutionResult, Outcome
from hazmat.options import RunOptions
from hazmat.watch import OnOutput, Watch

__all__ = ["TESTLIB_EOF", "TESTLIB_EXIT", "Checkers", "Judged", "RunningSandbox", "judges_options"]

# testlib.h's exit codes (its OK_EXIT_CODE ... UNEXPECTED_EOF_EXIT_CODE, without CONTESTER or
# EJUDGE defined), and what each makes of the test
TESTLIB_EXIT = {0: "ok", 1: "wa", 2: "pe", 3: "fail", 4: "dirt", 7: "points", 8: "unexpected_eof"}
TESTLIB_EOF = 8  # its input ended where it expected more (testlib's `_unexpected_eof`)
_SAID = 240  # characters of a checker's message kept


class RunningSandbox(Protocol):
    """What running a task's programs needs of a `Sandbox` (grader.GradingSandbox adds the
    audit log)."""

    def run(
        self,
        code: str | bytes,
        language: str = ...,
        *,
        on_output: OnOutput | Watch | None = ...,
        **options: Unpack[RunOptions],
    ) -> ExecutionResult: ...

    def request(
        self, code: str | bytes, language: str = ..., **options: Unpack[RunOptions]
    ) -> ExecutionRequest: ...

    def kept_build(
        self,
        language: str,
        timeouts: Sequence[float | None],
        *,
        trust: Any = None,
        build_files: Iterable[str] = (),
        owner: str | None = None,
    ) -> KeptBuild: ...

    def execute_in(self, request: ExecutionRequest, backend: Backend) -> ExecutionResult: ...

    def execute(
        self, request: ExecutionRequest, *, on_output: OnOutput | Watch | None = ...
    ) -> ExecutionResult: ...


@dataclass(frozen=True)
class Judged:
    """What a checker made of one output: the verdict, why, and the test's share (0 to 1)."""

    verdict: str
    message: str | None = None
    score: float = 0.0


class Checkers(Closable):
    """The checker programs of one task's test cases, each built once; close it (or use it as
    a context manager) to end their builds."""

    def __init__(
        self, sandbox: RunningSandbox, options: dict[str, Any], tests: int, fresh: bool
    ) -> None:
        self.sandbox = sandbox
        self.options = judges_options(options)
        self.tests = tests
        self.fresh = fresh
        self._builds: dict[Comparator, KeptBuild] = {}
        self._stack = ExitStack()


    def close(self) -> None:
        self._stack.close()

    def judge(self, checker: Comparator, case: TestCase, output: str) -> Judged:
        testlib = checker.name == "testlib"
        names = ("input", "output", "answer" if testlib else "expected")
        files = dict(zip(names, (case.stdin, output, case.expected_stdout), strict=True))
        options = {**self.options, "files": files, "args": list(names), "clock": "cpu"}
        code, language = checker.code or "", checker.language or "python"
        request = marked(self.sandbox.request(guarded(code, language), language, **options))
        if self.fresh:
            run = self.sandbox.execute(request)
        else:
            run = self.sandbox.execute_in(request, self._build(checker))
        run = as_judge(run, code, language)
        return testlib_judged(run) if testlib else hazmat_judged(run)

    def _build(self, checker: Comparator) -> KeptBuild:
        if checker not in self._builds:
            build = self.sandbox.kept_build(
                checker.language or "python",
                [None] * self.tests,
                trust=self.options.get("trust"),
                owner=self.options.get("caller"),
            )
            self._stack.enter_context(build)
            self._builds[checker] = build
        return self._builds[checker]


def judges_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """A checker's or an interactor's run options, from the submission's: the caller's trust,
    runtime and caller, not its image (the submission's language's) nor its override."""
    return {k: v for k, v in options.items() if k not in ("override_reason", "image")}


def hazmat_judged(run: ExecutionResult) -> Judged:
    if run.outcome is Outcome.OK:
        return Judged("accepted", None, 1.0)
    if run.outcome is Outcome.ERROR and run.exit_code == 1:
        said = run.stdout.strip().splitlines()
        return Judged("wrong_answer", _short(said[0]) if said else "rejected by the checker")
    return Judged("infra_error", f"the checker failed: {run.error}")


def testlib_judged(run: ExecutionResult, role: str = "the checker") -> Judged:
    """The verdict testlib's exit code gives (the module's words); `role` names the program
    in the message of its own failure."""
    said = _first_line(run.stderr)
    status = run.exit_code if run.outcome in (Outcome.OK, Outcome.ERROR) else None
    kind = TESTLIB_EXIT.get(status) if status is not None else None
    if kind == "ok":
        return Judged("accepted", None, 1.0)
    if kind in ("wa", "pe", "dirt", "unexpected_eof"):
        return Judged("wrong_answer", said or f"the checker said {kind}")
    if kind == "points":
        share = _points(said)
        if share is None:
            return Judged("infra_error", f"{role} failed: no points in {said!r}")
        if share >= 1:
            return Judged("accepted", None, 1.0)
        if share <= 0:
            return Judged("wrong_answer", f"no points (0 of the test): {said}", 0.0)
        return Judged("partially_correct", f"partly right ({share:g} of the test): {said}", share)
    if kind == "fail":
        return Judged("infra_error", f"{role} failed: {said or 'FAIL'}")
    if status is not None:
        told = f": {said}" if said else ""
        return Judged("infra_error", f"{role} failed: status {status} is not testlib's{told}")
    return Judged("infra_error", f"{role} failed: {run.error}")


def _points(said: str) -> float | None:
    """The share in testlib's `points X message` (quitp), from 0 to 1 (more is 1)."""
    words = said.split()
    if len(words) < 2 or words[0] != "points":
        return None
    try:
        value = float(words[1])
    except ValueError:
        return None
    return None if math.isnan(value) or value < 0 else min(value, 1.0)


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return _short(line.strip())
    return ""


def _short(text: str) -> str:
    return text if len(text) <= _SAID else text[: _SAID - 1] + "…"
