"""The host's own view of a container's resources, from the kernel's cgroup files.

Peak memory, CPU time, the count of OOM kills, the peak task count and the count of forks
and threads the pids limit refused come from the cgroups the container's first process lives
in, read on the host (never from anything inside the container). cgroup v1 (memory, cpuacct
and pids controllers) and v2 (unified) are both read: v1 on the test machines, v2 in the cgroup
v2 lab (docs/cgroup-v2-lab.md). A `Monitor` samples while the program runs, so a figure
survives a container that ends (and whose cgroup the engine removes) before the final reading.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import os
import threading
import weakref
from dataclasses import astuple, dataclass
from pathlib import Path

__all__ = ["CGROUP_ROOT", "CONTROLLERS_V2", "Cgroup", "Monitor", "Sample"]

CGROUP_ROOT = Path("/sys/fs/cgroup")
# cgroup v2: the controllers a sandbox's limits need (memory, its task count, its CPU quota)
CONTROLLERS_V2 = ("memory", "pids", "cpu")


@dataclass(frozen=True)
class Sample:
    memory_peak: int  # bytes
    cpu_ns: int
    oom_kills: int
    pids_peak: int = 0  # the most tasks at once (0: not known)
    pids_refused: int = 0  # forks and threads refused at the pids limit


class Cgroup:
    """The cgroup files of one container, found from the host pid of its first process.

    `pressure` is the container's own cgroup v2 `cpu.pressure` where it has one (v2, or runc
    on a v1 host, which also places it in the unified hierarchy; not runsc there): how long
    its tasks waited for a CPU the machine gave to others. `tasks` lists its threads.
    `oom_counter` is the memory cgroup whose count of OOM kills is read: its own, unless one
    that outlives it counts them too (`counted_in`, backends/oci/memcg.py)."""

    def __init__(
        self,
        memory: Path,
        cpu: Path,
        unified: bool,
        pids: Path | None = None,
        pressure: Path | None = None,
        proc: Path = Path("/proc"),
    ) -> None:
        self.memory = memory
        self.cpu = cpu
        self.unified = unified
        self.pids = pids if pids is not None else memory
        self.pressure = pressure
        self.tasks = cpu / ("cgroup.threads" if unified else "tasks")
        self.proc = proc
        self.oom_counter = memory
        # v2: the memory.peak descriptor a reset was written through, which alone reads the
        # peak since that reset; closed when this object goes (one per container)
        self._peak_fd: int | None = None

    @classmethod
    def of_pid(
        cls, pid: int, root: Path = CGROUP_ROOT, proc: Path = Path("/proc")
    ) -> Cgroup | None:
        """The cgroup of `pid` (None when it cannot be found or read from this host)."""
        try:
            lines = (proc / str(pid) / "cgroup").read_text().splitlines()
        except OSError:
            return None
        paths: dict[str, str] = {}
        for line in lines:
            _, controllers, path = line.split(":", 2)
            for name in controllers.split(",") if controllers else [""]:
                paths[name] = path.lstrip("/")
        own = paths.get("", "")  # the cgroup v2 path; "" or "/" is the root's, not its own
        if "memory" in paths and "cpuacct" in paths:
            pids = root / "pids" / paths["pids"] if "pids" in paths else None
            found = cls(
                root / "memory" / paths["memory"],
                root / "cpuacct" / paths["cpuacct"],
                False,
                pids,
                _pressure(root / "unified" / own) if own else None,
                proc,
            )
        elif "" in paths:
            pressure = _pressure(root / own) if own else None
            found = cls(root / own, root / own, True, None, pressure, proc)
        else:
            return None
        return found if found.sample() is not None else None

    def counted_in(self, folder: Path) -> Cgroup:
        """This one, its OOM kills read from `folder`, a memory cgroup that counts them too and
        outlives it: the same one on cgroup v1, its parent on v2 (backends/oci/memcg.py)."""
        self.oom_counter = folder
        return self

    def stall_ns(self) -> int | None:
        """How long, in all, at least one of its tasks waited for a CPU (PSI's `some`); None
        without a pressure file of its own."""
        if self.pressure is None:
            return None
        try:
            some = _read(self.pressure).splitlines()[0].split()
            return int(some[-1].removeprefix("total=")) * 1000
        except (OSError, ValueError, IndexError):
            return None

    def waits_ns(self) -> dict[int, int]:
        """Each live thread's time spent waiting for a CPU (/proc/<tid>/schedstat's second
        figure); empty when the cgroup is gone."""
        try:
            tids = _read(self.tasks).split()
        except OSError:
            return {}
        waits = {}
        for tid in tids:
            try:
                waits[int(tid)] = int(_read(self.proc / tid / "schedstat").split()[1])
            except (OSError, ValueError, IndexError):
                continue
        return waits

    def sample(self) -> Sample | None:
        """The figures now, or None when the cgroup is gone."""
        try:
            if self.unified:
                return self._sample_v2()
            return Sample(
                memory_peak=int(_read(self.memory / "memory.max_usage_in_bytes")),
                cpu_ns=int(_read(self.cpu / "cpuacct.usage")),
                oom_kills=self._oom_kills(),
                **self._pids(),
            )
        except (OSError, ValueError):
            return None

    def oom_kills(self) -> int | None:
        """The count of OOM kills alone (None when the memory cgroup is gone): read after a
        sandbox has ended, from a memory cgroup that outlives it (backends/oci/memcg.py)."""
        try:
            return self._oom_kills()
        except (OSError, ValueError):
            return None

    def _oom_kills(self) -> int:
        # v2's memory.events is hierarchical: a parent's counts its children's kills too
        name = "memory.events" if self.unified else "memory.oom_control"
        return _field(_read(self.oom_counter / name), "oom_kill")

    def usage(self) -> int | None:
        """The memory in use now (None when the cgroup is gone)."""
        name = "memory.current" if self.unified else "memory.usage_in_bytes"
        try:
            return int(_read(self.memory / name))
        except (OSError, ValueError):
            return None

    def runtime_memory(self) -> int | None:
        """The memory of the cgroup's processes themselves, not of what they map from files or
        shared memory: their anonymous memory and the kernel's memory for them (v1's
        `total_rss` and `memory.kmem.usage_in_bytes`, v2's `anon` and `kernel`). Under runsc
        every process in the cgroup is gVisor's own (the Sentry, the gofer, the stubs) and the
        program's memory, its files in tmpfs included, is gVisor's memory file (shared memory,
        `shmem`): this is then gVisor's own memory. None when the cgroup is gone."""
        try:
            stat = _read(self.memory / "memory.stat")
            if self.unified:
                return _field(stat, "anon") + _field(stat, "kernel")
            kmem = self.memory / "memory.kmem.usage_in_bytes"
            return _field(stat, "total_rss") + (int(_read(kmem)) if kmem.exists() else 0)
        except (OSError, ValueError):
            return None

    def limit_memory(self, limit: int) -> int | None:
        """Set the memory limit, and memory with swap to the same (no swap), to `limit`
        bytes. Returns None, or the bytes still in use when the kernel could not reclaim them
        down to `limit` (the limit is then left as it was); OSError for anything else."""
        if self.unified:
            in_use = int(_read(self.memory / "memory.current"))
            if in_use > limit:
                with contextlib.suppress(OSError):  # no memory.reclaim before Linux 5.19
                    _write(self.memory / "memory.reclaim", in_use - limit)
                in_use = int(_read(self.memory / "memory.current"))
            if in_use > limit:
                return in_use  # past it, the kernel would OOM-kill rather than refuse
            _write(self.memory / "memory.max", limit)
            return None
        memory = self.memory / "memory.limit_in_bytes"
        both = self.memory / "memory.memsw.limit_in_bytes"
        files = [memory, both] if both.exists() else [memory]
        if limit > int(_read(memory)):
            files.reverse()  # the kernel keeps memory with swap at least memory: raise it first
        in_use = int(_read(self.memory / "memory.usage_in_bytes"))
        for path in files:
            try:
                _write(path, limit)
            except OSError as exc:
                if exc.errno != errno.EBUSY:
                    raise
                return in_use  # what the build left, before the kernel reclaimed what it could
        return None

    def throttle_memory(self, high: int) -> bool:
        """Have the kernel slow the cgroup's allocations past `high` bytes (cgroup v2's
        `memory.high`: reclaim, then the allocating tasks sleep); False where it cannot (v1 has
        no such setting, or the cgroup is gone)."""
        if not self.unified:
            return False
        try:
            _write(self.memory / "memory.high", high)
        except OSError:
            return False
        return True

    def reset_peak(self) -> bool:
        """Start the peak memory over from what is in use now (a kept build's next test), where the
        kernel lets this process: cgroup v1's max_usage_in_bytes; v2's memory.peak from Linux
        6.12, whose reset holds only for reads through the descriptor written to, so that one
        is kept open and read from then on. False if it could not: the peak is
        then the container's so far, and the program's own is sampled
        (`Monitor.program_high`)."""
        if not self.unified:
            try:
                _write(self.memory / "memory.max_usage_in_bytes", 0)
            except OSError:
                return False
            return True
        fd = self._peak_fd
        try:
            if fd is None:
                fd = os.open(self.memory / "memory.peak", os.O_RDWR | os.O_CLOEXEC)
            os.write(fd, b"reset\n")  # any non-empty string (Linux 6.12's cgroup-v2.rst)
        except OSError:
            if fd is not None and fd != self._peak_fd:
                os.close(fd)
            return False
        if self._peak_fd is None:
            self._peak_fd = fd
            weakref.finalize(self, os.close, fd)
        return True

    def _pids(self) -> dict[str, int]:
        """The pids controller's figures; zeros where the kernel has no such file."""
        figures = {}
        for name, key in (("pids.peak", "pids_peak"), ("pids.events", "pids_refused")):
            try:
                text = _read(self.pids / name)
            except OSError:
                continue
            figures[key] = _field(text, "max") if name == "pids.events" else int(text)
        return figures

    def _sample_v2(self) -> Sample:
        peak = self.memory / "memory.peak"
        if self._peak_fd is not None:  # the peak since the reset written through it
            memory = os.pread(self._peak_fd, 64, 0).decode()
        else:
            memory = _read(peak if peak.exists() else self.memory / "memory.current")
        return Sample(
            memory_peak=int(memory),
            cpu_ns=_field(_read(self.cpu / "cpu.stat"), "usage_usec") * 1000,
            oom_kills=self._oom_kills(),
            **self._pids(),
        )


