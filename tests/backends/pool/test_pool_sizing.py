"""The warm pool sizes itself (backends/pool/sizing.py): a miss grows its kind's target by one
up to `pool.max_size` while the machine has memory to spare; a kind without a miss for a
minute steps back to `pool.size`, its surplus containers removed; `max_containers` still caps
all kinds together. On an in-memory leaser and a clock of the test's own."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from hazmat.backends.pool.sizing import SHRINK_AFTER_S, STEP_S, Sizer, memory_to_spare
from hazmat.backends.pool.warm import PoolBackend
from hazmat.policy import PoolSettings
from hazmat.testing import Clock
from pool_fakes import FakeLease, FakeLeaser, job


def test_misses_grow_a_kind_up_to_max_size() -> None:
    clock = Clock()
    sizer: Sizer[str] = Sizer(PoolSettings(size=2, max_size=4), clock=clock)
    assert [sizer.missed("py") for _ in range(4)] == [3, 4, 4, 4]
    assert (sizer.target("py"), sizer.target("js")) == (4, 2)  # kinds apart


@pytest.mark.parametrize(
    ("settings", "spare", "want"),
    [
        (PoolSettings(size=2, max_size=8), False, 2),  # memory short: no growth
        (PoolSettings(size=0, max_size=8), True, 0),  # the pool is off
        (PoolSettings(size=3, max_size=1), True, 3),  # max_size below size: size holds
    ],
)
def test_what_stops_growth(settings: PoolSettings, spare: bool, want: int) -> None:
    sizer: Sizer[str] = Sizer(settings, spare=lambda: spare)
    sizer.missed("py")
    assert sizer.target("py") == want


def test_a_kind_without_misses_steps_back_to_size() -> None:
    clock = Clock()
    sizer: Sizer[str] = Sizer(PoolSettings(size=1, max_size=5), clock=clock)
    for _ in range(4):
        sizer.missed("py")
    clock.now += SHRINK_AFTER_S - 1
    assert sizer.shrink() == [] and sizer.target("py") == 5
    clock.now += 1
    steps = []
    for _ in range(5):
        steps.append((sizer.shrink(), sizer.shrink(), sizer.target("py")))  # once per STEP_S
        clock.now += STEP_S
    assert steps == [
        (["py"], [], 4),
        (["py"], [], 3),
        (["py"], [], 2),
        (["py"], [], 1),
        ([], [], 1),
    ]
    sizer.missed("py")  # a miss starts the minute again
    clock.now += STEP_S
    assert sizer.shrink() == [] and sizer.targets() == {"py": 2}


@pytest.mark.parametrize(
    ("meminfo", "spare"),
    [
        ("MemTotal: 1000 kB\nMemFree: 10 kB\nMemAvailable: 400 kB\n", True),
        ("MemTotal: 1000 kB\nMemFree: 10 kB\nMemAvailable: 250 kB\n", False),
        ("MemTotal: 1000 kB\n", True),  # cannot tell: growth is not held back
        ("garbage", True),
    ],
)
def test_the_memory_probe(tmp_path: Path, meminfo: str, spare: bool) -> None:
    (tmp_path / "meminfo").write_text(meminfo)
    assert memory_to_spare(str(tmp_path / "meminfo")) is spare
    assert memory_to_spare(str(tmp_path / "missing")) is True


@pytest.fixture
def pool() -> Iterator[tuple[PoolBackend[FakeLease], FakeLeaser, Clock]]:
    clock = Clock()
    settings = PoolSettings(size=1, max_size=3, max_containers=16)
    leaser = FakeLeaser()
    made = PoolBackend(leaser, settings, sizer=Sizer(settings, spare=lambda: True, clock=clock))
    try:
        yield made, leaser, clock
    finally:
        made.close()


def test_the_pool_keeps_its_grown_target_ready_then_gives_it_back(
    pool: tuple[PoolBackend[FakeLease], FakeLeaser, Clock],
) -> None:
    backend, leaser, clock = pool
    spec = job().spec
    backend.execute(job())  # the kind's first run: nothing can be ready, a miss
    assert backend.stats.misses == 1 and backend.sizer.target(spec) == 2
    backend.sizer.missed(spec)  # as a second miss would (the refill races the next run)
    backend.settle()
    assert backend.wait_ready(spec, 3, timeout_s=10)
    assert backend.execute(job()).pooled  # a hit: no growth
    backend.settle()
    assert backend.wait_ready(spec, 3, timeout_s=10) and backend.sizer.target(spec) == 3
    clock.now += SHRINK_AFTER_S
    backend._tend_once()  # the janitor's round, as every few seconds (it may run its own too:
    backend._tend_once()  # one step per STEP_S, whoever takes it)
    assert backend.sizer.target(spec) == 2 and len(backend.ready_leases(spec)) == 2
    assert leaser.wait_discarded(2)  # the used lease and the surplus one


def test_the_cap_on_all_kinds_holds_whatever_the_targets() -> None:
    settings = PoolSettings(size=1, max_size=10, max_containers=3)
    leaser = FakeLeaser()
    backend = PoolBackend(leaser, settings, sizer=Sizer(settings, spare=lambda: True))
    try:
        spec = job().spec
        for _ in range(6):
            backend.sizer.missed(spec)
        assert backend.sizer.target(spec) == 7
        backend.warm(spec)
        assert backend.wait_ready(spec, 3, timeout_s=10)
        backend.warm(spec)  # asks again: still no room
        assert len(backend.ready_leases(spec)) == 3 and len(leaser.started) == 3
    finally:
        backend.close()
