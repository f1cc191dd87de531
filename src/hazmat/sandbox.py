"""Sandbox: the one pipeline every front-end calls. Validate, assess, decide, execute, derive.

    with hazmat.Sandbox() as sandbox:
        result = sandbox.run("print(6 * 7)", language="python")
        print(result.outcome, result.stdout)

Bad requests raise `InputError` before anything runs. Every run is assessed first; code the
policy blocks comes back with outcome `blocked` unless the caller gave an `override_reason`.
Everything that goes wrong after that comes back as a result: the program's own failures as
`error`, `timeout`, `memory_limit` or `output_limit`; the infrastructure's as `infra_error`
with the reason in `result.error`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import MappingProxyType, TracebackType
from typing import TypedDict, Unpack

from hazmat._exceptions import (
    InfraError,
    InputError,
    InputTooLarge,
    PolicyError,
    SettingsMismatch,
)
from hazmat.assess.assessor import Assessor
from hazmat.assess.decision import Decision, check_override_reason, decide, explain
from hazmat.assess.verdict import verdict
from hazmat.audit.log import AuditLog, open_audit_log
from hazmat.audit.runs import Review, RunRecorder
from hazmat.backends.agent import Payload
from hazmat.backends.base import Backend, Job, RunReport, Spec
from hazmat.languages import Language, get_language
from hazmat.metrics import Metrics, MetricsSnapshot
from hazmat.models import Assessment, ExecutionRequest, ExecutionResult, Outcome
from hazmat.policy import (
    Limits,
    Policy,
    Runtime,
    SemgrepMode,
    TrustLevel,
    load_policy,
    parse_trust,
)
from hazmat.validation import check_code, check_file_name, to_bytes

__all__ = ["RunOptions", "Sandbox", "derive_outcome"]

log = logging.getLogger(__name__)


class RunOptions(TypedDict, total=False):
    """The keyword options of `Sandbox.run`, `arun` and `request`."""

    trust: TrustLevel | str | None
    stdin: str | bytes | None
    files: Mapping[str, str | bytes] | None
    output_files: Sequence[str]
    timeout: float | None
    memory_mb: int | None
    runtime: Runtime | str | None
    caller: str | None
    session: str | None
    override_reason: str | None


class Sandbox:
    """Runs untrusted code in fresh, hardened containers under a policy.

    `policy` is a `Policy`, a path to a YAML policy file, or None for the built-in default.
    `backend` defaults to a warm pool (`PoolBackend`, sized by the policy's `pool` section)
    over a `DockerBackend` on the engine named by the environment; `pool=False` (or a pool
    size of 0) gives the cold path alone, which suits a single run. `assessor` defaults to an
    `Assessor` with its default budgets (its worker starts right away).
    """

    def __init__(
        self,
        policy: Policy | str | Path | None = None,
        *,
        backend: Backend | None = None,
        audit: AuditLog | None = None,
        assessor: Assessor | None = None,
        pool: bool = True,
    ) -> None:
        if policy is None:
            policy = Policy()
        elif isinstance(policy, str | Path):
            policy = load_policy(policy)
        self.policy = policy
        self._owns_audit = audit is None
        self.audit = audit or open_audit_log(policy.audit)
        self._recorder = RunRecorder(self.audit, policy.audit)
        self.backend = backend or _default_backend(policy, pool)
        if self.backend.on_security_event is None:
            self.backend.on_security_event = self._recorder.security_event
        self._metrics = Metrics()
        self._owns_assessor = assessor is None
        self.assessor = assessor or Assessor()
        self.assessor.start()
        self._later: ThreadPoolExecutor | None = None
        self._later_lock = threading.Lock()
        for name in policy.pool.prewarm:
            try:
                self.warm(name)
            except InfraError as exc:
                log.warning("hazmat: cannot prewarm %s: %s", name, exc)

    def warm(
        self,
        language: str = "python",
        trust: TrustLevel | str | None = None,
        runtime: Runtime | str | None = None,
        wait: float = 0,
    ) -> Spec:
        """Start filling the warm pool for `language` at `trust` (default: the policy's
        default level) in the background, and keep it filled; does nothing without a pool.
        With `wait`, block up to that many seconds until it is full. Returns the kind of
        container it asked for."""
        lang = get_language(language)
        level = parse_trust(trust if trust is not None else self.policy.default_trust)
        settings = self.policy.settings(level)
        limits = settings.limits.clamped(self.backend.resources())
        image = self.policy.images.get(lang.name, lang.image)
        spec = Spec.of(lang.name, image, _parse_runtime(runtime) or settings.runtime, limits)
        self.backend.warm(spec)
        if wait > 0 and not self.backend.wait_warm(spec, wait):
            raise InfraError(f"the warm pool for {lang.name} did not fill in {wait:g} s")
        return spec

    def metrics(self) -> MetricsSnapshot:
        """Totals and rates since this sandbox opened (runs, outcomes, blocked, pool hits and
        misses) and the latency p50/p95 of recent runs, end to end."""
        return self._metrics.snapshot()

    def run(
        self, code: str | bytes, language: str = "python", **options: Unpack[RunOptions]
    ) -> ExecutionResult:
        """Run `code` once in a new container and return what happened.

        Options: `trust`, `stdin`, `files` (name -> content, copied into the working
        directory), `output_files` (names to collect afterwards), `timeout` (seconds),
        `memory_mb`, `runtime` ("runc" or "runsc"), `caller` and `session` (recorded in the
        audit log), `override_reason` (lets code the policy blocks run; recorded).
        """
        return self.execute(self.request(code, language, **options))

    async def arun(
        self, code: str | bytes, language: str = "python", **options: Unpack[RunOptions]
    ) -> ExecutionResult:
        """`run`, without blocking the event loop (the run happens in a worker thread)."""
        return await asyncio.to_thread(functools.partial(self.run, code, language, **options))

    def request(
        self, code: str | bytes, language: str = "python", **options: Unpack[RunOptions]
    ) -> ExecutionRequest:
        """Build and validate a request without running it; raises `InputError` if it is bad."""
        lang = get_language(language)
        trust = options.get("trust")
        files = options.get("files") or {}
        stdin = options.get("stdin")
        level = parse_trust(trust if trust is not None else self.policy.default_trust)
        reason = check_override_reason(
            options.get("override_reason"), self.policy.settings(level).assess
        )
        request = ExecutionRequest(
            code=check_code(code),
            language=lang.name,
            trust=level,
            stdin=to_bytes(stdin if stdin is not None else b"", "stdin"),
            files=MappingProxyType(
                {check_file_name(n): to_bytes(d, f"file {n!r}") for n, d in files.items()}
            ),
            output_files=tuple(check_file_name(n) for n in options.get("output_files", ())),
            timeout_s=options.get("timeout"),
            memory_mb=options.get("memory_mb"),
            runtime=_parse_runtime(options.get("runtime")),
            caller=options.get("caller"),
            session=options.get("session"),
            override_reason=reason,
        )
        self._check_sizes(request, lang, self._limits(request))
        return request

    def execute(self, request: ExecutionRequest) -> ExecutionResult:
        """Assess a validated request, and run it through the backend if the policy allows;
        derive its outcome and record everything.

        The `run.started` record (with the assessment) is durable before anything starts, and
        `run.finished` before the result is returned; a refused run is recorded as
        `run.blocked`. If the audit log cannot record, `AuditError` is raised and nothing runs.
        """
        lang = get_language(request.language)
        settings = self.policy.settings(request.trust)
        # `execute` may be given a request built by hand: check its reason here as well
        reason = check_override_reason(request.override_reason, settings.assess)
        runtime = request.runtime or settings.runtime
        image = self.policy.images.get(lang.name, lang.image)
        limits = self._limits(request)
        notes: list[str] = []
        started = time.monotonic()
        assessment = self.assessor.assess(
            request.code,
            lang.name,
            semgrep=settings.assess.semgrep is SemgrepMode.SYNC,
            max_bytes=limits.max_code_bytes,
        )
        decision = decide(assessment, settings.assess, reason)
        review = Review(assessment, decision.value, reason)
        if decision is Decision.BLOCK:
            self._recorder.blocked(request, limits, runtime, image, review)
            blocked = _blocked_result(request, limits, runtime, image, assessment, started)
            self._metrics.record(blocked, (time.monotonic() - started) * 1000)
            return blocked
        if decision is Decision.OVERRIDE:
            notes.append(f"assessment {explain(assessment)}; run on an override")
        elif decision is Decision.WARN:
            notes.append(f"assessment {explain(assessment)}")
        infra: InfraError | None = None
        mismatch: tuple[str, ...] = ()
        try:
            applied = limits.clamped(self.backend.resources())
            notes.extend(_clamp_notes(limits, applied))
        except InfraError as exc:
            applied, infra = limits, exc
        run_id = self._recorder.started(request, applied, runtime, image, review)
        if infra is None:
            try:
                payload = Payload(
                    files={lang.source_name: request.code.encode(), **request.files},
                    want=request.output_files,
                    stdin=request.stdin,
                    max_file_bytes=applied.max_file_bytes,
                )
                job = Job(lang, image, applied, runtime, request.trust, payload)
                report = self.backend.execute(job)
                result = _result(request, report, applied, runtime, image, notes)
            except SettingsMismatch as exc:
                infra, mismatch = exc, exc.problems
                self._recorder.security_event(
                    "settings_mismatch", {"where": "run", "run": run_id, "problems": list(mismatch)}
                )
            except InfraError as exc:
                infra = exc
        if infra is not None:
            elapsed = (time.monotonic() - started) * 1000
            result = _infra_result(request, applied, runtime, image, str(infra), elapsed)
        result = dataclasses.replace(
            result,
            assessment=assessment,
            decision=decision.value,
            override_reason=reason,
            settings_mismatch=mismatch,
        )
        self._recorder.finished(run_id, result)
        if settings.assess.semgrep is SemgrepMode.ASYNC:
            self._semgrep_later(run_id, request, assessment)
        self._metrics.record(result, (time.monotonic() - started) * 1000)
        return result

    def _semgrep_later(
        self, run_id: str, request: ExecutionRequest, assessment: Assessment
    ) -> None:
        """Scan with Semgrep after the run; its findings go to the audit log (`assess.semgrep`)."""

        def scan() -> None:
            report = self.assessor.semgrep.scan(request.code, request.language)
            merged = verdict(
                [*assessment.findings, *report.findings],
                language=request.language,
                duration_ms=assessment.duration_ms + report.duration_ms,
                analyzers=[*assessment.analyzers, "semgrep"],
                problems=[*assessment.problems, *([report.problem] if report.problem else [])],
            )
            self._recorder.late_findings(
                run_id,
                {
                    "findings": [f.to_dict() for f in report.findings],
                    "problem": report.problem,
                    "cached": report.cached,
                    "duration_ms": round(report.duration_ms, 3),
                    "level_before": assessment.level.value,
                    "level_after": merged.level.value,
                },
            )

        with self._later_lock:
            if self._later is None:
                self._later = ThreadPoolExecutor(1, thread_name_prefix="hazmat-semgrep")
            self._later.submit(scan)

    def _limits(self, request: ExecutionRequest) -> Limits:
        limits = self.policy.settings(request.trust).limits
        changes: dict[str, object] = {}
        if request.timeout_s is not None:
            changes["timeout_s"] = request.timeout_s
        if request.memory_mb is not None:
            changes["memory_mb"] = request.memory_mb
        try:
            return limits.replace(**changes) if changes else limits
        except PolicyError as exc:
            raise InputError(str(exc)) from None

    def _check_sizes(self, request: ExecutionRequest, lang: Language, limits: Limits) -> None:
        code_size = len(request.code.encode())
        if code_size > limits.max_code_bytes:
            raise InputTooLarge(
                f"code is {code_size} bytes; the limit for trust level "
                f"{request.trust.value!r} is {limits.max_code_bytes}"
            )
        if len(request.files) > limits.max_files or len(request.output_files) > limits.max_files:
            raise InputTooLarge(f"at most {limits.max_files} input or output files per run")
        for name, data in request.files.items():
            if name == lang.source_name:
                raise InputError(f"file name {name!r} is taken by the {lang.name} source file")
            if len(data) > limits.max_file_bytes:
                raise InputTooLarge(
                    f"file {name!r} is {len(data)} bytes; the limit is {limits.max_file_bytes}"
                )
        if len(request.stdin) > limits.max_file_bytes:
            raise InputTooLarge(
                f"stdin is {len(request.stdin)} bytes; the limit is {limits.max_file_bytes}"
            )
        total = code_size + sum(len(d) for d in request.files.values())
        if total > limits.tmpfs_mb * 1024 * 1024:
            raise InputTooLarge(
                f"code and files come to {total} bytes, more than the {limits.tmpfs_mb} MB "
                "working directory"
            )

    def close(self) -> None:
        """Wait for pending Semgrep scans, close the backend and the assessor, and the audit
        log if this sandbox opened it (a final checkpoint)."""
        if self._later is not None:
            self._later.shutdown(wait=True)
        self.backend.close()
        if self._owns_assessor:
            self.assessor.close()
        if self._owns_audit:
            self.audit.close()

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def _default_backend(policy: Policy, pool: bool) -> Backend:
    from hazmat.backends.docker import DockerBackend

    docker = DockerBackend()
    if not pool or policy.pool.size == 0 or policy.pool.max_containers == 0:
        return docker
    from hazmat.backends.pool import PoolBackend

    return PoolBackend(docker, policy.pool)


def derive_outcome(report: RunReport) -> Outcome:
    """The outcome, from the facts the host and the engine observed, most decisive first."""
    if report.timed_out:
        return Outcome.TIMEOUT
    if report.output_exceeded:
        return Outcome.OUTPUT_LIMIT
    if report.oom_killed:
        return Outcome.MEMORY_LIMIT
    if report.exit_code == 0:
        return Outcome.OK
    return Outcome.ERROR


def _parse_runtime(value: Runtime | str | None) -> Runtime | None:
    if value is None:
        return None
    try:
        return Runtime(value)
    except ValueError:
        raise InputError(f"unknown runtime {value!r} (expected runc or runsc)") from None


def _clamp_notes(asked: Limits, applied: Limits) -> list[str]:
    notes = []
    if applied.memory_mb < asked.memory_mb:
        notes.append(
            f"memory lowered from {asked.memory_mb} MB to {applied.memory_mb} MB (host share)"
        )
    if applied.cpus < asked.cpus:
        notes.append(f"cpus lowered from {asked.cpus:g} to {applied.cpus:g} (host has no more)")
    return notes


def _result(
    request: ExecutionRequest,
    report: RunReport,
    limits: Limits,
    runtime: Runtime,
    image: str,
    notes: list[str],
) -> ExecutionResult:
    return ExecutionResult(
        outcome=derive_outcome(report),
        exit_code=report.exit_code,
        stdout=report.stdout.decode("utf-8", "replace"),
        stderr=report.stderr.decode("utf-8", "replace"),
        truncated=report.output_exceeded,
        duration_ms=report.duration_ms,
        limits=limits,
        runtime=runtime,
        image=image,
        language=request.language,
        trust=request.trust,
        container_id=report.container_id,
        files=MappingProxyType(dict(report.files)),
        notes=tuple(notes) + report.notes,
        stdout_bytes=report.stdout,
        stderr_bytes=report.stderr,
        peak_memory_bytes=report.peak_memory_bytes,
        cpu_time_ms=report.cpu_time_ms,
        pooled=report.pooled,
    )


def _blocked_result(
    request: ExecutionRequest,
    limits: Limits,
    runtime: Runtime,
    image: str,
    assessment: Assessment,
    started: float,
) -> ExecutionResult:
    return ExecutionResult(
        outcome=Outcome.BLOCKED,
        exit_code=None,
        stdout="",
        stderr="",
        truncated=False,
        duration_ms=(time.monotonic() - started) * 1000,
        limits=limits,
        runtime=runtime,
        image=image,
        language=request.language,
        trust=request.trust,
        error=(
            f"blocked by the static assessment: {explain(assessment)}. To run it anyway, "
            "give an override reason (override_reason=..., or --override-reason)."
        ),
        assessment=assessment,
        decision=Decision.BLOCK.value,
    )


def _infra_result(
    request: ExecutionRequest,
    limits: Limits,
    runtime: Runtime,
    image: str,
    message: str,
    elapsed_ms: float,
) -> ExecutionResult:
    return ExecutionResult(
        outcome=Outcome.INFRA_ERROR,
        exit_code=None,
        stdout="",
        stderr="",
        truncated=False,
        duration_ms=elapsed_ms,
        limits=limits,
        runtime=runtime,
        image=image,
        language=request.language,
        trust=request.trust,
        error=message,
    )
