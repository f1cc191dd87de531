"""What the audit log records about each run: `run.started` before the container starts and
`run.finished` after, so a crash in between leaves a visible gap (a start with no finish)."""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import secrets
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hazmat.audit.log import AuditLog
from hazmat.models import Assessment, ExecutionRequest, ExecutionResult
from hazmat.policy import AuditSettings, Limits, Runtime

__all__ = ["Applied", "Review", "RunRecorder"]

_LINEAGES_REMEMBERED = 256


@dataclass(frozen=True)
class Applied:
    """What a run was given, as the log records it: the limits, runtime and image it really
    got, and the hosts it may reach."""

    limits: Limits
    runtime: Runtime
    image: str
    network: Sequence[str] = ()


class Review:
    """The assessment of a run and what the policy made of it, as the log records them."""

    def __init__(
        self,
        assessment: Assessment,
        decision: str,
        reason: str | None,
        runtime_reason: str | None = None,
    ) -> None:
        self.assessment = assessment
        self.decision = decision
        self.reason = reason
        self.runtime_reason = runtime_reason  # the assessment picked the runtime: why

    def to_record(self) -> dict[str, Any]:
        a = self.assessment
        return {
            "assessment": {
                "level": a.level.value,
                "risk_score": a.risk_score,
                "complete": a.complete,
                "problems": list(a.problems),
                "findings": [
                    {
                        "rule": f.rule,
                        "source": f.source,
                        "severity": f.severity.value,
                        "line": f.line,
                    }
                    for f in a.findings
                    if f.severity.rank > 0
                ][:50],
                "duration_ms": round(a.duration_ms, 3),
            },
            "decision": self.decision,
            "override_reason": self.reason,
            **({"runtime_reason": self.runtime_reason} if self.runtime_reason else {}),
        }


def _digest(data: bytes) -> dict[str, Any]:
    return {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}


class RunRecorder:
    """Writes the records of runs to an audit log; remembers each caller's last code of each
    of its scripts and sessions (`_lineage`)."""

    def __init__(self, log: AuditLog, settings: AuditSettings) -> None:
        self.log = log
        self.code_cap = settings.code_cap
        self._last_code: OrderedDict[tuple[str | None, str, str], str] = OrderedDict()
        self._lock = threading.Lock()

    def started(
        self, request: ExecutionRequest, applied: Applied, review: Review | None = None
    ) -> str:
        """Record the start of a run (durably) and return its run id."""
        return self._request_record("run.started", request, applied, review)

    def blocked(self, request: ExecutionRequest, applied: Applied, review: Review) -> str:
        """Record a run the policy refused (a security event); nothing was started."""
        return self._request_record("run.blocked", request, applied, review)

    def late_findings(self, run_id: str, data: Mapping[str, Any]) -> None:
        """Record what an analyser that ran after the run (Semgrep, async) found."""
        self.log.append("assess.semgrep", {"run": run_id, **data})

    def _request_record(
        self, kind: str, request: ExecutionRequest, applied: Applied, review: Review | None
    ) -> str:
        run_id = secrets.token_hex(8)
        code = request.code.encode()
        self.log.append(
            kind,
            {
                "run": run_id,
                "language": request.language,
                "trust": request.trust.value,
                "caller": request.caller,
                "script": request.script,
                # a session's call: the key every record of a session has (session.opened...)
                "session": request.origin.get("session"),
                "code_sha256": hashlib.sha256(code).hexdigest(),
                "code_bytes": len(code),
                "code": code[: self.code_cap].decode("utf-8", "replace"),
                "code_truncated": len(code) > self.code_cap,
                "diff": self._diff(request),
                "stdin": _digest(request.stdin),
                "files": {name: _digest(data) for name, data in request.files.items()},
                "output_files": list(request.output_files),
                "limits": applied.limits.to_dict(),
                "runtime": applied.runtime.value,
                "image": applied.image,
                "network": list(applied.network),
                **({"origin": origin} if (origin := _origin(request)) else {}),
                **({"build_flags": list(request.build_flags)} if request.build_flags else {}),
                **(review.to_record() if review else {}),
            },
        )
        return run_id

    def finished(self, run_id: str, result: ExecutionResult) -> None:
        self.log.append(
            "run.finished",
            {
                "run": run_id,
                "outcome": result.outcome.value,
                "exit_code": result.exit_code,
                "duration_ms": round(result.duration_ms, 3),
                "truncated": result.truncated,
                "stdout": _digest(result.stdout_bytes),
                "stderr": _digest(result.stderr_bytes),
                "files": {name: _digest(data) for name, data in result.files.items()},
                **({"displays": _displays(result)} if result.displays else {}),
                "limits": result.limits.to_dict(),
                "runtime": result.runtime.value,
                **({"tier": result.tier} if result.tier else {}),
                "container_id": result.container_id,
                "error": result.error,
                "notes": list(result.notes),
                "peak_memory_bytes": result.peak_memory_bytes,
                "cpu_time_ms": None if result.cpu_time_ms is None else round(result.cpu_time_ms, 3),
                "pooled": result.pooled,
                "settings_mismatch": list(result.settings_mismatch),
            },
        )

    def connections(self, run_id: str, connections: Sequence[Mapping[str, Any]]) -> None:
        """One `run.connection` record per connection the run's program asked the allowlist
        proxy for, allowed or refused (egress/proxy.py)."""
        for connection in connections:
            self.log.append("run.connection", {"run": run_id, **connection})

    def session_event(self, kind: str, details: Mapping[str, Any]) -> None:
        """Record a session's opening or end (`session.<kind>`)."""
        self.log.append(f"session.{kind}", dict(details))

    def session_files(
        self, session: str, uploaded: Mapping[str, bytes], downloaded: Mapping[str, bytes]
    ) -> None:
        """Record files written into a session's working directory or read from it."""
        self.log.append(
            "session.files",
            {
                "session": session,
                "uploaded": {name: _digest(data) for name, data in uploaded.items()},
                "downloaded": {name: _digest(data) for name, data in downloaded.items()},
            },
        )

    def security_event(self, kind: str, details: Mapping[str, Any]) -> None:
        """Record a security event (`security.<kind>`), such as a container whose settings
        differ from the policy."""
        self.log.append(f"security.{kind}", dict(details))

    def _diff(self, request: ExecutionRequest) -> str | None:
        """A unified diff against the previous code of the same script, or the same session's
        previous call, from the same caller, if there was one. A script's name is the caller's
        own word (a path, anything): it is taken only with the caller (the service's: the
        tenant's key), so one caller's code never shows in another's diff, nor theirs in its."""
        lineage = _lineage(request)
        if lineage is None:
            return None
        mine = (request.caller, *lineage)
        with self._lock:
            previous = self._last_code.pop(mine, None)
            self._last_code[mine] = request.code
            while len(self._last_code) > _LINEAGES_REMEMBERED:
                self._last_code.popitem(last=False)
        if previous is None:
            previous = _previous_from(self.log, request.caller, lineage)
        if previous is None:
            return None
        lines = difflib.unified_diff(
            previous.splitlines(keepends=True),
            request.code.splitlines(keepends=True),
            "previous",
            "current",
        )
        return "".join(lines)[: self.code_cap]


