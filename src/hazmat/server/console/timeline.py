"""Runs over time, for the console's charts: per minute and tenant, for the last hour, the runs
by outcome, their latency (the run's whole time in the service's pipeline: p50 and p95) and how
many started from the warm pool. Counted as each run ends; in memory only (Prometheus, at
/metrics, is the record for longer)."""

from __future__ import annotations

import math
import threading
import time
from collections import Counter
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Any

from hazmat.models import ExecutionResult

__all__ = ["Timeline"]

MINUTES = 60


@dataclass
class _Minute:
    outcomes: Counter[str] = field(default_factory=Counter)
    latencies_ms: list[float] = field(default_factory=list)
    pooled: int = 0
    cold: int = 0


class Timeline:
    def __init__(self, minutes: int = MINUTES, clock: Callable[[], float] = time.time) -> None:
        self.minutes = minutes
        self.clock = clock
        self._lock = threading.Lock()
        self._counts: dict[tuple[int, str], _Minute] = {}
        self._pruned = 0  # the minute whose older counts were last dropped

    def add(self, tenant: str, result: ExecutionResult, latency_ms: float) -> None:
        now = int(self.clock() // 60)
        with self._lock:
            minute = self._counts.setdefault((now, tenant), _Minute())
            minute.outcomes[result.outcome.value] += 1
            minute.latencies_ms.append(latency_ms)
            minute.pooled += result.pooled is True
            minute.cold += result.pooled is False
            if now != self._pruned:  # once a minute: older counts go
                self._pruned = now
                for old in [k for k in self._counts if k[0] <= now - self.minutes]:
                    del self._counts[old]

    def series(self, tenants: Collection[str] | None) -> dict[str, Any]:
        """The last hour, one point a minute, of `tenants`' runs (None: everyone's): uPlot's
        columns, the minutes (seconds since the epoch) first."""
        now = int(self.clock() // 60)
        span = range(now - self.minutes + 1, now + 1)
        merged = {m: _Minute() for m in span}
        with self._lock:
            for (m, tenant), counts in self._counts.items():
                if m in merged and (tenants is None or tenant in tenants):
                    into = merged[m]
                    into.outcomes.update(counts.outcomes)
                    into.latencies_ms.extend(counts.latencies_ms)
                    into.pooled += counts.pooled
                    into.cold += counts.cold
        minutes = [merged[m] for m in span]
        outcomes = sorted({o for m in minutes for o in m.outcomes})
        return {
            "minutes": [m * 60 for m in span],
            "outcomes": {o: [m.outcomes[o] for m in minutes] for o in outcomes},
            "p50_ms": [_percentile(m.latencies_ms, 50) for m in minutes],
            "p95_ms": [_percentile(m.latencies_ms, 95) for m in minutes],
            "pooled": [m.pooled for m in minutes],
            "cold": [m.cold for m in minutes],
        }


def _percentile(values: list[float], q: float) -> float | None:
    """The nearest-rank percentile; None for a minute with no run (a gap in the chart)."""
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)], 1)
