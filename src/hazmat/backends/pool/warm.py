"""The warm pool: containers started ahead of time, each handed out exactly once.

For each kind of container (`Spec`: language, image, limits, runtime) the pool keeps leases
started, checked against the policy and waiting for a job: `size` of them at first, more while
its runs find none ready (pool_sizing.py). It talks to whatever
starts them through the lease protocol (`Leaser` in backends/base.py: start, run, discard; a
lease says whether it is healthy and whether it covers a timeout), so it knows nothing of
Docker. A run takes a lease; a miss takes the cold path (start, run, discard) at once, or, with
`wait_on_miss`, has a lease started for it with bounded retries and otherwise raises the
start's own error. Used leases are discarded, and the pool refilled, only once the caller has
its result (`settle()`, which `Sandbox` calls after recording the run).

Nothing in the background can wedge the pool: every exception of a start, a discard or the
janitor is caught, counted in `stats` and logged, and in-flight starts are always accounted
for. A lease that ended, wrote anything, or grew older than `max_age_s` is replaced, never
used. After `close()` every call raises `ClosedError`; close removes every lease the pool holds.
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
from dataclasses import dataclass, replace
from typing import Any, Generic

from hazmat._exceptions import ClosedError, InfraError, SettingsMismatch
from hazmat.backends.base import Backend, Job, KeptBackend, RunReport, Spec
from hazmat.backends.pool.lease import L, Leaser
from hazmat.backends.pool.sizing import Sizer
from hazmat.policy import HostResources, PoolSettings

__all__ = ["PoolBackend", "PoolStats"]

log = logging.getLogger(__name__)

# How long past `max_age_s` a pooled lease may still be running a job: jobs with a longer
# timeout take the cold path, so the reaper's deadline always covers the job.
JOB_BUDGET_S = 3600.0
# A kind nobody asked for in this long is no longer refilled (unless it was warmed).
KEEP_WARM_S = 600.0
# Back-off after a failed background start, doubled per failure in a row, capped.
BACKOFF_S = (1.0, 60.0)
# With `wait_on_miss`: how many starts a job may try before its run fails.
START_ATTEMPTS = 3
# Housekeeping nobody settled (a caller that never called `settle`) is done after this long.
SETTLE_AFTER_S = 5.0

SecuritySink = Callable[[str, dict[str, Any]], None]


@dataclass(frozen=True)
class PoolStats:
    """Counters of one pool, read consistently under its lock.

    hits: runs given a lease that was ready; waits: runs that had a lease started for them
    (`wait_on_miss`); misses: runs that took the cold path; started / failed: lease starts;
    expired: ready leases replaced (aged, died, evicted); errors: exceptions in discards or the
    janitor; last_error: the most recent failure of any kind, as text.
    """

    hits: int = 0
    waits: int = 0
    misses: int = 0
    started: int = 0
    failed: int = 0
    expired: int = 0
    errors: int = 0
    last_error: str | None = None


class PoolBackend(Backend, Generic[L]):
    """A `Backend` that serves jobs from leases started ahead of time.

    `leaser` starts, runs and discards leases (a `ContainerBackend`). `wait_on_miss` makes a miss
    start a lease for the job instead of taking the cold path, so that every run goes through
    a pooled lease (the test suite uses it). `on_security_event` receives a settings mismatch
    found when a lease is made in the background; the sandbox records it in the audit log.
    """

    def __init__(
        self,
        leaser: Leaser[L],
        settings: PoolSettings | None = None,
        *,
        wait_on_miss: bool = False,
        on_security_event: SecuritySink | None = None,
        sizer: Sizer[Spec] | None = None,
    ) -> None:
        self.leaser = leaser
        self.settings = settings or PoolSettings()
        self.sizer: Sizer[Spec] = sizer or Sizer(self.settings)
        self.wait_on_miss = wait_on_miss
        self.on_security_event = on_security_event
        self._cond = threading.Condition()
        self._counts: collections.Counter[str] = collections.Counter()
        self._last_error: str | None = None
        self._ready: dict[Spec, collections.deque[L]] = {}
        self._pending: collections.Counter[Spec] = collections.Counter()
        self._wanted: dict[Spec, float] = {}  # kind -> when it was last asked for
        self._failures: dict[Spec, tuple[int, float]] = {}  # kind -> (in a row, retry after)
        self._deferred: list[tuple[float, L | None, Spec]] = []  # (when, used lease, refill)
        self._closed = False
        self._starter = ThreadPoolExecutor(
            self.settings.refill_concurrency, thread_name_prefix="hazmat-pool-start"
        )
        self._remover = ThreadPoolExecutor(2, thread_name_prefix="hazmat-pool-remove")
        self._janitor = threading.Thread(target=self._tend, name="hazmat-pool", daemon=True)
        self._janitor.start()

    @property
    def stats(self) -> PoolStats:
        with self._cond:
            return self._snapshot()

    def _snapshot(self) -> PoolStats:  # with the lock held
        return PoolStats(**dict(self._counts), last_error=self._last_error)

    def resources(self) -> HostResources:
        return self.leaser.resources()

    @property
    def tier(self) -> str | None:  # the leaser's
        return self.leaser.tier

    keeps_containers = True

    def keep(self, spec: Spec, lifetime_s: float) -> KeptBackend:
        return self.leaser.keep(spec, lifetime_s)

    def waiting_for_core(self) -> int:
        return self.leaser.waiting_for_core()

    def runtimes(self) -> set[str]:
        return self.leaser.runtimes()

    def reap(self) -> list[str]:
        return self.leaser.reap()

    def remove_leftovers(self, before: float) -> int:
        return self.leaser.remove_leftovers(before)

    def warm(self, spec: Spec) -> None:
        """Keep the pool for `spec` full from now on, used or not (`Sandbox.warm`, and
        `pool.prewarm` in the policy)."""
        with self._cond:
            self._check_open()
            self._wanted[spec] = math.inf
        self._top_up(spec)

    def wait_warm(self, spec: Spec, timeout_s: float) -> bool:
        return self.wait_ready(spec, self.settings.size, timeout_s)

    def ready_leases(self, spec: Spec) -> list[L]:
        """The leases now ready for `spec`, oldest first (for tests and the benchmark)."""
        with self._cond:
            return list(self._ready.get(spec, ()))

    def ready_kinds(self) -> set[tuple[str, str]]:
        """(language, runtime) of every kind with a lease ready now (a cluster worker says
        which runs it can start warm)."""
        with self._cond:
            return {(s.language, s.runtime.value) for s, q in self._ready.items() if q}

    def wait_ready(self, spec: Spec, count: int, timeout_s: float = 120.0) -> bool:
        """Block until `count` leases of `spec` are ready; False at the timeout or on close."""
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while len(self._ready.get(spec, ())) < count:
                left = deadline - time.monotonic()
                if left <= 0 or self._closed:
                    return False
                self._cond.wait(left)
        return True

    def wait_for(self, condition: Callable[[PoolStats], bool], timeout_s: float = 60.0) -> bool:
        """Block until `condition(stats)` holds (tests wait on counters, not on the clock)."""
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while not condition(self._snapshot()):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
        return True

    def execute(self, job: Job) -> RunReport:
        if job.egress is not None:  # mounts one run's proxy socket: never pooled or refilled
            return self._single(job)
        spec = job.spec
        with self._cond:
            self._check_open()
            self._wanted[spec] = max(self._wanted.get(spec, 0.0), time.monotonic())
        lease = self._take(spec, job.wall_s)
        if lease is not None:
            self._count("hits")
        else:
            self.sizer.missed(spec)  # too few for this pace: keep more of this kind ready
            if not self.wait_on_miss:
                self._count("misses")
                return replace(self._cold(job), pooled=False)
            lease = self._start_for(spec, job.wall_s)
            self._count("waits")
        try:
            report = self.leaser.run(lease, job)
        finally:
            self._defer(lease, spec)
        return replace(report, pooled=True)

    def _single(self, job: Job) -> RunReport:
        single = self.leaser.start(job.spec, lifetime_s=job.wall_s)
        try:
            return replace(self.leaser.run(single, job), pooled=False)
        finally:
            self._discard_later(single)

    def _cold(self, job: Job) -> RunReport:
        lease = self.leaser.start(job.spec, lifetime_s=job.wall_s)
        try:
            return self.leaser.run(lease, job)
        finally:
            self._defer(lease, job.spec)

    def settle(self) -> None:
        """Discard used leases and refill, now that the caller has its result."""
        with self._cond:
            work, self._deferred = self._deferred, []
        self._do(work)

    def _defer(self, lease: L | None, spec: Spec) -> None:
        with self._cond:
            self._deferred.append((time.monotonic(), lease, spec))

    def _do(self, work: list[tuple[float, L | None, Spec]]) -> None:
        for _, lease, _ in work:
            if lease is not None:
                self._discard_later(lease)
        for spec in dict.fromkeys(spec for _, _, spec in work):
            self._top_up(spec)

    def _check_open(self) -> None:
        if self._closed:
            raise ClosedError("the warm pool is closed; open a new Sandbox")

    def _count(self, name: str, error: BaseException | None = None) -> None:
        with self._cond:
            self._counts[name] += 1
            if error is not None:
                self._last_error = f"{type(error).__name__}: {error}"
            self._cond.notify_all()

    def _take(self, spec: Spec, timeout_s: float) -> L | None:
        """A ready, healthy lease that covers this job, or None."""
        stale: list[L] = []
        found = None
        with self._cond:
            queue = self._ready.get(spec, collections.deque())
            while queue and found is None:
                candidate = queue.popleft()
                if self._fresh(candidate) and candidate.healthy():
                    found = candidate
                else:
                    stale.append(candidate)
            if found is not None and not found.covers(timeout_s):
                queue.appendleft(found)
                found = None
            self._counts["expired"] += len(stale)
        for lease in stale:
            self._discard_later(lease)
        return found

    def _start_for(self, spec: Spec, timeout_s: float) -> L:
        """Start a lease for one waiting job, past back-off and the cap; retry a failed start
        up to `START_ATTEMPTS` times, then raise `InfraError` with the last start's error."""
        last: Exception | None = None
        for _ in range(START_ATTEMPTS):
            with self._cond:
                self._check_open()
            try:
                lease = self.leaser.start(spec, lifetime_s=self._lifetime(), pooled=True)
            except SettingsMismatch:
                raise  # a security finding, not a hiccup: the run reports it
            except Exception as exc:
                self._count("failed", exc)
                last = exc
                continue
            self._count("started")
            if lease.covers(timeout_s):
                return lease
            self._discard_later(lease)
            raise InfraError(f"a job of {timeout_s:g} s does not fit a pooled container's lifetime")
        raise InfraError(
            f"the pool could not start a {spec.language} container ({spec.runtime.value}) "
            f"after {START_ATTEMPTS} attempts: {last}"
        ) from last

    def _lifetime(self) -> float:
        return self.settings.max_age_s + JOB_BUDGET_S

    def _fresh(self, lease: L) -> bool:
        return time.monotonic() - lease.born < self.settings.max_age_s

    def _top_up(self, spec: Spec) -> None:
        """Start enough leases for `spec` to bring it back to `size`. At the cap on all
        leases, idle ones of the kinds asked for least recently make room."""
        with self._cond:
            if self._closed:
                return
            failures, retry_after = self._failures.get(spec, (0, 0.0))
            if failures and time.monotonic() < retry_after:
                return
            need = self.sizer.target(spec) - len(self._ready.get(spec, ())) - self._pending[spec]
            if need <= 0:
                return
            evicted = self._make_room(spec, need)
            total = sum(len(q) for q in self._ready.values()) + sum(self._pending.values())
            for _ in range(min(need, self.settings.max_containers - total)):
                self._pending[spec] += 1
                self._starter.submit(self._start_one, spec)
        for lease in evicted:
            self._discard_later(lease)

    def _make_room(self, spec: Spec, need: int) -> list[L]:
        """Take up to `need` idle leases of kinds asked for less recently than `spec`, least
        recent first, if the cap leaves no room (called with the lock held)."""
        total = sum(len(q) for q in self._ready.values()) + sum(self._pending.values())
        over = total + need - self.settings.max_containers
        evicted: list[L] = []
        mine = self._wanted.get(spec, 0.0)
        others = sorted(
            (k for k in self._ready if k != spec and self._wanted.get(k, 0.0) < mine),
            key=lambda k: self._wanted.get(k, 0.0),
        )
        for other in others:
            queue = self._ready[other]
            while queue and len(evicted) < over:
                evicted.append(queue.popleft())
        self._counts["expired"] += len(evicted)
        return evicted

    def _start_one(self, spec: Spec) -> None:
        """A background start. Whatever happens, the pending count is given back, in the same
        step as a failure is counted (nobody sees the one without the other)."""
        lease: L | None = None
        failure: Exception | None = None
        try:
            lease = self.leaser.start(spec, lifetime_s=self._lifetime(), pooled=True)
        except Exception as exc:
            failure = exc
        finally:
            with self._cond:  # a reentrant lock: _failed takes it too
                self._pending[spec] -= 1
                if failure is not None:
                    self._failed(spec, failure)
                if lease is not None:
                    self._failures.pop(spec, None)
                    self._counts["started"] += 1
                    if not self._closed:
                        self._ready.setdefault(spec, collections.deque()).append(lease)
                        lease = None
                self._cond.notify_all()
        if isinstance(failure, SettingsMismatch):
            self._security_event(spec, failure)
        if lease is not None:  # made while closing
            self._discard_later(lease)

    def _failed(self, spec: Spec, exc: BaseException) -> None:
        log.warning("hazmat pool: could not start a %s container: %s", spec.language, exc)
        with self._cond:
            count = self._failures.get(spec, (0, 0.0))[0] + 1
            delay = min(BACKOFF_S[1], BACKOFF_S[0] * 2 ** (count - 1))
            self._failures[spec] = (count, time.monotonic() + delay)
        self._count("failed", exc)

    def _security_event(self, spec: Spec, exc: SettingsMismatch) -> None:
        if self.on_security_event is None:
            return
        details = {
            "where": "pool",
            "language": spec.language,
            "image": spec.image,
            "runtime": spec.runtime.value,
            "problems": list(exc.problems),
        }
        try:
            self.on_security_event("settings_mismatch", details)
        except Exception as error:
            log.error("hazmat pool: could not record a settings mismatch: %s", error)
            self._count("errors", error)

    def _tend(self) -> None:
        """Every few seconds: replace ready leases that aged or died; do housekeeping nobody
        settled; refill the kinds that were warmed or recently asked for. Never dies of an
        exception: it is counted, logged and the next round goes on."""
        interval = min(5.0, self.settings.max_age_s / 4)
        while True:
            with self._cond:
                if self._closed:
                    return
                self._cond.wait(interval)
                if self._closed:
                    return
            try:
                self._tend_once()
            except Exception as exc:
                log.exception("hazmat pool: janitor round failed")
                self._count("errors", exc)

    def _tend_once(self) -> None:
        now = time.monotonic()
        self.sizer.shrink()
        with self._cond:
            stale: list[L] = []
            for spec, queue in self._ready.items():  # beyond a smaller target: oldest first
                while len(queue) > self.sizer.target(spec):
                    stale.append(queue.popleft())
            for queue in self._ready.values():
                keep = [s for s in queue if self._fresh(s) and s.healthy()]
                stale.extend(s for s in queue if s not in keep)
                queue.clear()
                queue.extend(keep)
            self._counts["expired"] += len(stale)
            window = max(KEEP_WARM_S, self.settings.max_age_s)
            recent = [k for k, t in self._wanted.items() if now - t < window]
            late = [w for w in self._deferred if now - w[0] > SETTLE_AFTER_S]
            self._deferred = [w for w in self._deferred if now - w[0] <= SETTLE_AFTER_S]
        for lease in stale:
            self._discard_later(lease)
        self._do(late)
        for spec in recent:
            self._top_up(spec)

    def _discard_later(self, lease: L) -> None:
        try:
            self._remover.submit(self._discard, lease)
        except RuntimeError:  # shutting down: remove it here
            self._discard(lease)

    def _discard(self, lease: L) -> None:
        try:
            self.leaser.discard(lease)
        except Exception as exc:
            log.warning("hazmat pool: could not discard a container: %s", exc)
            self._count("errors", exc)

    def close(self) -> None:
        """Stop refilling, wait for starts under way, remove every lease the pool holds."""
        with self._cond:
            if self._closed:
                return
            self._closed = True
            self._cond.notify_all()
        self._janitor.join(timeout=30)
        self._starter.shutdown(wait=True, cancel_futures=True)
        with self._cond:
            held = [s for q in self._ready.values() for s in q]
            held.extend(lease for _, lease, _ in self._deferred if lease is not None)
            self._ready.clear()
            self._deferred.clear()
        for lease in held:
            self._discard_later(lease)
        self._remover.shutdown(wait=True)
        with contextlib.suppress(Exception):
            self.leaser.close()
