"""From what a backend observed to the `ExecutionResult` a caller gets.

The outcome is derived from the host's and the engine's facts, never from the program's word
(`derive_outcome`). Every result that is not `ok` carries one sentence in `error` saying what
happened (`explain`); the CLI prints that same sentence.
"""

from __future__ import annotations

import re
import signal
from collections.abc import Sequence
from dataclasses import dataclass
from types import MappingProxyType

from hazmat.backends.base import RunReport
from hazmat.backends.container.cpu_time import CpuLimit
from hazmat.displays import parse_displays
from hazmat.languages import Language, get_language
from hazmat.models import Assessment, ExecutionRequest, ExecutionResult, Outcome
from hazmat.policy import Clock, Limits, Runtime
from hazmat.run.missing_package import missing_package_note
from hazmat.run.offline import offline_note
from hazmat.run.program_error import program_exception

__all__ = ["Plan", "blocked_result", "derive_outcome", "explain", "infra_result", "report_result"]

_TAIL_CHARS = 200
# runtimes' footers and hints, never the cause: Node's version, Rust's backtrace hint, a
# shell's word for a process a signal ended (the status already names the signal)
_FOOTER = re.compile(
    r"Node\.js v\d|note: run with `RUST_BACKTRACE="
    r"|(?:Aborted|Segmentation fault|Killed|Bus error|Illegal instruction"
    r"|Floating point exception)(?: \(core dumped\))?$"
)
# a line naming what went wrong: `ValueError: bad`, JavaScript's bare `Error: boom`, Java's
# `Exception in thread "main" ...`, Ruby's `main.rb:1:in ...: boom (RuntimeError)`, a Go
# panic, a Rust panic, Bash's `main.sh: line 3: ...`, a missing package
_ERROR_LINE = re.compile(
    r"(?:[A-Za-z_$][\w.$]*)?(?:Error|Exception|Exit|Interrupt)\b.*"
    r"|.+ \([A-Z][\w:]*(?:Error|Exception|Interrupt|Exit)\)"
    r"|panic: .*|fatal error: .*|thread '.*' panicked at .*"
    r"|\S+: line \d+: .*"
    r"|.*\bcannot find (?:package|module)\b.*|.*\bno required module provides package\b.*"
)
# a compiler's own diagnostic: `main.go:3:8: undefined: x`, `main.c:2:5: error: ...`,
# `Main.java:3: error: ...`, rustc's `error[E0425]: ...`, esbuild's `✘ [ERROR] Expected ";"`;
# the first error is usually the cause of the rest (warnings come after any error)
_DIAGNOSTIC = re.compile(r"\S+\.\w+:\d+(?::\d+)?: \S.*|(?:✘ )?\[ERROR\] .*|error(?:\[E\d+\])?: .*")
_WARNING = re.compile(r"(?:\S+\.\w+:\d+(?::\d+)?: )?(?:warning|note)\b.*")


@dataclass(frozen=True)
class Plan:
    """A request resolved against the policy: what will really be applied to the run."""

    request: ExecutionRequest
    limits: Limits
    runtime: Runtime
    image: str
    network: tuple[str, ...] = ()  # the hosts it may reach through hazmat's proxy
    installs: bool = False  # a session's call where the session may install packages


def derive_outcome(report: RunReport, lang: Language | None = None) -> Outcome:
    """The outcome, from the facts the host and the engine observed, most decisive first;
    with `lang`, a failed run whose runtime says it ran out of memory is `memory_limit`."""
    if report.cancelled:
        return Outcome.CANCELLED
    if report.timed_out and report.stopped_by == "busy":
        return Outcome.INFRA_ERROR  # the machine starved it: no verdict on the program
    if report.compile_timed_out:
        return Outcome.COMPILE_TIMEOUT
    if report.memory_exceeded and not _build_failed(report):
        return Outcome.MEMORY_LIMIT  # its own peak passed the limit (runc would have killed it)
    if report.timed_out:
        return Outcome.TIMEOUT
    if report.pids_refused and report.output_exceeded:
        return Outcome.PIDS_LIMIT  # a refused thread's crash dump (Go's) is what overflowed
    if report.output_exceeded:
        return Outcome.OUTPUT_LIMIT
    if report.held_after_build is not None:
        return Outcome.MEMORY_LIMIT  # the build left more in use than the program may have
    if report.oom_killed and (not _exited_itself(report) or _build_failed(report)):
        return Outcome.MEMORY_LIMIT  # the program's, or the compiler's (its build then failed)
    if lang is not None and out_of_memory_line(lang, report) is not None:
        return Outcome.MEMORY_LIMIT  # its runtime's own error: Java's OutOfMemoryError, ...
    if report.pids_refused and report.exit_code != 0:
        return Outcome.PIDS_LIMIT
    if _build_failed(report):
        return Outcome.COMPILE_ERROR
    if report.exit_code == 0:
        return Outcome.OK
    return Outcome.ERROR