def _pressure(folder: Path) -> Path | None:
    path = folder / "cpu.pressure"
    return path if path.is_file() else None


def _read(path: Path) -> str:
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)  # twice as fast as open(): on every run's path
    try:
        return os.read(fd, 65536).decode()
    finally:
        os.close(fd)


def _write(path: Path, value: int) -> None:
    with open(path, "w") as f:
        f.write(str(value))


def _field(text: str, name: str) -> int:
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        if key == name:
            return int(value)
    return 0


class Monitor:
    """Samples a cgroup every `interval_s` while a run lasts and keeps the highest figures.

    The sampling is done by one thread per interval for all the runs of this process
    (`_Ticker`), not a thread per run: a run's own path only reads its baseline and, at its
    end, its last sample."""

    def __init__(self, cgroup: Cgroup, interval_s: float = 0.05, runtime_own: bool = False) -> None:
        self.cgroup = cgroup
        self.interval_s = interval_s
        self.runtime_own = runtime_own
        self.runtime_high = 0  # with `runtime_own`: the most seen of Cgroup.runtime_memory()
        self.baseline = cgroup.sample()
        self.last: Sample | None = self.baseline
        self._restarts = 0
        self.restarted = False  # restart_peak reset the peak at the program's start
        # where the kernel's peak could not be reset: the most memory in use (gVisor's own
        # aside) seen since the program started, sampled; None before it started
        self.program_high: int | None = None
        self._lock = threading.Lock()
        self._ticker = _Ticker.every(interval_s)
        self._ticker.add(self)

    def take(self) -> Sample | None:
        """Sample now; keep it if the cgroup is still there."""
        restarts = self._restarts
        now = self.cgroup.sample()
        own = self.cgroup.runtime_memory() if self.runtime_own and now is not None else None
        in_use = self.cgroup.usage() if self.program_high is not None else None
        if now is not None:
            with self._lock:
                if restarts != self._restarts:  # read before the peak was reset: not the program's
                    return now
                last = self.last or now
                pairs = zip(astuple(now), astuple(last), strict=True)
                self.last = Sample(*(max(a, b) for a, b in pairs))
                self.runtime_high = max(self.runtime_high, own or 0)
                if self.program_high is not None and in_use is not None:
                    self.program_high = max(self.program_high, in_use - (own or 0))
        return now

    def restart_peak(self) -> None:
        """The program starts now: its peak memory starts over from what is in use (the
        build's peak is not the program's), where the kernel lets this process reset it
        (`Cgroup.reset_peak`); else the program's memory in use is sampled from now on
        (`program_high`)."""
        with self._lock:  # gVisor's own memory during a build is not subtracted from the program's
            self.runtime_high = 0
            self._restarts += 1  # nor is a sample the ticker read before now (take drops it)
        if not self.cgroup.reset_peak():
            with self._lock:
                self.program_high = 0
            self.take()
            return
        with self._lock:
            self.restarted = True
            self._restarts += 1  # a sample read before the kernel's peak was reset, likewise
            if self.last is not None:
                self.last = dataclasses.replace(self.last, memory_peak=0)
        self.take()

    def stop(self) -> Sample | None:
        """Take a last sample and stop; the best figures seen."""
        self._ticker.remove(self)
        self.take()
        return self.last


