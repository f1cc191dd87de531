"""The values that flow through the pipeline: the request, the outcome and the result."""

from __future__ import annotations

import base64
import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from hazmat._exceptions import InputError
from hazmat.displays import displays_to_json
from hazmat.json_input import check_text
from hazmat.policy import Clock, Limits, Runtime, TrustLevel

__all__ = [
    "Assessment",
    "ExecutionRequest",
    "ExecutionResult",
    "Finding",
    "Outcome",
    "RiskLevel",
    "Severity",
    "check_code",
]


class Outcome(enum.StrEnum):
    """How a run ended, derived from what the engine reports, never from the program's word.

    `exit_status` is the one mapping from outcome to a process exit status: what `hazmat run`
    exits with, and what `ExecutionResult.exit_code` holds for a program hazmat or the kernel
    stopped. None for `ok` and `error`, whose status is the program's own.
    """

    OK = "ok"  # exit status 0
    ERROR = "error"  # non-zero exit status
    COMPILE_ERROR = "compile_error"  # the build step (Go, TypeScript) failed; nothing ran
    COMPILE_TIMEOUT = "compile_timeout"  # the build step outlasted its own budget; nothing ran
    TIMEOUT = "timeout"  # wall-clock limit reached; killed through the engine
    MEMORY_LIMIT = "memory_limit"  # killed by the kernel's OOM killer under the memory cap
    OUTPUT_LIMIT = "output_limit"  # wrote more than the output cap; stopped
    PIDS_LIMIT = "pids_limit"  # failed after a fork or thread was refused at the pids limit
    BLOCKED = "blocked"  # refused before running (static assessment)
    INFRA_ERROR = "infra_error"  # engine down, image missing: not the code's fault
    CANCELLED = "cancelled"  # the caller stopped it while it ran (watch.py); killed

    @property
    def exit_status(self) -> int | None:
        return _EXIT_STATUS.get(self)


_EXIT_STATUS = {
    Outcome.TIMEOUT: 124,
    Outcome.COMPILE_TIMEOUT: 124,
    Outcome.MEMORY_LIMIT: 137,
    Outcome.OUTPUT_LIMIT: 141,
    Outcome.BLOCKED: 126,
    Outcome.INFRA_ERROR: 125,
    Outcome.CANCELLED: 130,
}


class Severity(enum.StrEnum):
    """How dangerous one finding is on its own."""

    INFO = "info"  # worth knowing, adds nothing to the score
    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"
    CRITICAL = "critical"  # shaped like an escape attempt: blocks on its own

    @property
    def rank(self) -> int:
        return list(Severity).index(self)


class RiskLevel(enum.StrEnum):
    """The level of a static assessment, from the findings' risk score."""

    LOW = "LOW"
    MEDIUM = "MEDIUM"
    HIGH = "HIGH"
    BLOCKED = "BLOCKED"

    @property
    def rank(self) -> int:
        return list(RiskLevel).index(self)


@dataclass(frozen=True)
class Finding:
    """One thing an analyser noticed. `line` and `column` are 1-based; 0 when unknown."""

    rule: str
    source: str  # the analyser: python-ast, bandit, semgrep, javascript, go
    severity: Severity
    message: str
    line: int = 0
    column: int = 0
    cwe: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "source": self.source,
            "severity": self.severity.value,
            "line": self.line,
            "column": self.column,
            "message": self.message,
            "cwe": self.cwe,
        }


