"""What hazmat adds to the programs that judge a submission (a checker, an interactor), so that
their own limits and their own crashes are never the submission's verdict.

Limits, in one place: an interactor runs beside the submission on the wall clock, and its
limit is past the latest moment the submission can be stopped at (`harness_timeout`): on the
CPU clock that is the submission's busy-machine cap (backends/container/cpu_time.py: its idle
backstop, twice its limit, is reached well before on any machine that is not starved), on the
wall clock its own limit; plus `MARGIN_S`. Once the submission has ended, the interactor has
`MARGIN_S` more to finish (grade/interaction.py), so an interactor that hangs costs the
margin, not its whole limit. A checker runs after the submission, on the CPU clock, with its
trust level's limit, which the submission's own cannot exceed.

Crashes: testlib's exit codes judge only when the program chose them. A Python program that
raises ends with status 1, which is testlib's `_wa` and hazmat's "rejected"; `guarded` adds
one line that makes an uncaught exception end the program with `CRASHED` instead (after
Python has printed its traceback), kept on a line the program already has where it can be,
so the program's line numbers do not move. A program that does not compile never ran at all:
`never_ran` tells it (the host compiles it too, and its stderr ends in the compiler's error).
C, C++ and Rust programs that crash end by a signal or abort (status 134, 139, 101), which are
no testlib codes already. A JavaScript, TypeScript or Ruby program is marked (`marked`: the
variable `HARNESS_ENV`, which no caller may set) and its runner (backends/inside/) ends it
with `CRASHED` on an uncaught exception, an unhandled rejection or a syntax error (the error
printed as the interpreter prints it; a Node program's own `uncaughtException` listener still
decides); its code is not touched. Java and Go offer no hook short of rewriting the program,
so the host reads their crash from how it ended (`crashed`): Java's launcher ends with 1
after `Exception in thread "main" ...` and its `at` frames, the last thing on stderr, or
after its own `Error: ...` when it found no main; Go ends with 2 after `panic: ...` or
`fatal error: ...` followed by a `goroutine N [...]:` trace. A program that prints such a
report itself and exits with that status is taken at its word (it said it crashed).
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import math
import re
from types import MappingProxyType

from hazmat.backends.container.cpu_time import CpuLimit
from hazmat.languages import get_language
from hazmat.models import ExecutionRequest, ExecutionResult, Outcome
from hazmat.policy import Clock, limit_bounds

__all__ = [
    "CRASHED",
    "HARNESS_ENV",
    "MARGIN_S",
    "as_judge",
    "crashed",
    "guarded",
    "harness_timeout",
    "marked",
    "never_ran",
]

CRASHED = 70  # sysexits' EX_SOFTWARE: no testlib code, and not hazmat's 0 or 1
MARGIN_S = 5.0
MOST_S = limit_bounds("timeout_s")[1]  # the longest timeout any run may have
# the runners (node_runner.js, ruby_runner.rb) take it out of the program's environment and
# end the program with CRASHED on an uncaught error; options/checks.py's check_env refuses HAZMAT_*
HARNESS_ENV = "HAZMAT_HARNESS"
_SAID = 300  # the characters of a crash's line kept in the verdict's message
_HOOKED = frozenset({"javascript", "typescript", "ruby"})
# Java's launcher after an uncaught exception in main (its report, then frames, last); Go's
# runtime after a panic or a fatal error (its report, then a goroutine's trace). Each found by
# one forward search: stderr is the program's, and a scan must not cost the host more.
_JAVA_CRASH = 'Exception in thread "main" '
_JAVA_FRAME = ("at ", "... ")
_JAVA_NO_MAIN = (  # the launcher's (and HazmatRunner.java's) before anything ran
    "Error: Could not find or load main class ",
    "Error: Main method not found in class ",
)
_GO_CRASH = re.compile(r"^(?:panic: |fatal error: )", re.MULTILINE)
_GO_TRACE = re.compile(r"^goroutine \d+ \[", re.MULTILINE)
_RUBY_ERROR = re.compile(r"\([A-Z]\w*(?:::\w+)*\)$")  # `main.rb:2:in ...: bug (ArgumentError)`
_HOOK = (
    "import os as _hazmat_os, sys as _hazmat_sys; _hazmat_sys.excepthook = lambda kind, value, "
    f"tb: (_hazmat_sys.__excepthook__(kind, value, tb), _hazmat_os._exit({CRASHED}))"
)
_COMPOUND = (
    ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.If, ast.For, ast.AsyncFor,
    ast.While, ast.With, ast.AsyncWith, ast.Try, ast.TryStar, ast.Match,
)  # fmt: skip


def harness_timeout(limit_s: float, clock: Clock) -> float:
    """The wall-clock limit of an interactor beside a submission whose limit is `limit_s` on
    `clock`: past the latest moment the submission is stopped at, plus `MARGIN_S`."""
    latest = CpuLimit(limit_s).cap_s if clock is Clock.CPU else limit_s
    return min(math.ceil(latest + MARGIN_S), MOST_S)


@functools.lru_cache(maxsize=16)  # a task's checker is the same for each of its tests
def guarded(code: str, language: str) -> str:
    """`code` with the line that makes an uncaught exception end it with `CRASHED` (Python);
    other languages' code as it is."""
    if language != "python":
        return code
    try:
        body = ast.parse(code).body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return f"{_HOOK}\n{code}"  # it will not compile in the sandbox either
    if not body:
        return code
    placed = _on_a_line(code, body) if "\r" not in code else None
    return placed if placed is not None else f"{_HOOK}\n{code}"


