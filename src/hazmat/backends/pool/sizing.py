"""How many leases the warm pool keeps ready for each kind: it sizes itself to the demand.

Each kind starts at the policy's `pool.size`. A run that finds none ready (a miss) shows the
pool was too small for the pace of its callers, so the kind's target grows by one, up to
`pool.max_size`, as long as the machine has memory to spare (`MemAvailable` above
`MEMORY_RESERVE` of the total, when the engine is on this machine). A kind with no miss for
`SHRINK_AFTER_S` gives one place back every `STEP_S`, down to `pool.size` again, so that a
burst does not keep its containers for ever. `pool.max_containers` still caps all
kinds together (pool.py).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from hazmat.policy import PoolSettings

__all__ = ["MEMORY_RESERVE", "SHRINK_AFTER_S", "STEP_S", "Sizer", "memory_to_spare"]

K = TypeVar("K", bound=Hashable)  # a kind of lease (the pool's `Spec`)

SHRINK_AFTER_S = 60.0  # a kind's target steps down after this long without a miss
STEP_S = 5.0  # and by one per this long (the janitor looks every 5 s, or sooner)
MEMORY_RESERVE = 0.25  # never grow while less than this share of the memory is available


def memory_to_spare(meminfo: str = "/proc/meminfo") -> bool:
    """Whether this machine has more than `MEMORY_RESERVE` of its memory available (True when
    it cannot tell: /proc/meminfo unreadable)."""
    try:
        with open(meminfo, encoding="ascii") as f:
            fields = dict(line.split(":", 1) for line in f if ":" in line)
        total = int(fields["MemTotal"].split()[0])
        available = int(fields["MemAvailable"].split()[0])
    except (OSError, KeyError, ValueError):
        return True
    return available > total * MEMORY_RESERVE


class Sizer(Generic[K]):
    """Per kind: the number of leases the pool should keep ready now."""

    def __init__(
        self,
        settings: PoolSettings,
        spare: Callable[[], bool] = memory_to_spare,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.settings = settings
        self._spare = spare
        self._clock = clock
        self._lock = threading.Lock()
        self._target: dict[K, int] = {}
        self._last_miss: dict[K, float] = {}
        self._last_step: dict[K, float] = {}

    def target(self, kind: K) -> int:
        with self._lock:
            return self._target.get(kind, self.settings.size)

    def targets(self) -> dict[K, int]:
        with self._lock:
            return dict(self._target)

    def missed(self, kind: K) -> int:
        """A run of `kind` found nothing ready: grow its target by one if allowed; the target."""
        with self._lock:
            self._last_miss[kind] = self._clock()
            now = self._target.get(kind, self.settings.size)
            top = max(self.settings.size, self.settings.max_size)
            if now < top and self.settings.size > 0 and self._spare():
                now += 1
                self._target[kind] = now
            return now

    def shrink(self) -> list[K]:
        """Step down by one every kind without a miss for `SHRINK_AFTER_S` and no step for
        `STEP_S`; those kinds."""
        stepped = []
        with self._lock:
            now = self._clock()
            for kind, target in list(self._target.items()):
                quiet = now - self._last_miss.get(kind, 0.0) >= SHRINK_AFTER_S
                if not quiet or now - self._last_step.get(kind, -STEP_S) < STEP_S:
                    continue
                self._last_step[kind] = now
                if target - 1 <= self.settings.size:
                    del self._target[kind]
                else:
                    self._target[kind] = target - 1
                stepped.append(kind)
        return stepped