def out_of_memory_line(lang: Language, report: RunReport) -> str | None:
    """The line of a failed program's stderr in which its runtime says it ran out of memory
    (`Language.out_of_memory`, among its last lines), or None."""
    if report.exit_code in (None, 0) or _build_failed(report):
        return None
    said = lang.out_of_memory_line(report.stderr)
    return None if said is None else said[:_TAIL_CHARS]


def _build_failed(report: RunReport) -> bool:
    return report.build_status not in (None, 0)


def _ended_in_build(plan: Plan, report: RunReport) -> bool:
    """The run ended in its build step: the build failed, or the agent never said it was
    done (under gVisor a compiler past the memory limit takes the whole sandbox with it) and
    no program started (a kept build's test has no build status of its own, but a start)."""
    has_build = bool(get_language(plan.request.language).build)
    never_built = report.build_status is None and report.program_ms is None
    return _build_failed(report) or (has_build and never_built)


def _exited_itself(report: RunReport) -> bool:
    """The program ended by returning a status (not by a signal): an OOM kill in the sandbox
    then hit one of its child processes, not the program."""
    return report.exit_code is not None and 0 <= report.exit_code < 128


def limit_notes(report: RunReport, limits: Limits) -> list[str]:
    """Notes on limits that bit without deciding the outcome: a process OOM-killed while the
    program itself exited, forks or threads refused in a run that still succeeded."""
    notes = []
    if report.oom_killed and _exited_itself(report):
        notes.append(
            f"a child process was killed at the memory limit of {limits.memory_mb} MB; the "
            f"program itself exited with status {report.exit_code}"
        )
    if report.pids_refused and report.output_exceeded:
        notes.append(
            "after that its output (a runtime's crash report, often) passed the output limit "
            f"of {limits.output_bytes} bytes, and it was stopped"
        )
    elif report.pids_refused and report.exit_code == 0:
        notes.append(
            f"{report.pids_refused} fork(s) or thread(s) were refused at the limit of "
            f"{limits.pids} tasks; the program carried on and exited with status 0"
        )
    return notes


def explain(
    outcome: Outcome,
    limits: Limits,
    exit_code: int | None,
    stderr: str,
    in_build: bool = False,
    held_after_build: int | None = None,
) -> str | None:
    """One sentence for a run that was not `ok` (None for `ok`); `in_build`: it ended in the
    build step (the program did not run); `held_after_build`: the bytes a finished build left
    in use, more than the program's memory limit (it did not run)."""
    if outcome is Outcome.TIMEOUT:
        return f"the program was stopped at its time limit of {limits.timeout_s:g} s"
    if outcome is Outcome.COMPILE_TIMEOUT:
        return (
            f"compilation was stopped at its time limit of {limits.compile_timeout_s:g} s "
            "(compile_timeout_s); the program did not run"
        )
    if outcome is Outcome.COMPILE_ERROR:
        tail = _telling_line(stderr, compiling=True)
        return f"compilation failed with status {exit_code}" + (f": {tail}" if tail else "")
    if outcome is Outcome.MEMORY_LIMIT and in_build:
        return (
            f"the build step was killed at its memory limit of {limits.build_memory_mb} MB "
            "(compile_memory_mb); the program did not run"
        )
    if outcome is Outcome.MEMORY_LIMIT and held_after_build is not None:
        return (
            f"what the build left ({-(-held_after_build // (1024 * 1024))} MB in use: its "
            "files and the sandbox's own memory) did not fit in the program's memory limit of "
            f"{limits.memory_mb} MB; the program did not run"
        )
    if outcome is Outcome.MEMORY_LIMIT:
        return f"the program was killed at its memory limit of {limits.memory_mb} MB"
    if outcome is Outcome.PIDS_LIMIT:
        return (
            f"the program failed (status {exit_code}) after a fork or thread was refused at "
            f"its limit of {limits.pids} tasks"
        )
    if outcome is Outcome.OUTPUT_LIMIT:
        return (
            f"the program was stopped after writing more than its output limit of "
            f"{limits.output_bytes} bytes"
        )
    if outcome is Outcome.CANCELLED:
        return "the run was stopped by its caller"
    if outcome is Outcome.ERROR and exit_code is None:
        return "the program ended without an exit status the host could read"
    if outcome is Outcome.ERROR:
        tail = _telling_line(stderr)
        status = f"{exit_code}{_signal_note(exit_code)}"
        return f"the program exited with status {status}" + (f": {tail}" if tail else "")
    return None