@dataclass(frozen=True)
class Assessment:
    """The static assessment of one program. `complete` is False when any analyser failed,
    timed out, crashed or skipped the code; the level is then at least HIGH."""

    level: RiskLevel
    risk_score: int  # the findings' weights added (assess/risk.py); not a grader's score
    complete: bool
    findings: Sequence[Finding]
    duration_ms: float
    language: str
    analyzers: Sequence[str] = ()  # the analysers that finished
    problems: Sequence[str] = ()  # why the assessment is incomplete
    syntax_error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "level": self.level.value,
            "risk_score": self.risk_score,
            "score": self.risk_score,  # its former name, until hazmat 1.0
            "complete": self.complete,
            "findings": [f.to_dict() for f in self.findings],
            "duration_ms": round(self.duration_ms, 3),
            "language": self.language,
            "analyzers": list(self.analyzers),
            "problems": list(self.problems),
            "syntax_error": self.syntax_error,
        }

    @property
    def score(self) -> int:
        """`risk_score`'s former name, until hazmat 1.0."""
        import warnings

        warnings.warn(
            "Assessment.score is renamed Assessment.risk_score; the old name goes in hazmat 1.0",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.risk_score


@dataclass(frozen=True)
class ExecutionRequest:
    """Everything a caller asks for in one run. Validated by `Sandbox` before anything runs."""

    code: str
    language: str
    trust: TrustLevel
    stdin: bytes = b""
    files: Mapping[str, bytes] = field(default_factory=lambda: MappingProxyType({}))
    output_files: Sequence[str] = ()
    timeout_s: float | None = None
    compile_timeout_s: float | None = None  # the build step's budget; None: the level's
    memory_mb: int | None = None
    runtime: Runtime | None = None
    # what timeout_s measures: wall-clock time, or the program's CPU time (a grader's test,
    # with a whole CPU: backends/container/cpu_time.py); None: wall-clock time
    clock: Clock | None = None
    cpus: float | None = None  # at most the level's cpus (measured_cpus on the CPU clock)
    output_bytes: int | None = None  # stdout and stderr together, at most the level's
    env: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))  # the program's
    args: Sequence[str] = ()  # the program's command-line arguments (after the file name)
    caller: str | None = None  # who asked, as the caller names itself (recorded in the audit log)
    # a script's name (the caller's word: `hazmat run` sends the file's path); the audit log
    # diffs each run's code against the last of the same script from the same caller (was
    # `session`, which also named a session's id: a session call's is in `origin`)
    script: str | None = None
    override_reason: str | None = None  # lets code the policy blocks run; recorded
    image: str | None = None  # an image the trust level allows; None: the level's default
    module: str | None = None  # JavaScript/TypeScript: "esm" or "commonjs"; None: detected
    network: Sequence[str] | None = None  # hosts to reach (within the level's); None: the level's
    # where the run came from beyond its caller, recorded with it: a session's call's
    # {"session": id}, a cluster run's {"run": id, "worker": name, "attempt": n}
    origin: Mapping[str, str | int] = field(default_factory=lambda: MappingProxyType({}))
    # Python: the formats matplotlib figures are shown in (displays.py); png, svg, pdf, jpeg
    figure_formats: Sequence[str] = ("png",)
    # Python: "result": the last line's value given back as the result display, not printed
    # (ExecutionResult.result_display); None: the program's own way
    final_value: str | None = None
    # C and C++: compiler flags from the level's allowlist (build_flags.py), after hazmat's own
    build_flags: Sequence[str] = ()
    # the intake's check of this very request against a policy (run/intake.py), so that no
    # stage checks it again; not a field a caller sets, and `dataclasses.replace` drops it
    checked: object = field(default=None, init=False, repr=False, compare=False)


@dataclass(frozen=True)
class ProgramException:
    """The exception a failed program ended with (run/program_error.py): `name`
    ("ZeroDivisionError"), `value` ("division by zero") and `traceback`, the program's own
    frames as it printed them (hazmat's never show)."""

    name: str
    value: str
    traceback: str

    def to_dict(self) -> dict[str, str]:
        return {"name": self.name, "value": self.value, "traceback": self.traceback}


