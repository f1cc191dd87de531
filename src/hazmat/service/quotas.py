"""Per-tenant quotas: what a tenant key may use (`Quotas`) and the book that counts it: runs at
once and runs started in the last minute (a sliding window). The service (server/) and the
cluster (cluster/redis_quotas.py, the same book held in Redis) both count with these.

A run over either limit is refused at once with `QuotaExceeded`, which carries when to try
again (the service's `Retry-After`); nothing queues without bound. Counted per tenant, with the
limits of the key the request came with.
"""

from __future__ import annotations

import collections
import contextlib
import math
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import MappingProxyType

from hazmat._exceptions import InputError, QuotaExceeded, quoted

__all__ = ["QUOTA_BOUNDS", "QuotaBook", "Quotas"]

WINDOW_S = 60.0
MiB = 1024 * 1024

QUOTA_BOUNDS = MappingProxyType(
    {"concurrent": (1, 1024), "per_minute": (1, 100_000), "max_request_bytes": (1024, 256 * MiB)}
)


@dataclass(frozen=True)
class Quotas:
    """What one key may use: runs at once, runs started per minute, bytes in one request."""

    concurrent: int = 4
    per_minute: int = 120
    max_request_bytes: int = 8 * MiB

    def __post_init__(self) -> None:
        for name, (low, high) in QUOTA_BOUNDS.items():
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise InputError(
                    f"{name} must be a whole number in {low}..{high}, got {quoted(value)}"
                )


class QuotaBook:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._active: collections.Counter[str] = collections.Counter()
        self._starts: dict[str, collections.deque[float]] = {}

    @contextlib.contextmanager
    def admit(self, tenant: str, quotas: Quotas) -> Iterator[None]:
        """Count one run of `tenant` while the block runs, or raise `QuotaExceeded`."""
        with self._lock:
            now = self._clock()
            starts = self._starts.setdefault(tenant, collections.deque())
            while starts and starts[0] <= now - WINDOW_S:
                starts.popleft()
            if self._active[tenant] >= quotas.concurrent:
                raise QuotaExceeded(
                    f"tenant {tenant!r} already has {quotas.concurrent} run(s) going "
                    "(its concurrent quota)",
                    1.0,
                )
            if len(starts) >= quotas.per_minute:
                wait = max(1.0, math.ceil(starts[0] + WINDOW_S - now))
                raise QuotaExceeded(
                    f"tenant {tenant!r} started {quotas.per_minute} runs in the last minute "
                    "(its per-minute quota)",
                    wait,
                )
            self._active[tenant] += 1
            starts.append(now)
        try:
            yield
        finally:
            with self._lock:
                self._active[tenant] -= 1

    def active(self, tenant: str) -> int:
        with self._lock:
            return self._active[tenant]

    def started(self, tenant: str) -> int:
        """The tenant's runs started in the last minute (what its per-minute quota counts)."""
        with self._lock:
            now = self._clock()
            return sum(1 for t in self._starts.get(tenant, ()) if t > now - WINDOW_S)
