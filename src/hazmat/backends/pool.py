"""The warm pool: containers started ahead of time, each handed out exactly once.

For each kind of container (`Spec`: language, image, limits, runtime) the pool keeps up to
`size` containers created, started, checked against the policy (backends/verify.py) and
waiting on their attached stdin with the interpreter already up. A run takes one; the pool
starts a replacement in the background; the used container is removed in the background
after its result is read. A container is never handed out twice, and a job never waits for a
container that is not ready: a miss takes the cold path (`DockerBackend.execute`) at once.

The host stays authoritative: the pooled path runs through the same `DockerBackend.run` as
the cold one (host timer, output cap, OOM from the cgroup or the engine, output after the
end marker discarded). A ready container that ended, wrote anything, or grew older than
`max_age_s` is replaced; `close()` removes every container the pool holds, and a process that
died without closing leaves containers that the next hazmat process's reaper removes (their
owner pid is on the label).
"""

from __future__ import annotations

import collections
import contextlib
import logging
import math
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

from hazmat._exceptions import InfraError, SettingsMismatch
from hazmat.backends.base import Backend, Job, RunReport, Spec
from hazmat.backends.docker import REAP_GRACE_S, DockerBackend, Started
from hazmat.policy import HostResources, PoolSettings

__all__ = ["PoolBackend", "PoolStats"]

log = logging.getLogger(__name__)

# How long past `max_age_s` a pooled container may still be running a job: jobs with a
# longer timeout take the cold path, so the reaper's deadline always covers the job.
JOB_BUDGET_S = 3600.0
# A kind nobody asked for in this long is no longer refilled (unless it was warmed).
KEEP_WARM_S = 600.0
# Back-off after a failed start, doubled per failure in a row, capped.
BACKOFF_S = (1.0, 60.0)

SecuritySink = Callable[[str, dict[str, Any]], None]


class PoolStats:
    """Counters of one pool (read them through `Sandbox.metrics()`)."""

    def __init__(self) -> None:
        self.hits = 0
        self.misses = 0
        self.started = 0
        self.failed = 0
        self.expired = 0
        self.last_error: str | None = None


