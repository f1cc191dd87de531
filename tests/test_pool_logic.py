"""The warm pool's own logic, on an in-memory leaser: misses that wait, failed and crashing
starts, the janitor, the cap, deferred housekeeping, closing and counters under concurrency.
(The pool on the real engine is tested in tests/execution/test_pool.py.)"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import pytest

from hazmat import ClosedError, InfraError, Policy, SettingsMismatch
from hazmat.backends.base import Job, Program, RunReport, Spec
from hazmat.backends.pool import START_ATTEMPTS, PoolBackend
from hazmat.languages import get_language
from hazmat.policy import HostResources, PoolSettings, Runtime, TrustLevel


@dataclass
class FakeLease:
    number: int
    spec: Spec
    born: float = field(default_factory=time.monotonic)
    alive: bool = True

    def healthy(self) -> bool:
        return self.alive

    def covers(self, timeout_s: float) -> bool:
        return True


class FakeLeaser:
    """Starts leases instantly, or fails as `plan` says (one entry per start, then `then`)."""

    def __init__(
        self,
        plan: list[Exception | None] | None = None,
        then: Exception | None = None,
        gate: threading.Event | None = None,
    ) -> None:
        self.plan = list(plan or [])
        self.then = then
        self.gate = gate
        self.numbers = itertools.count(1)
        self.lock = threading.Lock()
        self.started: list[FakeLease] = []
        self.discarded: list[FakeLease] = []
        self.ran: list[int] = []
        self.discard_seen = threading.Condition()

    def start(self, spec: Spec, *, lifetime_s: float, pooled: bool = False) -> FakeLease:
        if self.gate is not None:
            self.gate.wait(10)
        with self.lock:
            failure = self.plan.pop(0) if self.plan else self.then
            if failure is not None:
                raise failure
            lease = FakeLease(next(self.numbers), spec)
            self.started.append(lease)
            return lease

    def run(self, lease: FakeLease, job: Job) -> RunReport:
        with self.lock:
            self.ran.append(lease.number)
        return RunReport(0, b"", b"", 1.0, container_id=str(lease.number))

    def discard(self, lease: FakeLease) -> None:
        with self.discard_seen:
            self.discarded.append(lease)
            self.discard_seen.notify_all()

    def wait_discarded(self, count: int) -> bool:
        with self.discard_seen:
            return self.discard_seen.wait_for(lambda: len(self.discarded) >= count, 10)

    def resources(self) -> HostResources:
        return HostResources(cpus=2, memory_mb=4096)

    def close(self) -> None:
        pass


def job(language: str = "python", memory_mb: int | None = None) -> Job:
    limits = Policy().settings(TrustLevel.UNTRUSTED).limits
    if memory_mb is not None:
        limits = limits.replace(memory_mb=memory_mb)
    program = Program(files={"main.py": b"print(1)"}, want=(), stdin=b"", max_file_bytes=10)
    return Job(get_language(language), "img", limits, Runtime.RUNC, TrustLevel.UNTRUSTED, program)


@pytest.fixture()
def make_pool() -> Iterator[Callable[..., PoolBackend[FakeLease]]]:
    made: list[PoolBackend[FakeLease]] = []

    def make(leaser: FakeLeaser, **kwargs: object) -> PoolBackend[FakeLease]:
        settings = PoolSettings(**kwargs)  # type: ignore[arg-type]
        pool = PoolBackend(leaser, settings, wait_on_miss=True)
        made.append(pool)
        return pool

    yield make
    for pool in made:
        pool.close()


def test_a_miss_that_waits_retries_failed_starts_then_runs(
    make_pool: Callable[..., PoolBackend[FakeLease]],
) -> None:
    leaser = FakeLeaser(plan=[InfraError("engine hiccup"), InfraError("engine hiccup")])
    pool = make_pool(leaser, size=1)
    report = pool.execute(job())
    assert report.pooled is True
    stats = pool.stats
    assert (stats.waits, stats.misses, stats.failed) == (1, 0, 2)
    assert stats.last_error == "InfraError: engine hiccup"


def test_a_miss_that_waits_raises_the_starts_own_error_after_bounded_retries(
    make_pool: Callable[..., PoolBackend[FakeLease]],
) -> None:
    leaser = FakeLeaser(then=OSError(28, "No space left on device"))
    pool = make_pool(leaser, size=1)
    with pytest.raises(InfraError, match=f"after {START_ATTEMPTS} attempts.*No space left"):
        pool.execute(job())
    assert pool.stats.failed == START_ATTEMPTS and pool.stats.misses == 0
    assert leaser.ran == []


def test_a_settings_mismatch_is_not_retried(
    make_pool: Callable[..., PoolBackend[FakeLease]],
) -> None:
    leaser = FakeLeaser(then=SettingsMismatch("differs", ["user: root"]))
    pool = make_pool(leaser, size=1)
    with pytest.raises(SettingsMismatch):
        pool.execute(job())
    assert pool.stats.failed == 0


def test_a_kind_in_back_off_still_gets_a_lease_for_a_waiting_job(
    make_pool: Callable[..., PoolBackend[FakeLease]],
) -> None:
    leaser = FakeLeaser(plan=[InfraError("first start fails")])
    pool = make_pool(leaser, size=1)
    spec = job().spec
    pool.warm(spec)  # the background start fails: the kind is in back-off for a second
    assert pool.wait_for(lambda s: s.failed == 1)
    assert pool.execute(job()).pooled is True
    assert pool.stats.waits == 1


def test_starts_of_other_kinds_at_the_cap_do_not_starve_a_waiting_job(
    make_pool: Callable[..., PoolBackend[FakeLease]],
) -> None:
    gate = threading.Event()
    leaser = FakeLeaser(gate=gate)
    pool = make_pool(leaser, size=1, max_containers=1)
    pool.warm(job(memory_mb=100).spec)  # its start hangs at the gate and holds the cap
    waiting = threading.Thread(target=lambda: pool.execute(job()), daemon=True)
    waiting.start()
    gate.set()
    waiting.join(10)
    assert not waiting.is_alive()
    assert pool.stats.waits == 1 and leaser.ran


def test_an_unexpected_exception_in_a_background_start_is_counted_and_released(
    make_pool: Callable[..., PoolBackend[FakeLease]],
) -> None:
    leaser = FakeLeaser(plan=[ValueError("a bug in the starter")])
    pool = make_pool(leaser, size=1)
    spec = job().spec
    pool.warm(spec)
    assert pool.wait_for(lambda s: s.failed == 1)
    assert "ValueError: a bug in the starter" in (pool.stats.last_error or "")
    assert pool._pending[spec] == 0  # nothing is left counted as on its way


def test_the_janitor_survives_exceptions_and_counts_them(
    make_pool: Callable[..., PoolBackend[FakeLease]],
) -> None:
    class Broken(FakeLease):
        def healthy(self) -> bool:
            raise RuntimeError("health check exploded")

    class BrokenLeaser(FakeLeaser):
        def start(self, spec: Spec, *, lifetime_s: float, pooled: bool = False) -> FakeLease:
            return Broken(0, spec)

    pool = make_pool(BrokenLeaser(), size=1, max_age_s=1)  # the janitor wakes every 0.25 s
    pool.warm(job().spec)
    assert pool.wait_for(lambda s: s.errors >= 2)  # two rounds failed, and it kept going
    assert "health check exploded" in (pool.stats.last_error or "")


def test_used_leases_are_discarded_and_refilled_only_once_settled(
    make_pool: Callable[..., PoolBackend[FakeLease]],
) -> None:
    leaser = FakeLeaser()
    pool = make_pool(leaser, size=1)
    spec = job().spec
    pool.warm(spec)
    assert pool.wait_ready(spec, 1)
    pool.execute(job())
    assert leaser.discarded == [] and pool.ready_leases(spec) == []
    pool.settle()
    assert leaser.wait_discarded(1)
    assert pool.wait_ready(spec, 1)


def test_after_close_every_call_raises_closed_error_and_leases_are_discarded(
    make_pool: Callable[..., PoolBackend[FakeLease]],
) -> None:
    leaser = FakeLeaser()
    pool = make_pool(leaser, size=2)
    spec = job().spec
    pool.warm(spec)
    assert pool.wait_ready(spec, 2)
    pool.execute(job())  # one used, never settled: close must still discard it
    pool.close()
    assert len(leaser.discarded) == len(leaser.started)
    with pytest.raises(ClosedError, match="closed"):
        pool.execute(job())
    with pytest.raises(ClosedError):
        pool.warm(spec)


def test_counters_are_consistent_under_concurrent_callers(
    make_pool: Callable[..., PoolBackend[FakeLease]],
) -> None:
    leaser = FakeLeaser()
    pool = make_pool(leaser, size=2, refill_concurrency=4)
    callers, each = 8, 25

    def caller() -> None:
        for _ in range(each):
            pool.execute(job())
            pool.settle()

    threads = [threading.Thread(target=caller) for _ in range(callers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stats = pool.stats
    assert stats.hits + stats.waits + stats.misses == callers * each
    assert len(leaser.ran) == len(set(leaser.ran)) == callers * each  # never handed out twice
