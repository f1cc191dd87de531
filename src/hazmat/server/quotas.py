"""Per-tenant quotas: runs at once and runs started in the last minute (a sliding window).

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

from hazmat._exceptions import QuotaExceeded
from hazmat.server.keys import Quotas

__all__ = ["QuotaBook"]

WINDOW_S = 60.0


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
