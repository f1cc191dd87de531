"""CPU-time limits without an engine: the rule (backends/container/cpu_time.py), the meter over
cgroup files in a temporary tree, and the cores a measured program holds
(backends/container/cores.py), with a second real process holding one."""

from __future__ import annotations

import logging
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from hazmat.backends.container.cgroup import Cgroup
from hazmat.backends.container.cores import Cores
from hazmat.backends.container.cpu_time import CpuLimit, CpuMeter, Reading
from hazmat.testing import Clock


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_the_backstop_is_the_larger_of_twice_the_limit_and_the_limit_plus_a_second() -> None:
    assert CpuLimit(0.5).backstop_s == 1.5
    assert CpuLimit(1.0).backstop_s == 2.0
    assert CpuLimit(3.0).backstop_s == 6.0
    assert CpuLimit(2.0).cap_s == 60.0 and CpuLimit(10.0).cap_s == 200.0


def test_what_stops_a_program() -> None:
    limit = CpuLimit(1.0)
    assert limit.reason_to_stop(Reading(cpu_s=0.99, wall_s=1.5, waited_s=0.0)) is None
    assert limit.reason_to_stop(Reading(cpu_s=1.0, wall_s=1.0, waited_s=0.0)) == "cpu"
    # sleeping: its own wall-clock time reaches the backstop
    assert limit.reason_to_stop(Reading(cpu_s=0.01, wall_s=2.0, waited_s=0.0)) == "idle"
    # starved, not idle: the time it waited for a CPU is not its own
    starved = Reading(cpu_s=0.5, wall_s=5.0, waited_s=4.5)
    assert starved.own_wall_s == pytest.approx(0.5)
    assert limit.reason_to_stop(starved) is None
    assert limit.reason_to_stop(Reading(cpu_s=0.5, wall_s=60.0, waited_s=59.5)) == "busy"


def _runc_cgroup(tmp_path: Path) -> tuple[Cgroup, Path, Path]:
    """A v1 container under runc: its own unified cgroup has a pressure file."""
    proc, root = tmp_path / "proc", tmp_path / "cg"
    _write(proc / "42/cgroup", "4:memory:/docker/c\n2:cpuacct:/docker/c\n0::/docker/c\n")
    _write(root / "memory/docker/c/memory.max_usage_in_bytes", "1\n")
    _write(root / "memory/docker/c/memory.oom_control", "oom_kill 0\n")
    _write(root / "cpuacct/docker/c/cpuacct.usage", "1000000000\n")
    pressure = root / "unified/docker/c/cpu.pressure"
    _write(pressure, "some avg10=0.00 avg60=0.00 avg300=0.00 total=1000\nfull total=0\n")
    cgroup = Cgroup.of_pid(42, root=root, proc=proc)
    assert cgroup is not None and cgroup.pressure == pressure
    return cgroup, root / "cpuacct/docker/c/cpuacct.usage", pressure


def test_the_meter_counts_from_the_start_and_takes_the_wait_from_the_pressure_file(
    tmp_path: Path,
) -> None:
    cgroup, usage, pressure = _runc_cgroup(tmp_path)
    clock = Clock()
    meter = CpuMeter(cgroup, clock=clock)
    assert meter.read() is None  # not started
    meter.start()
    _write(usage, "1400000000\n")  # 0.4 s of CPU since the start
    _write(pressure, "some avg10=1.00 avg60=0.00 avg300=0.00 total=2501000\nfull total=0\n")
    clock.now += 3.0
    reading = meter.read()
    assert reading == Reading(cpu_s=pytest.approx(0.4), wall_s=3.0, waited_s=pytest.approx(2.5))
    usage.unlink()  # the container is gone: the last reading stays
    assert meter.read() is None and meter.last == reading


