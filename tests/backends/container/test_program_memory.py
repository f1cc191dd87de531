"""A program's own memory from its cgroup files (backends/container/memory.py), in a temporary
tree: gVisor's own memory (anonymous and kernel memory) told apart from the program's, the peak
started over at the program's go, and what a build left judged against the program's limit."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

from hazmat.backends.base import RUNSC_MEMORY_MB
from hazmat.backends.container.cgroup import Cgroup, Monitor
from hazmat.backends.container.memory import SessionWatch, held_beside_runsc, program_peak

MiB = 1024 * 1024


def _v1(tmp_path: Path, peak: int, usage: int, rss: int, kmem: int) -> Cgroup:
    memory, cpu = tmp_path / "memory", tmp_path / "cpuacct"
    for folder in (memory, cpu):
        folder.mkdir(exist_ok=True)
    (memory / "memory.max_usage_in_bytes").write_text(f"{peak}\n")
    (memory / "memory.usage_in_bytes").write_text(f"{usage}\n")
    (memory / "memory.oom_control").write_text("oom_kill 0\n")
    # what runsc's cgroup holds: the program's memory as gVisor's memory file (shmem, cache)
    (memory / "memory.stat").write_text(
        f"cache {usage - rss}\nrss {rss}\nshmem {usage - rss}\n"
        f"total_cache {usage - rss}\ntotal_rss {rss}\ntotal_shmem {usage - rss}\n"
    )
    (memory / "memory.kmem.usage_in_bytes").write_text(f"{kmem}\n")
    (cpu / "cpuacct.usage").write_text("1\n")
    return Cgroup(memory, cpu, False)


def test_gvisors_own_memory_is_its_anonymous_and_kernel_memory(tmp_path: Path) -> None:
    cgroup = _v1(tmp_path, 270 * MiB, 266 * MiB, 12 * MiB, 2 * MiB)
    assert cgroup.runtime_memory() == 14 * MiB
    assert cgroup.usage() == 266 * MiB


def test_v2_reads_anon_and_kernel(tmp_path: Path) -> None:
    (tmp_path / "memory.stat").write_text("anon 1000\nfile 5000\nkernel 300\nshmem 4000\n")
    assert Cgroup(tmp_path, tmp_path, True).runtime_memory() == 1300


def test_the_programs_peak_is_the_cgroups_less_gvisors_own(tmp_path: Path) -> None:
    cgroup = _v1(tmp_path, 270 * MiB, 266 * MiB, 12 * MiB, 2 * MiB)
    runsc, runc = Monitor(cgroup, runtime_own=True), Monitor(cgroup)
    runsc.take()
    runc.take()
    assert program_peak(runsc.stop(), runsc) == 256 * MiB
    assert program_peak(runc.stop(), runc) == 270 * MiB  # under runc all of it is the program's


def test_the_peak_starts_over_at_the_programs_go(tmp_path: Path) -> None:
    cgroup = _v1(tmp_path, 900 * MiB, 20 * MiB, 0, 0)  # a compiler's peak
    monitor = Monitor(cgroup)
    assert not monitor.restarted
    monitor.restart_peak()  # the kernel's watermark is reset: the file now reads what is in use
    assert monitor.restarted
    assert (tmp_path / "memory/memory.max_usage_in_bytes").read_text() == "0"
    (tmp_path / "memory/memory.max_usage_in_bytes").write_text(f"{30 * MiB}\n")
    figures = monitor.stop()
    assert figures is not None and figures.memory_peak == 30 * MiB


def test_what_a_build_left_is_judged_without_gvisors_own(tmp_path: Path) -> None:
    cgroup = _v1(tmp_path, 90 * MiB, 84 * MiB, 18 * MiB, 2 * MiB)  # 64 MiB the build's
    assert held_beside_runsc(cgroup, 64) is None
    assert held_beside_runsc(cgroup, 48) == 64 * MiB


def _v2(folder: Path, peak: int, current: int, anon: int) -> Cgroup:
    folder.mkdir(exist_ok=True)
    (folder / "memory.peak").write_text(f"{peak}\n")
    (folder / "memory.current").write_text(f"{current}\n")
    (folder / "memory.stat").write_text(f"anon {anon}\nkernel 0\nshmem {current - anon}\n")
    (folder / "memory.events").write_text("oom_kill 0\n")
    (folder / "cpu.stat").write_text("usage_usec 1\n")
    return Cgroup(folder, folder, True)


def test_on_v2_the_peak_is_reset_and_read_through_one_descriptor(tmp_path: Path) -> None:
    """A write to v2's memory.peak (Linux 6.12) resets the peak only as read through the same
    descriptor: a new descriptor for each read showed the compiler's 900 MiB as the program's
    peak (and, under runsc, its memory_limit). Here a plain file stands in for the kernel's:
    what is asserted is that the reset is written through the descriptor the reads then use."""
    cgroup = _v2(tmp_path, 900 * MiB, 20 * MiB, 0)
    monitor = Monitor(cgroup)
    monitor.restart_peak()
    assert monitor.restarted and monitor.program_high is None
    assert (tmp_path / "memory.peak").read_text().startswith("reset")  # written through it
    os.replace(tmp_path / "memory.peak", tmp_path / "gone")  # a new descriptor would fail
    (tmp_path / "gone").write_text(f"{30 * MiB}\n")  # the same inode: what the kernel keeps
    figures = monitor.stop()
    assert figures is not None and figures.memory_peak == 30 * MiB


def test_on_v2_where_the_peak_cannot_be_reset_the_programs_is_sampled(tmp_path: Path) -> None:
    """Before Linux 6.12 v2's memory.peak cannot be written, and before 5.19 there is none (as
    here): what is in use is sampled from the program's go instead, gVisor's own aside."""
    cgroup = _v2(tmp_path, 900 * MiB, 20 * MiB, 4 * MiB)
    (tmp_path / "memory.peak").unlink()
    runsc = Monitor(cgroup, runtime_own=True)
    runsc.restart_peak()
    assert not runsc.restarted and runsc.program_high == 16 * MiB
    (tmp_path / "memory.current").write_text(f"{300 * MiB}\n")
    runsc.take()
    (tmp_path / "memory.current").write_text(f"{30 * MiB}\n")
    assert program_peak(runsc.stop(), runsc) == 296 * MiB  # the most seen, gVisor's own aside


def test_gvisors_own_memory_during_a_build_is_not_the_programs_to_lose(tmp_path: Path) -> None:
    """gVisor's own memory was subtracted at its highest over the whole run: a build that grew
    it by 26 MiB let the program use 26 MiB more than its limit unjudged."""
    cgroup = _v1(tmp_path, 500 * MiB, 300 * MiB, 40 * MiB, 0)  # building: gVisor holds 40 MiB
    monitor = Monitor(cgroup, runtime_own=True)
    monitor.take()
    _v1(tmp_path, 20 * MiB, 20 * MiB, 14 * MiB, 0)  # the build is over: 14 MiB
    monitor.restart_peak()
    (tmp_path / "memory/memory.max_usage_in_bytes").write_text(f"{270 * MiB}\n")
    assert program_peak(monitor.stop(), monitor) == 256 * MiB


class _Held(Cgroup):
    """A cgroup whose gVisor's-own reading waits, once, until the test lets it go: a sample
    the ticker began before the program's start that ends after it; `during_reset` runs as
    the peak is reset (between `restart_peak`'s two steps)."""

    def __init__(self, base: Cgroup) -> None:
        super().__init__(base.memory, base.cpu, base.unified)
        self.reading, self.go = threading.Event(), threading.Event()
        self.hold = False
        self.during_reset: Callable[[], None] = lambda: None

    def reset_peak(self) -> bool:
        self.during_reset()
        return super().reset_peak()

    def runtime_memory(self) -> int:
        seen = super().runtime_memory()
        if self.hold:
            self.hold = False
            self.reading.set()
            self.go.wait(30)
        return seen


def test_a_sample_read_during_the_build_and_kept_after_the_start_is_dropped(
    tmp_path: Path,
) -> None:
    """The race behind a flaky CI run: a tick that read gVisor's 40 MiB of the build and took
    the lock after `restart_peak` cleared `runtime_high` put the 40 MiB back, so the program
    was judged 26 MiB lighter than it was."""
    cgroup = _Held(_v1(tmp_path, 500 * MiB, 300 * MiB, 40 * MiB, 0))  # building: 40 MiB
    monitor = Monitor(cgroup, runtime_own=True, interval_s=3600.0)  # no tick but ours
    cgroup.hold = True
    late = threading.Thread(target=monitor.take)
    late.start()
    assert cgroup.reading.wait(30)  # the sample has read 40 MiB and waits
    _v1(tmp_path, 20 * MiB, 20 * MiB, 14 * MiB, 0)  # the build is over: 14 MiB

    def the_late_sample_lands() -> None:  # after runtime_high is cleared, before the reset
        cgroup.go.set()
        late.join(30)

    cgroup.during_reset = the_late_sample_lands
    monitor.restart_peak()
    assert not late.is_alive()
    (tmp_path / "memory/memory.max_usage_in_bytes").write_text(f"{270 * MiB}\n")
    assert program_peak(monitor.stop(), monitor) == 256 * MiB


def test_a_session_call_is_stopped_once_its_own_memory_passes_the_limit(tmp_path: Path) -> None:
    """gVisor's own memory is not the program's: 266 MB in use of which 14 are gVisor's is 252
    MB of the program's, under 256; 20 MB more is over. cgroup v1 has no memory.high: nothing
    is written there."""
    cgroup = _v1(tmp_path, 270 * MiB, 266 * MiB, 12 * MiB, 2 * MiB)
    watch = SessionWatch(cgroup, 256)
    assert watch.check() is None
    (tmp_path / "memory/memory.usage_in_bytes").write_text(f"{286 * MiB}\n")
    assert watch.check() == "memory"
    assert not (tmp_path / "memory/memory.high").exists()
    (tmp_path / "memory/memory.usage_in_bytes").unlink()  # the sandbox is gone
    assert watch.check() is None


def test_on_cgroup_v2_the_kernel_slows_a_session_from_halfway_up_the_backstop(
    tmp_path: Path,
) -> None:
    memory = tmp_path / "sandbox"
    memory.mkdir()
    (memory / "memory.current").write_text(f"{100 * MiB}\n")
    (memory / "memory.stat").write_text(f"anon {15 * MiB}\nkernel {3 * MiB}\nshmem {82 * MiB}\n")
    (memory / "memory.high").write_text("max\n")
    watch = SessionWatch(Cgroup(memory, memory, True), 256)
    high = int((memory / "memory.high").read_text())
    assert high == (256 + RUNSC_MEMORY_MB // 2) * MiB
    assert watch.check() is None
    (memory / "memory.current").write_text(f"{(256 + 19) * MiB}\n")
    assert watch.check() == "memory"


class _Releasing(Cgroup):
    """A runsc sandbox's cgroup whose memory in use is read from `readings` (gVisor giving the
    host back what the last call's ended processes held), the last one repeated."""

    def __init__(self, folder: Path, readings: list[int]) -> None:
        super().__init__(folder, folder, False)
        self.readings = readings
        self.reads = 0

    def usage(self) -> int | None:
        self.reads += 1
        return self.readings[min(self.reads, len(self.readings)) - 1]

    def runtime_memory(self) -> int | None:
        return 16 * MiB


def test_a_session_call_starts_once_the_last_calls_memory_is_given_back(tmp_path: Path) -> None:
    """What the last call's processes held is given back to the host tens of ms after they
    end: the next call waits for it, else its watch would end it for memory not its own."""
    cgroup = _Releasing(tmp_path, [300 * MiB, 290 * MiB, 120 * MiB, 40 * MiB])
    watch = SessionWatch(cgroup, 256)
    watch.settle()
    assert cgroup.reads == 3 and watch.check() is None
    held = _Releasing(tmp_path, [300 * MiB])  # what the session itself holds: no wait for ever
    SessionWatch(held, 256).settle(within_s=0.05)
    assert held.reads > 1 and SessionWatch(held, 256).check() == "memory"