class PoolBackend(Backend):
    """A `Backend` that serves jobs from pre-started containers and falls back to cold starts.

    `wait_on_miss` makes a miss wait for the pool to start a container for that kind instead
    of starting one itself (the test suite uses it so that every run goes through a pooled
    container). `on_security_event` receives a settings mismatch found when a container is
    made, off any run's path; the sandbox records it in the audit log.
    """

    def __init__(
        self,
        docker: DockerBackend | None = None,
        settings: PoolSettings | None = None,
        *,
        wait_on_miss: bool = False,
        on_security_event: SecuritySink | None = None,
    ) -> None:
        self.docker = docker or DockerBackend()
        self.settings = settings or PoolSettings()
        self.wait_on_miss = wait_on_miss
        self.on_security_event = on_security_event
        self.stats = PoolStats()
        self._cond = threading.Condition()
        self._ready: dict[Spec, collections.deque[Started]] = {}
        self._pending: collections.Counter[Spec] = collections.Counter()
        self._wanted: dict[Spec, float] = {}  # kind -> when it was last asked for
        self._failures: dict[Spec, tuple[int, float]] = {}  # kind -> (in a row, retry after)
        self._closed = False
        self._starter = ThreadPoolExecutor(
            self.settings.refill_concurrency, thread_name_prefix="hazmat-pool-start"
        )
        self._remover = ThreadPoolExecutor(2, thread_name_prefix="hazmat-pool-remove")
        self._janitor = threading.Thread(target=self._tend, name="hazmat-pool", daemon=True)
        self._janitor.start()

    def resources(self) -> HostResources:
        return self.docker.resources()

    def warm(self, spec: Spec) -> None:
        """Keep the pool for `spec` full from now on, used or not (`Sandbox.warm`, and
        `pool.prewarm` in the policy)."""
        with self._cond:
            self._wanted[spec] = math.inf
        self._top_up(spec)

    def wait_warm(self, spec: Spec, timeout_s: float) -> bool:
        return self.wait_ready(spec, self.settings.size, timeout_s)

    def ready_count(self, spec: Spec | None = None) -> int:
        with self._cond:
            if spec is not None:
                return len(self._ready.get(spec, ()))
            return sum(len(q) for q in self._ready.values())

    def wait_ready(self, spec: Spec, count: int, timeout_s: float = 120.0) -> bool:
        """Block until `count` containers of `spec` are ready (benchmarks and tests)."""
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while len(self._ready.get(spec, ())) < count:
                left = deadline - time.monotonic()
                if left <= 0 or self._closed:
                    return False
                self._cond.wait(left)
        return True

    def execute(self, job: Job) -> RunReport:
        spec = job.spec
        with self._cond:
            if self._closed:
                raise InfraError("the pool is closed")
            self._wanted[spec] = max(self._wanted.get(spec, 0.0), time.monotonic())
        started = self._take(spec, job.limits.timeout_s)
        if started is None and self.wait_on_miss:
            self._top_up(spec)
            started = self._wait_for(spec, job.limits.timeout_s)
        if started is None:
            self.stats.misses += 1
            self._top_up(spec)
            return replace(self.docker.execute(job), pooled=False)
        self.stats.hits += 1
        try:
            report = self.docker.run(started, job)
        finally:
            # after the run: starting and removing containers would compete with it for CPU
            self._discard_later(started)
            self._top_up(spec)
        return replace(report, pooled=True)

    def _take(self, spec: Spec, timeout_s: float) -> Started | None:
        """A ready, healthy container whose reaper deadline covers this job, or None."""
        stale: list[Started] = []
        found = None
        with self._cond:
            queue = self._ready.get(spec, collections.deque())
            while queue and found is None:
                candidate = queue.popleft()
                if self._fresh(candidate) and candidate.healthy():
                    found = candidate
                else:
                    stale.append(candidate)
            if found is not None and not _covers(found, timeout_s):
                queue.appendleft(found)
                found = None
        for s in stale:
            self.stats.expired += 1
            self._discard_later(s)
        return found

    def _wait_for(self, spec: Spec, timeout_s: float) -> Started | None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            with self._cond:
                if self._closed:
                    return None
                if not self._ready.get(spec):
                    if not self._pending[spec]:
                        return None  # nothing on its way (starting failed)
                    self._cond.wait(1.0)
                    continue
            found = self._take(spec, timeout_s)
            self._top_up(spec)
            if found is not None:
                return found
        return None

    def _fresh(self, s: Started) -> bool:
        return time.monotonic() - s.born < self.settings.max_age_s

    def _top_up(self, spec: Spec) -> None:
        """Start enough containers for `spec` to bring it back to `size`. At the cap on all
        containers, idle ones of the kinds asked for least recently make room."""
        with self._cond:
            if self._closed:
                return
            failures, retry_after = self._failures.get(spec, (0, 0.0))
            if failures and time.monotonic() < retry_after:
                return
            have = len(self._ready.get(spec, ())) + self._pending[spec]
            need = self.settings.size - have
            if need <= 0:
                return
            evicted = self._make_room(spec, need)
            total = sum(len(q) for q in self._ready.values()) + sum(self._pending.values())
            need = min(need, self.settings.max_containers - total)
            for _ in range(max(0, need)):
                self._pending[spec] += 1
                self._starter.submit(self._start_one, spec)
        for s in evicted:
            self._discard_later(s)

    def _make_room(self, spec: Spec, need: int) -> list[Started]:
        """Take up to `need` idle containers of kinds asked for less recently than `spec`,
        least recent first, if the cap leaves no room (called with the lock held)."""
        total = sum(len(q) for q in self._ready.values()) + sum(self._pending.values())
        over = total + need - self.settings.max_containers
        evicted: list[Started] = []
        mine = self._wanted.get(spec, 0.0)
        others = sorted(
            (k for k in self._ready if k != spec and self._wanted.get(k, 0.0) < mine),
            key=lambda k: self._wanted.get(k, 0.0),
        )
        for other in others:
            queue = self._ready[other]
            while queue and len(evicted) < over:
                evicted.append(queue.popleft())
        return evicted

    def _start_one(self, spec: Spec) -> None:
        try:
            started = self.docker.start(
                spec, lifetime_s=self.settings.max_age_s + JOB_BUDGET_S, pooled=True
            )
        except SettingsMismatch as exc:
            self._failed(spec, exc)
            self._security_event(spec, exc)
            return
        except (InfraError, OSError) as exc:
            self._failed(spec, exc)
            return
        with self._cond:
            self._pending[spec] -= 1
            self._failures.pop(spec, None)
            self.stats.started += 1
            if not self._closed:
                self._ready.setdefault(spec, collections.deque()).append(started)
                self._cond.notify_all()
                return
        self._discard_later(started)

    def _failed(self, spec: Spec, exc: BaseException) -> None:
        log.warning("hazmat pool: could not start a %s container: %s", spec.language, exc)
        with self._cond:
            self._pending[spec] -= 1
            count = self._failures.get(spec, (0, 0.0))[0] + 1
            delay = min(BACKOFF_S[1], BACKOFF_S[0] * 2 ** (count - 1))
            self._failures[spec] = (count, time.monotonic() + delay)
            self.stats.failed += 1
            self.stats.last_error = str(exc)
            self._cond.notify_all()

    def _security_event(self, spec: Spec, exc: SettingsMismatch) -> None:
        if self.on_security_event is None:
            return
        with contextlib.suppress(Exception):
            self.on_security_event(
                "settings_mismatch",
                {
                    "where": "pool",
                    "language": spec.language,
                    "image": spec.image,
                    "runtime": spec.runtime.value,
                    "problems": list(exc.problems),
                },
            )

    def _tend(self) -> None:
        """Every few seconds: replace ready containers that aged or died; refill the kinds
        that were warmed, or asked for within `KEEP_WARM_S` (or `max_age_s`, if longer)."""
        interval = min(5.0, self.settings.max_age_s / 4)
        while True:
            with self._cond:
                if self._closed:
                    return
                self._cond.wait(interval)
                if self._closed:
                    return
                stale: list[Started] = []
                for queue in self._ready.values():
                    keep = [s for s in queue if self._fresh(s) and s.healthy()]
                    stale.extend(s for s in queue if s not in keep)
                    queue.clear()
                    queue.extend(keep)
                now = time.monotonic()
                window = max(KEEP_WARM_S, self.settings.max_age_s)
                recent = [k for k, t in self._wanted.items() if now - t < window]
            for s in stale:
                self.stats.expired += 1
                self._discard_later(s)
            for spec in recent:
                self._top_up(spec)

    def _discard_later(self, started: Started) -> None:
        try:
            self._remover.submit(self._discard, started)
        except RuntimeError:  # shutting down: remove it here
            self._discard(started)

    def _discard(self, started: Started) -> None:
        try:
            self.docker.discard(started)
        except InfraError as exc:
            log.warning("hazmat pool: %s", exc)

    def close(self) -> None:
        """Stop refilling, wait for starts under way, remove every container the pool holds."""
        with self._cond:
            if self._closed:
                return
            self._closed = True
            self._cond.notify_all()
        self._janitor.join(timeout=10)
        self._starter.shutdown(wait=True, cancel_futures=True)
        with self._cond:
            held = [s for q in self._ready.values() for s in q]
            self._ready.clear()
        for s in held:
            self._discard_later(s)
        self._remover.shutdown(wait=True)
        self.docker.close()


def _covers(s: Started, timeout_s: float) -> bool:
    """Whether the reaper's deadline on `s` leaves room for a job of `timeout_s`."""
    return time.time() + timeout_s < s.expires - REAP_GRACE_S