def test_without_a_pressure_file_the_longest_waiting_thread_counts(tmp_path: Path) -> None:
    proc, root = tmp_path / "proc", tmp_path / "cg"
    _write(proc / "7/cgroup", "4:memory:/docker/g\n2:cpuacct:/docker/g\n0::/\n")  # runsc on v1
    _write(root / "memory/docker/g/memory.max_usage_in_bytes", "1\n")
    _write(root / "memory/docker/g/memory.oom_control", "oom_kill 0\n")
    _write(root / "cpuacct/docker/g/cpuacct.usage", "0\n")
    _write(root / "cpuacct/docker/g/tasks", "100\n101\n")
    _write(proc / "100/schedstat", "5 1000000000 3\n")
    _write(proc / "101/schedstat", "5 0 3\n")
    cgroup = Cgroup.of_pid(7, root=root, proc=proc)
    assert cgroup is not None and cgroup.pressure is None
    clock = Clock()
    meter = CpuMeter(cgroup, clock=clock)
    meter.start()
    _write(proc / "100/schedstat", "5 1300000000 3\n")  # waited 0.3 s since the start
    _write(proc / "101/schedstat", "5 800000000 3\n")  # 0.8 s
    _write(root / "cpuacct/docker/g/tasks", "100\n101\n102\n")
    _write(proc / "102/schedstat", "5 200000000 3\n")  # new since the start: all of it
    clock.now += 2.0
    reading = meter.read()
    assert reading is not None and reading.waited_s == pytest.approx(0.8)
    # a thread that has gone keeps what it was seen to wait
    _write(root / "cpuacct/docker/g/tasks", "100\n")
    assert meter.read() == Reading(cpu_s=0.0, wall_s=2.0, waited_s=pytest.approx(0.8))


def test_no_more_holders_than_cores_in_one_process() -> None:
    cores = Cores(2)
    entered = threading.Barrier(3, timeout=10)
    release = threading.Event()
    inside: list[int] = []

    def hold(number: int) -> None:
        with cores.hold():
            inside.append(number)
            if number < 2:
                entered.wait()
            release.wait(10)

    threads = [threading.Thread(target=hold, args=(n,)) for n in range(3)]
    for thread in threads:
        thread.start()
    entered.wait()  # the first two hold their cores
    assert sorted(inside) == [0, 1]
    # the third waits, and says so
    assert _eventually(lambda: cores.waiting == 1)
    release.set()
    for thread in threads:
        thread.join(10)
    assert sorted(inside) == [0, 1, 2] and cores.waiting == 0


def test_a_core_another_process_holds_is_not_taken_and_the_wait_says_whose(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    holder = subprocess.Popen(  # another hazmat process, holding the one core
        [
            sys.executable,
            "-c",
            "import sys\n"
            "from hazmat.backends.container.cores import Cores\n"
            f"with Cores(1, __import__('pathlib').Path({str(tmp_path)!r})).hold():\n"
            "    print('held', flush=True)\n"
            "    sys.stdin.read()\n",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdin is not None
    assert holder.stdout.readline() == "held\n"
    cores = Cores(1, tmp_path)
    got, said = threading.Event(), threading.Event()

    class Told(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if "waiting for a core" in record.getMessage():
                said.set()

    def take() -> None:
        with cores.hold():
            got.set()

    told = Told()
    logging.getLogger("hazmat.backends.container.cores").addHandler(told)
    thread = threading.Thread(target=take)
    try:
        with caplog.at_level(logging.WARNING, "hazmat.backends.container.cores"):
            thread.start()
            assert _eventually(lambda: cores.waiting == 1)  # it waits for the lock, not for us
            assert said.wait(10), "the wait was not said"
            assert not got.is_set(), "took the core another process holds"
            holder.stdin.close()  # the holder ends; the kernel lets its lock go
            holder.wait(10)
            holder.stdout.close()
            assert got.wait(10)
            thread.join(10)
    finally:
        logging.getLogger("hazmat.backends.container.cores").removeHandler(told)
    waited, freed = (r.getMessage() for r in caplog.records)
    assert f"core lock(s) in {tmp_path} are held by this user's other hazmat processes" in waited
    assert f"(pid {holder.pid} ({Path(sys.executable).name} -c " in waited
    assert freed.startswith("a core is free after ")


def test_a_folder_that_is_not_usable_counts_this_process_only(tmp_path: Path) -> None:
    taken = tmp_path / "a-file"
    taken.write_text("")
    cores = Cores(1, taken / "cores")
    assert cores.folder is None
    with cores.hold():
        pass


def _eventually(condition: object) -> bool:
    event = threading.Event()
    for _ in range(500):
        if condition():  # type: ignore[operator]
            return True
        event.wait(0.01)
    return False
