"""Counters and latency of one `Sandbox`: what `Sandbox.metrics()` returns.

Latency is measured end to end through `Sandbox.execute`: assessment, the run itself and the
audit records. Percentiles are over the most recent `window` runs.
"""

from __future__ import annotations

import collections
import statistics
import threading
import time
from dataclasses import asdict, dataclass
from typing import Any

from hazmat.models import ExecutionResult, Outcome

__all__ = ["Metrics", "MetricsSnapshot"]


@dataclass(frozen=True)
class MetricsSnapshot:
    """Totals since the sandbox opened, and latency percentiles over recent runs."""

    runs: int
    ok: int
    errors: int
    compile_errors: int
    compile_timeouts: int
    timeouts: int
    memory_limit_hits: int
    output_limit_hits: int
    pids_limit_hits: int
    blocked: int
    infra_errors: int
    settings_mismatches: int
    cancelled: int
    pool_hits: int
    pool_misses: int
    latency_p50_ms: float | None
    latency_p95_ms: float | None
    uptime_s: float

    def rate(self, count: int) -> float:
        """`count` as a fraction of all runs (0.0 before the first run)."""
        return count / self.runs if self.runs else 0.0

    @property
    def pool_hit_rate(self) -> float:
        asked = self.pool_hits + self.pool_misses
        return self.pool_hits / asked if asked else 0.0

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["rates"] = {
            "ok": self.rate(self.ok),
            "errors": self.rate(self.errors),
            "timeouts": self.rate(self.timeouts),
            "memory_limit_hits": self.rate(self.memory_limit_hits),
            "blocked": self.rate(self.blocked),
            "infra_errors": self.rate(self.infra_errors),
            "pool_hits": self.pool_hit_rate,
            "runs_per_s": self.runs / self.uptime_s if self.uptime_s > 0 else 0.0,
        }
        return data


_OUTCOME_FIELD = {
    Outcome.OK: "ok",
    Outcome.ERROR: "errors",
    Outcome.COMPILE_ERROR: "compile_errors",
    Outcome.COMPILE_TIMEOUT: "compile_timeouts",
    Outcome.TIMEOUT: "timeouts",
    Outcome.MEMORY_LIMIT: "memory_limit_hits",
    Outcome.OUTPUT_LIMIT: "output_limit_hits",
    Outcome.PIDS_LIMIT: "pids_limit_hits",
    Outcome.BLOCKED: "blocked",
    Outcome.INFRA_ERROR: "infra_errors",
    Outcome.CANCELLED: "cancelled",
}


class Metrics:
    """Thread-safe counters fed by `Sandbox.execute`."""

    def __init__(self, window: int = 10_000) -> None:
        self._lock = threading.Lock()
        self._counts: collections.Counter[str] = collections.Counter()
        self._latency: collections.deque[float] = collections.deque(maxlen=window)
        self._opened = time.monotonic()

    def record(self, result: ExecutionResult, latency_ms: float) -> None:
        with self._lock:
            self._counts["runs"] += 1
            self._counts[_OUTCOME_FIELD[result.outcome]] += 1
            if result.settings_mismatch:
                self._counts["settings_mismatches"] += 1
            if result.pooled is True:
                self._counts["pool_hits"] += 1
            elif result.pooled is False:
                self._counts["pool_misses"] += 1
            self._latency.append(latency_ms)

    def snapshot(self) -> MetricsSnapshot:
        with self._lock:
            counts = dict(self._counts)
            latency = sorted(self._latency)
        return MetricsSnapshot(
            runs=counts.get("runs", 0),
            ok=counts.get("ok", 0),
            errors=counts.get("errors", 0),
            compile_errors=counts.get("compile_errors", 0),
            compile_timeouts=counts.get("compile_timeouts", 0),
            timeouts=counts.get("timeouts", 0),
            memory_limit_hits=counts.get("memory_limit_hits", 0),
            output_limit_hits=counts.get("output_limit_hits", 0),
            pids_limit_hits=counts.get("pids_limit_hits", 0),
            blocked=counts.get("blocked", 0),
            infra_errors=counts.get("infra_errors", 0),
            settings_mismatches=counts.get("settings_mismatches", 0),
            cancelled=counts.get("cancelled", 0),
            pool_hits=counts.get("pool_hits", 0),
            pool_misses=counts.get("pool_misses", 0),
            latency_p50_ms=_percentile(latency, 50),
            latency_p95_ms=_percentile(latency, 95),
            uptime_s=time.monotonic() - self._opened,
        )


def _percentile(ordered: list[float], pct: int) -> float | None:
    if not ordered:
        return None
    if len(ordered) == 1:
        return ordered[0]
    return statistics.quantiles(ordered, n=100, method="inclusive")[pct - 1]
