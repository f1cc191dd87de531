"""A uid of its own for every sandbox: no two live sandboxes on one engine share one.

The kernel counts some budgets per uid across the whole host, whatever the namespaces: inotify
instances and watches, POSIX message queue bytes, pending signals and timers, RLIMIT_NPROC.
With one uid for every sandbox, a run holding them made `inotify_init1`, `mq_open` and
`timer_create` fail in every other run, and a shared budget is a channel between tenants. So
each container gets a uid from `UID_BASE` .. `UID_BASE + UID_COUNT - 1` (like isolate's box
ids), far above the uids of people and services on a host (0-65535) and of the subordinate
ranges Debian hands out from 100000 for the first few dozen users.

A uid belongs to the container that carries it in its `hazmat.uid` label. Right after create
the engine is asked for every container with that label; a container that is not alone gives
its uid up (it is removed and another uid is tried). Two processes racing for one uid both see
both containers and both retry, so a uid is only ever kept by a container that was alone at
its check, and it stays taken until that container is removed (a container whose owner died
counts until the reaper removes it). `Uids` only spares this process the round trips of its
own collisions. The check is per engine: engines that share one kernel need ranges of their own.
"""

from __future__ import annotations

import random
import threading

from hazmat._exceptions import InfraError

__all__ = ["UID_BASE", "UID_COUNT", "Uids"]

UID_BASE = 1_500_000_000
UID_COUNT = 1 << 16


class Uids:
    """The uids this process's live containers hold; `take` picks a free one at random."""

    def __init__(self, base: int = UID_BASE, count: int = UID_COUNT) -> None:
        self.base = base
        self.count = count
        self._held: set[int] = set()
        self._lock = threading.Lock()
        self._random = random.SystemRandom()

    def take(self) -> int:
        with self._lock:
            if len(self._held) >= self.count:
                raise InfraError(f"all {self.count} sandbox uids are in use by this process")
            while True:
                uid = self.base + self._random.randrange(self.count)
                if uid not in self._held:
                    self._held.add(uid)
                    return uid

    def release(self, uid: int) -> None:
        with self._lock:
            self._held.discard(uid)

    def __contains__(self, uid: object) -> bool:
        return isinstance(uid, int) and self.base <= uid < self.base + self.count
