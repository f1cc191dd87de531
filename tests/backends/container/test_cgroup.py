"""Reading a container's figures from cgroup files: v1 and v2 layouts, in a temporary tree."""

from __future__ import annotations

import time
from pathlib import Path

from hazmat.backends.container.cgroup import Cgroup, Monitor


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_v1_memory_and_cpuacct_controllers(tmp_path: Path) -> None:
    proc, root = tmp_path / "proc", tmp_path / "cg"
    _write(
        proc / "42" / "cgroup",
        "4:memory:/docker/abc\n2:cpuacct:/docker/abc\n1:cpu:/docker/abc\n0::/\n",
    )
    _write(root / "memory/docker/abc/memory.max_usage_in_bytes", "1048576\n")
    _write(
        root / "memory/docker/abc/memory.oom_control",
        "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n",
    )
    _write(root / "cpuacct/docker/abc/cpuacct.usage", "5000000\n")
    cgroup = Cgroup.of_pid(42, root=root, proc=proc)
    assert cgroup is not None and not cgroup.unified
    sample = cgroup.sample()
    assert sample is not None
    assert (sample.memory_peak, sample.cpu_ns, sample.oom_kills) == (1048576, 5_000_000, 2)


def test_v2_unified_hierarchy_with_and_without_memory_peak(tmp_path: Path) -> None:
    proc, root = tmp_path / "proc", tmp_path / "cg"
    _write(proc / "7" / "cgroup", "0::/system.slice/docker-abc.scope\n")
    base = root / "system.slice/docker-abc.scope"
    _write(base / "memory.current", "2000\n")
    _write(base / "cpu.stat", "usage_usec 1500\nuser_usec 1000\n")
    _write(base / "memory.events", "low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n")
    cgroup = Cgroup.of_pid(7, root=root, proc=proc)
    assert cgroup is not None and cgroup.unified
    sample = cgroup.sample()
    assert sample is not None and (sample.memory_peak, sample.cpu_ns, sample.oom_kills) == (
        2000,
        1_500_000,
        1,
    )
    _write(base / "memory.peak", "9000\n")
    sample = cgroup.sample()
    assert sample is not None and sample.memory_peak == 9000


def test_missing_process_or_files_give_none(tmp_path: Path) -> None:
    assert Cgroup.of_pid(1, root=tmp_path, proc=tmp_path) is None
    _write(tmp_path / "proc/5/cgroup", "4:memory:/gone\n2:cpuacct:/gone\n")
    assert Cgroup.of_pid(5, root=tmp_path / "cg", proc=tmp_path / "proc") is None


def test_the_monitor_keeps_the_highest_figures_after_the_cgroup_is_gone(tmp_path: Path) -> None:
    proc, root = tmp_path / "proc", tmp_path / "cg"
    _write(proc / "9" / "cgroup", "0::/c\n")
    _write(root / "c/memory.current", "100\n")
    _write(root / "c/cpu.stat", "usage_usec 10\n")
    _write(root / "c/memory.events", "oom_kill 0\n")
    cgroup = Cgroup.of_pid(9, root=root, proc=proc)
    assert cgroup is not None
    monitor = Monitor(cgroup, interval_s=0.01)
    _write(root / "c/memory.current", "700\n")
    _write(root / "c/cpu.stat", "usage_usec 50\n")
    monitor.take()
    _write(root / "c/memory.current", "300\n")
    monitor.take()
    for name in ("memory.current", "cpu.stat", "memory.events"):
        (root / "c" / name).unlink()
    last = monitor.stop()
    assert last is not None and (last.memory_peak, last.cpu_ns) == (700, 50_000)
    assert monitor.baseline is not None and monitor.baseline.cpu_ns == 10_000


def test_the_monitor_samples_by_itself_while_the_run_lasts(tmp_path: Path) -> None:
    """A peak that comes and goes between the run's start and its end is kept: the process's
    one sampling thread (not the run's own path) saw it."""
    proc, root = tmp_path / "proc", tmp_path / "cg"
    _write(proc / "9" / "cgroup", "0::/c\n")
    _write(root / "c/memory.current", "100\n")
    _write(root / "c/cpu.stat", "usage_usec 10\n")
    _write(root / "c/memory.events", "oom_kill 0\n")
    cgroup = Cgroup.of_pid(9, root=root, proc=proc)
    assert cgroup is not None
    monitors = [Monitor(cgroup, interval_s=0.005) for _ in range(3)]
    _write(root / "c/memory.current", "900\n")
    deadline = time.monotonic() + 30
    while not all(m.last and m.last.memory_peak == 900 for m in monitors):
        assert time.monotonic() < deadline, "no monitor was sampled in 30 s"
        time.sleep(0.001)
    _write(root / "c/memory.current", "200\n")
    peaks = [m.stop() for m in monitors]
    assert [p.memory_peak if p else None for p in peaks] == [900, 900, 900]