@dataclass(frozen=True)
class ExecutionResult:
    """What happened in one run. `limits` and `runtime` are what was really applied.

    `exit_code` is the program's own exit status when it ended by itself (`ok`, `error`); for
    a program that was stopped it is the outcome's status (124 timeout, 137 memory limit, 141
    output limit), the same number `hazmat run` exits with; None when nothing ran (`blocked`,
    `infra_error`). Every result that is not `ok` carries `error`: one sentence saying what
    happened, the same the CLI prints. `stdout` and `stderr` are decoded as UTF-8 with invalid
    bytes replaced; `stdout_bytes` and `stderr_bytes` hold them exactly as the program wrote
    them (both within the output cap).
    """

    outcome: Outcome
    exit_code: int | None
    stdout: str
    stderr: str
    truncated: bool
    duration_ms: float
    limits: Limits
    runtime: Runtime
    image: str
    language: str
    trust: TrustLevel
    container_id: str | None = None
    files: Mapping[str, bytes] = field(default_factory=lambda: MappingProxyType({}))
    error: str | None = None
    notes: Sequence[str] = ()
    stdout_bytes: bytes = field(default=b"", repr=False)
    stderr_bytes: bytes = field(default=b"", repr=False)
    assessment: Assessment | None = None
    decision: str | None = None  # run, warn, block or override (see Decision)
    override_reason: str | None = None
    peak_memory_bytes: int | None = None  # the container's peak, from its cgroup on the host
    # CPU time the container used during the run; on the CPU clock, the program's alone
    # (from its start, after any build, to its end: backends/container/cpu_time.py)
    cpu_time_ms: float | None = None
    pooled: bool | None = None  # True: a container from the warm pool; False: a cold start
    settings_mismatch: Sequence[str] = ()  # the engine's settings that differ from the policy
    compile_ms: float | None = None  # the build step's time (None: the language has none)
    # every connection the program asked the allowlist proxy for, allowed or refused
    connections: Sequence[Mapping[str, Any]] = ()
    # what a Python program showed, in order (displays.py): each a MIME type -> data mapping,
    # bytes for binary types (a PNG), text for the others (HTML, plain text)
    displays: Sequence[Mapping[str, bytes | str]] = ()
    # which of `displays` is the value of the code's last line, when `final_value` asked for it
    result_display: int | None = None
    clock: Clock = Clock.WALL  # what limits.timeout_s measured
    # the program's own wall-clock time, from its start (after any build) to its end
    program_ms: float | None = None
    # why `runtime` is stronger than the level (or the caller) asked: the assessment picked it
    # (the policy's `assess.runtime_for`: run/routing.py); None when it did not
    runtime_reason: str | None = None
    # what made the sandbox: "docker" (the engine) or "oci" (runc and runsc directly); None
    # when nothing was started (`blocked`) or the backend makes no containers (a test's fake)
    tier: str | None = None
    # the exception a Python or JavaScript/TypeScript program ended with, read from its stderr
    exception: ProgramException | None = None
    build_flags: Sequence[str] = ()  # the compiler flags the build was given (build_flags.py)
    # the audit log's id of this run: its run.started (or run.blocked) and run.finished records
    # carry it as `run`; None when it was not recorded (a result made by hand)
    run_id: str | None = None
    # what ended a run on the CPU clock that timed out: `cpu` (its CPU-time limit) or `idle`
    # (the wall-clock backstop of a program that sleeps or waits: a judge's idleness limit);
    # None for any other run
    stopped_by: str | None = None

    @property
    def ok(self) -> bool:
        return self.outcome is Outcome.OK

    @property
    def exit_status(self) -> int:
        """What a shell sees: `hazmat run`'s exit status for this result."""
        fixed = self.outcome.exit_status
        if fixed is not None:
            return fixed
        code = self.exit_code or 0
        return code if 0 <= code <= 255 else 1

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict; output files are base64-encoded."""
        return {
            "outcome": self.outcome.value,
            "exit_code": self.exit_code,
            "stdout": self.stdout,
            "stderr": self.stderr,
            "truncated": self.truncated,
            "duration_ms": round(self.duration_ms, 3),
            "limits": self.limits.to_dict(),
            "runtime": self.runtime.value,
            "image": self.image,
            "language": self.language,
            "trust": self.trust.value,
            "container_id": self.container_id,
            "files": {
                name: base64.b64encode(data).decode("ascii") for name, data in self.files.items()
            },
            "error": self.error,
            "notes": list(self.notes),
            "assessment": self.assessment.to_dict() if self.assessment else None,
            "decision": self.decision,
            "override_reason": self.override_reason,
            "peak_memory_bytes": self.peak_memory_bytes,
            "cpu_time_ms": None if self.cpu_time_ms is None else round(self.cpu_time_ms, 3),
            "pooled": self.pooled,
            "settings_mismatch": list(self.settings_mismatch),
            "compile_ms": None if self.compile_ms is None else round(self.compile_ms, 3),
            "connections": [dict(c) for c in self.connections],
            "displays": displays_to_json(self.displays),
            "result_display": self.result_display,
            "clock": self.clock.value,
            "program_ms": None if self.program_ms is None else round(self.program_ms, 3),
            "runtime_reason": self.runtime_reason,
            "tier": self.tier,
            "exception": self.exception.to_dict() if self.exception else None,
            "build_flags": list(self.build_flags),
            "run_id": self.run_id,
            "stopped_by": self.stopped_by,
        }


def check_code(code: str | bytes) -> str:
    """The code as text: UTF-8, not empty, no NUL bytes."""
    if isinstance(code, bytes | bytearray):
        try:
            code = bytes(code).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(f"code is not valid UTF-8 (byte {exc.start}: {exc.reason})") from None
    if not isinstance(code, str):
        raise InputError(f"code must be str or bytes, not {type(code).__name__}")
    if not code.strip():
        raise InputError("code is empty")
    if "\x00" in code:
        raise InputError(f"code contains a NUL byte (at character {code.index(chr(0))})")
    return check_text(code, "code")