def _on_a_line(code: str, body: list[ast.stmt]) -> str | None:
    """`code` with the hook on one of its own lines: after the docstring and the
    `__future__` imports, or before a first statement that is a simple one, or on a blank
    first line; None where there is no such place (or the result would not compile)."""
    lines = code.split("\n")
    lead = _leading(body)
    if lead is not None:
        row, col = (lead.end_lineno or lead.lineno) - 1, lead.end_col_offset or 0
        raw = lines[row].encode()  # the parser's columns count UTF-8 bytes
        lines[row] = f"{raw[:col].decode()}; {_HOOK}{raw[col:].decode()}"
    elif not isinstance(body[0], _COMPOUND):
        lines[body[0].lineno - 1] = f"{_HOOK}; {lines[body[0].lineno - 1]}"
    elif body[0].lineno > 1 and not lines[0].strip():
        lines[0] = _HOOK
    else:
        return None
    placed = "\n".join(lines)
    try:
        ast.parse(placed)
    except (SyntaxError, ValueError, UnicodeDecodeError, RecursionError, MemoryError):
        return None
    return placed


def as_judge(
    run: ExecutionResult, code: str, language: str, role: str = "checker"
) -> ExecutionResult:
    """A checker's or an interactor's `run`, its own failure made an `infra_error` outcome
    (which no testlib code can turn into a verdict): an uncaught exception, or code that
    never ran. `code` is the program as its author gave it (before `guarded`). An interactor
    whose `input()` met the end of the submission's output (`EOFError`) ended as testlib's
    readers do there: `_unexpected_eof` (8)."""
    said = run.exception
    if run.outcome is Outcome.ERROR and run.exit_code == CRASHED and language == "python":
        if role == "interactor" and said is not None and said.name == "EOFError":
            eof = "unexpected end of the program's output (the interactor's EOFError)\n"
            return dataclasses.replace(run, exit_code=8, stderr=eof)
        what = f"{said.name}: {said.value}".strip() if said else "an uncaught exception"
        return dataclasses.replace(run, outcome=Outcome.INFRA_ERROR, error=f"it raised {what}")
    if run.outcome is Outcome.ERROR and language != "python" and crashed(run, language):
        return dataclasses.replace(
            run, outcome=Outcome.INFRA_ERROR, error=f"it crashed: {_what(run, language)}"
        )
    if never_ran(run, code, language):
        what = f"{said.name}: {said.value}" if said else "a syntax error"
        return dataclasses.replace(
            run, outcome=Outcome.INFRA_ERROR, error=f"it does not compile: {what}"
        )
    return run


