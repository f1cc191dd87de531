"""The service's recent runs, for the console: the last `capacity` runs (playground, HTTP, MCP
and session calls alike), each with its request and result, in memory only and within a
budget of bytes (code, output, files and displays), the oldest forgotten first; and their
counts over time (timeline.py). The audit log is the record that lasts; this is what a person
looks at."""

from __future__ import annotations

import secrets
import threading
import time
from collections import deque
from dataclasses import dataclass

from hazmat.models import ExecutionRequest, ExecutionResult
from hazmat.server.console.timeline import Timeline
from hazmat.service.tenant_keys import Key

__all__ = ["RecentRuns", "Seen"]

CAPACITY = 500
BUDGET_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class Seen:
    """One run as the console shows it."""

    id: str
    at: float  # when it ended, seconds since the epoch
    tenant: str
    request: ExecutionRequest
    result: ExecutionResult
    size: int  # the bytes it holds, about
    audit_at: int  # the audit log's size when it ended: its records are about there


class RecentRuns:
    def __init__(self, capacity: int = CAPACITY, budget_bytes: int = BUDGET_BYTES) -> None:
        self.capacity = capacity
        self.budget_bytes = budget_bytes
        self.timeline = Timeline()
        self._runs: deque[Seen] = deque()
        self._held = 0
        self._lock = threading.Lock()

    def add(
        self, request: ExecutionRequest, result: ExecutionResult, latency_ms: float, audit_at: int
    ) -> Seen:
        tenant = tenant_of(request.caller)
        size = _size(request, result)
        run_id = result.run_id or "r-" + secrets.token_hex(8)  # the audit log's id, if it has one
        seen = Seen(run_id, time.time(), tenant, request, result, size, audit_at)
        self.timeline.add(tenant, result, latency_ms)
        with self._lock:
            self._runs.append(seen)
            self._held += seen.size
            while len(self._runs) > self.capacity or (
                self._held > self.budget_bytes and len(self._runs) > 1
            ):
                self._held -= self._runs.popleft().size
        return seen

    def visible(self, key: Key, operator: bool) -> list[Seen]:
        """Newest first: the key's tenant's runs, or every run for an operator."""
        with self._lock:
            runs = list(self._runs)
        return [s for s in reversed(runs) if operator or s.tenant == key.tenant]

    def get(self, run_id: str, key: Key, operator: bool) -> Seen | None:
        """The run, if this key may see it (else None, as for an id that never was)."""
        return next((s for s in self.visible(key, operator) if s.id == run_id), None)


def tenant_of(caller: str | None) -> str:
    """The tenant in a key's caller (`tenant:NAME key:ID`, tenant_keys.Key.caller); a run
    without one (the service's own) is nobody's: `-`."""
    first = (caller or "").split(" ", 1)[0]
    return first.removeprefix("tenant:") if first.startswith("tenant:") else "-"


def _size(request: ExecutionRequest, result: ExecutionResult) -> int:
    shown = [request.code.encode(), request.stdin, result.stdout.encode(), result.stderr.encode()]
    shown += [result.stdout_bytes, result.stderr_bytes]
    shown += [*request.files.values(), *result.files.values()]
    shown += [
        v if isinstance(v, bytes) else v.encode() for d in result.displays for v in d.values()
    ]
    return 1024 + sum(len(b) for b in shown)