_LOOK_BACK = 4 * 1024 * 1024  # bytes of the newest segment searched for a script's last code
_CHUNK = 256 * 1024


def _lineage(request: ExecutionRequest) -> tuple[str, str] | None:
    """The runs whose code is diffed one against the next: a script's (`("script", name)`)
    or a session's calls (`("session", id)`); None for a run that is neither."""
    if request.script:
        return ("script", request.script)
    session = request.origin.get("session")
    return ("session", str(session)) if session else None


def _previous_from(log: AuditLog, caller: str | None, lineage: tuple[str, str]) -> str | None:
    """The last complete code recorded for `lineage` by `caller` near the end of the newest
    segment (other processes, such as earlier CLI invocations, may have run it). Reads
    backwards at most 4 MiB and parses only candidate lines; a partial line (a writer
    mid-append) is skipped."""
    segments = sorted((log.dir / "segments").glob("[0-9][0-9][0-9][0-9][0-9][0-9].jsonl"))
    if not segments:
        return None
    needle = json.dumps(lineage[1])[1:-1].encode()
    try:
        with segments[-1].open("rb") as f:
            size = end = f.seek(0, os.SEEK_END)
            carry = b""
            while end > 0 and size - end < _LOOK_BACK:
                start = max(0, end - _CHUNK)
                f.seek(start)
                chunk = f.read(end - start) + carry
                end = start
                if start:  # the first line may begin in the chunk before: keep it for then
                    cut = chunk.find(b"\n") + 1 or len(chunk)
                    carry, chunk = chunk[:cut], chunk[cut:]
                for line in reversed(chunk.split(b"\n")):
                    found = _code_of(line, needle, caller, lineage)
                    if found is not None:
                        return found
    except OSError:
        return None
    return None


def _code_of(
    line: bytes, needle: bytes, caller: str | None, lineage: tuple[str, str]
) -> str | None:
    if b'"kind":"run.started"' not in line or needle not in line:
        return None
    try:
        data: Mapping[str, Any] = json.loads(line)["record"]["data"]
    except (ValueError, KeyError, TypeError):
        return None
    if (
        _recorded_in(data, lineage)
        and data.get("caller") == caller
        and not data.get("code_truncated")
    ):
        return str(data["code"])
    return None


def _recorded_in(data: Mapping[str, Any], lineage: tuple[str, str]) -> bool:
    """Whether a `run.started` record's run is of `lineage` (its `script` or its `session`).
    A record written before the rename has one label, `session`, for a script's name and a
    session's id alike."""
    kind, name = lineage
    if "script" not in data:
        return bool(data.get("session") == name)
    return bool(data.get(kind) == name)


def _origin(request: ExecutionRequest) -> dict[str, Any]:
    """Where the run came from, but its session (recorded as `session`, as a session's own
    records have it): a cluster run's run, worker and attempt."""
    return {key: value for key, value in request.origin.items() if key != "session"}


def _displays(result: ExecutionResult) -> list[dict[str, Any]]:
    """Each display's types with the digest of their data (as UTF-8 for text)."""
    return [
        {
            mime: _digest(data if isinstance(data, bytes) else data.encode())
            for mime, data in d.items()
        }
        for d in result.displays
    ]