def time_message(report: RunReport, limits: Limits) -> str | None:
    """The sentence for a program stopped on the CPU clock (backends/container/cpu_time.py); None
    for any other run."""
    if not report.timed_out or report.stopped_by is None or report.compile_timed_out:
        return None
    rule = CpuLimit(limits.timeout_s)
    used = (report.cpu_time_ms or 0.0) / 1000
    wall = report.duration_ms / 1000
    if report.stopped_by == "cpu":
        return f"the program used {used:.2f} s of CPU time, past its limit of {rule.limit_s:g} s"
    if report.stopped_by == "idle":
        return (
            f"the program was stopped as idle: {wall:.2f} s of wall-clock time passed in which "
            f"it used only {used:.2f} s of CPU time (it was sleeping or waiting); the backstop "
            f"is {rule.backstop_s:g} s of its own wall-clock time, the larger of twice its CPU "
            "time limit and the limit plus 1 s"
        )
    return (
        f"the machine was too busy to judge the program: after {wall:.1f} s of wall-clock time "
        f"it had been given only {used:.2f} s of its {rule.limit_s:g} s of CPU time; run it "
        "again on a machine with a core to spare"
    )


def memory_message(report: RunReport, limits: Limits) -> str | None:
    """The sentence for a program whose own peak memory passed its limit without the kernel
    killing it (under runsc, whose cgroup limit is a backstop above it); None otherwise."""
    if not report.memory_exceeded or report.oom_killed or report.peak_memory_bytes is None:
        return None
    used = -(-report.peak_memory_bytes // (1024 * 1024))
    return (
        f"the program's memory reached {used} MB at its peak, past its memory limit of "
        f"{limits.memory_mb} MB"
    )


def _runtime_oom(lang: Language, report: RunReport, limits: Limits) -> str | None:
    """The sentence for a program whose runtime ran out of memory and said so."""
    said = out_of_memory_line(lang, report)
    if said is None or report.oom_killed:
        return None
    return (
        f"the program ran out of memory (its memory limit is {limits.memory_mb} MB) and "
        f"failed with status {report.exit_code}: {said}"
    )


def _signal_note(exit_code: int | None) -> str:
    """` (SIGSEGV)` for a status of 128 + a signal's number: how a shell reports a process
    that a signal ended (a C program's segmentation fault, an abort)."""
    try:
        number = (exit_code or 0) - 128
        return f" ({signal.Signals(number).name})" if number > 0 else ""
    except ValueError:
        return ""


def _telling_line(text: str, compiling: bool = False) -> str:
    """The line of stderr that best says what went wrong: for a build, the compiler's first
    diagnostic; else the last line naming an error (`ValueError: ...`, `Error: boom`,
    `panic: ...`, a missing package); else the last line. Runtimes' footers are skipped."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    lines = [line for line in lines if not _FOOTER.match(line)]
    if not lines:
        return ""
    diagnostics = [line for line in lines if _DIAGNOSTIC.match(line)] if compiling else []
    errors = [line for line in diagnostics if not _WARNING.fullmatch(line)]
    named = [i for i, line in enumerate(lines) if _ERROR_LINE.fullmatch(line)]
    if errors or diagnostics:
        line = (errors or diagnostics)[0]
    elif named:
        line = _with_message(lines, named[-1])
    else:
        line = lines[-1]
    return line if len(line) <= _TAIL_CHARS else line[: _TAIL_CHARS - 1] + "…"


def _with_message(lines: list[str], at: int) -> str:
    """The line at `at`, and the next one when it only introduces it (Rust 1.73 and later
    print a panic's message on the line after `panicked at main.rs:2:5:`)."""
    line = lines[at]
    if line.endswith(":") and "panicked at" in line and at + 1 < len(lines):
        return f"{line} {lines[at + 1]}"
    return line


def report_result(plan: Plan, report: RunReport, notes: Sequence[str]) -> ExecutionResult:
    """The result of a run that happened."""
    lang = get_language(plan.request.language)
    outcome = derive_outcome(report, lang)
    stderr = report.stderr.decode("utf-8", "replace")
    stopped = outcome.exit_status
    exit_code = report.exit_code if stopped is None else stopped
    failed = outcome in (Outcome.ERROR, Outcome.COMPILE_ERROR)
    language, image = plan.request.language, plan.image
    hint = missing_package_note(language, image, stderr, plan.installs) if failed else None
    hint = hint or (offline_note(stderr, plan.network) if failed else None)
    limits = plan.limits
    shown = parse_displays(report.displays, limits.max_displays, limits.max_display_bytes)
    return ExecutionResult(
        outcome=outcome,
        exit_code=exit_code,
        stdout=report.stdout.decode("utf-8", "replace"),
        stderr=stderr,
        truncated=report.output_exceeded,
        duration_ms=report.duration_ms,
        limits=plan.limits,
        runtime=plan.runtime,
        image=plan.image,
        language=plan.request.language,
        trust=plan.request.trust,
        container_id=report.container_id,
        files=MappingProxyType(dict(report.files)),
        error=(
            None
            if outcome is not Outcome.MEMORY_LIMIT
            else memory_message(report, limits) or _runtime_oom(lang, report, limits)
        )
        or time_message(report, plan.limits)
        or explain(
            outcome,
            plan.limits,
            exit_code,
            stderr,
            _ended_in_build(plan, report),
            report.held_after_build,
        ),
        notes=(
            *notes,
            *report.notes,
            *shown.notes,
            *limit_notes(report, plan.limits),
            *([hint] if hint else []),
        ),
        stdout_bytes=report.stdout,
        stderr_bytes=report.stderr,
        peak_memory_bytes=report.peak_memory_bytes,
        cpu_time_ms=report.cpu_time_ms,
        pooled=report.pooled,
        compile_ms=report.build_ms,
        displays=shown.displays,
        result_display=shown.result,
        clock=plan.request.clock or Clock.WALL,
        build_flags=tuple(plan.request.build_flags),
        program_ms=report.program_ms,
        stopped_by=report.stopped_by if outcome is Outcome.TIMEOUT else None,
        exception=program_exception(plan.request.language, stderr)
        if outcome is not Outcome.OK
        else None,
    )


def blocked_result(
    plan: Plan,
    assessment: Assessment,
    explanation: str,
    duration_ms: float,
    message: str | None = None,
) -> ExecutionResult:
    """The result of a run the policy refused: nothing ran. `message`: why, when it is not
    the assessment's level (a session's runtime too weak for the code: run/routing.py)."""
    error = message or (
        f"blocked by the static assessment: {explanation}. Nothing ran: write the code "
        "without that. (A caller allowed to override may run it as it is, with a written "
        "reason: override_reason, or --override-reason.)"
    )
    return _not_run(plan, Outcome.BLOCKED, error, duration_ms, assessment)


def infra_result(plan: Plan, message: str, duration_ms: float) -> ExecutionResult:
    """The result of a run the infrastructure could not carry out: not the code's fault."""
    return _not_run(plan, Outcome.INFRA_ERROR, message, duration_ms, None)


def _not_run(
    plan: Plan,
    outcome: Outcome,
    error: str,
    duration_ms: float,
    assessment: Assessment | None,
) -> ExecutionResult:
    return ExecutionResult(
        outcome=outcome,
        exit_code=None,
        stdout="",
        stderr="",
        truncated=False,
        duration_ms=duration_ms,
        limits=plan.limits,
        runtime=plan.runtime,
        image=plan.image,
        language=plan.request.language,
        trust=plan.request.trust,
        error=error,
        assessment=assessment,
        build_flags=tuple(plan.request.build_flags),
    )
