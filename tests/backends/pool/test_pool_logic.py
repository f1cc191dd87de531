"""The warm pool's own logic, on an in-memory leaser: misses that wait, failed and crashing
starts, the janitor, the cap, deferred housekeeping, closing and counters under concurrency.
(The pool on the real engine is tested in tests/execution/test_pool.py.)"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

import pytest

from hazmat import ClosedError, InfraError, SettingsMismatch
from hazmat.backends.base import Spec
from hazmat.backends.pool.warm import START_ATTEMPTS, PoolBackend
from hazmat.policy import PoolSettings
from pool_fakes import FakeLease, FakeLeaser, job


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