def marked(request: ExecutionRequest) -> ExecutionRequest:
    """`request` (made by `Sandbox.request`, its check kept) with `HARNESS_ENV` set: its
    runner ends it with `CRASHED` on an uncaught error. Only the host marks a program: no
    caller's environment may hold the name. Other languages' requests as they are (a Java
    test with an environment of its own could not use the kept build's warm JVM)."""
    if get_language(request.language).name not in _HOOKED:
        return request
    checked = request.checked
    env = MappingProxyType({**request.env, HARNESS_ENV: "1"})  # read-only, as intake's
    harness = dataclasses.replace(request, env=env)
    object.__setattr__(harness, "checked", checked)
    return harness


def crashed(run: ExecutionResult, language: str) -> bool:
    """Whether a checker's or interactor's `run` (not Python's: `as_judge`) ended by a crash
    rather than by an exit it chose: `CRASHED` from a marked runner (JavaScript, TypeScript,
    Ruby); Java's and Go's crash status with their runtime's report on stderr."""
    if language in _HOOKED:
        return run.exit_code == CRASHED
    if language == "java" and run.exit_code == 1:
        return _java_crash(run.stderr) >= 0
    if language == "go" and run.exit_code == 2:
        found = _GO_CRASH.search(run.stderr)
        return found is not None and _GO_TRACE.search(run.stderr, found.end()) is not None
    return False


def _java_crash(stderr: str) -> int:
    """Where Java's report of an uncaught exception in main starts, if stderr ends with it
    (its frames, `\tat ...`, last), or 0 if the launcher found no main to run; -1 if not."""
    if stderr.startswith(_JAVA_NO_MAIN):
        return 0
    at = stderr.rfind(_JAVA_CRASH)
    if at < 0 or (at > 0 and stderr[at - 1] != "\n"):
        return -1
    last = stderr[at:].rstrip("\n").rsplit("\n", 1)[-1]
    # a suppressed or caused exception's frames are indented further (`\t\tat ...`)
    return at if last.startswith("\t") and last.lstrip("\t").startswith(_JAVA_FRAME) else -1


def _what(run: ExecutionResult, language: str) -> str:
    """The crash in a line: the exception hazmat read (Node's), else the first line of Java's
    or Go's report, else Ruby's error line (`...: message (Class)`), else the last line of
    stderr that is not a frame."""
    if run.exception is not None:
        return f"{run.exception.name}: {run.exception.value}".strip()[:_SAID]
    stderr = run.stderr
    found = _GO_CRASH.search(stderr) if language == "go" else None
    at = found.start() if found else _java_crash(stderr) if language == "java" else -1
    if at >= 0:
        return stderr[at:].split("\n", 1)[0][:_SAID]
    lines = [line for line in stderr.splitlines() if line and not line[0].isspace()]
    named = [line for line in lines if _RUBY_ERROR.search(line)] if language == "ruby" else []
    return (named or lines or [f"exit status {run.exit_code}"])[-1][:_SAID]


def never_ran(run: ExecutionResult, code: str, language: str) -> bool:
    """A Python program that ended with status 1 without running: it does not compile (the
    host's compiler says so too, and its stderr ends in a syntax error)."""
    if language != "python" or run.outcome is not Outcome.ERROR or run.exit_code != 1:
        return False
    said = run.exception
    if said is None or not said.name.endswith("Error"):
        return False
    try:
        compile(code, "main.py", "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return True
    return False


def _leading(body: list[ast.stmt]) -> ast.stmt | None:
    """The last of the module's docstring and `from __future__` imports, if it has any."""
    lead = None
    for number, node in enumerate(body):
        docstring = (
            number == 0
            and isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        )
        future = isinstance(node, ast.ImportFrom) and node.module == "__future__"
        if not (docstring or future):
            break
        lead = node
    return lead