class _Ticker:
    """One daemon thread that samples every monitor of one interval (started with the first,
    idle while there is none). A sample a monitor takes while it stops is harmless: figures
    only ever rise."""

    def __init__(self, interval_s: float) -> None:
        self.interval_s = interval_s
        self._monitors: set[Monitor] = set()
        self._cv = threading.Condition()
        thread = threading.Thread(target=self._loop, name="hazmat-monitor", daemon=True)
        thread.start()

    @classmethod
    def every(cls, interval_s: float) -> _Ticker:
        with _TICKERS_MADE:
            ticker = _TICKERS.get(interval_s)
            if ticker is None:
                ticker = _TICKERS[interval_s] = cls(interval_s)
            return ticker

    def add(self, monitor: Monitor) -> None:
        with self._cv:
            if not self._monitors:
                self._cv.notify()  # the thread was idle
            self._monitors.add(monitor)

    def remove(self, monitor: Monitor) -> None:
        with self._cv:
            self._monitors.discard(monitor)

    def _loop(self) -> None:
        while True:
            with self._cv:
                while not self._monitors:
                    self._cv.wait()
                self._cv.wait(self.interval_s)
                monitors = list(self._monitors)
            for monitor in monitors:
                monitor.take()


_TICKERS: dict[float, _Ticker] = {}
_TICKERS_MADE = threading.Lock()


def _forget_tickers() -> None:
    global _TICKERS_MADE  # noqa: PLW0603 (a forked child's own)
    _TICKERS.clear()  # a forked child has none of its parent's threads
    _TICKERS_MADE = threading.Lock()


os.register_at_fork(after_in_child=_forget_tickers)
