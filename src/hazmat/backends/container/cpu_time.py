"""CPU-time limits, as judges have them: a grader's tests (`Clock.CPU`, docs/batch.md).

The limit is the CPU time of the program and of every process it starts, read on the host from
the container's cgroup between the program's start (after its build, or a kept build's unpacking)
and its end; the result's `cpu_time_ms` is that figure. Wall-clock time is only a backstop,
for a program that sleeps or waits: it is stopped once its own wall-clock time, which is the
time that passed less the time its tasks waited for a CPU the machine was giving to others,
reaches `backstop_s`, the larger of twice the limit and the limit plus one second. Neither the
machine's load nor how many runs share it changes what a program may do, then. How long the
tasks waited comes from the container's own `cpu.pressure` (the kernel's pressure stall
information: time in which at least one of its tasks waited) where it has one (cgroup v2, and
runc on a v1 host), else from each of its threads' run-queue time (`/proc/<tid>/schedstat`), of
which the longest counts (runsc on a v1 host, where the threads are gVisor's own). A machine so
busy that the program's wall-clock time reaches `cap_s` first is an infrastructure failure, not
a verdict.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from hazmat.backends.container.cgroup import Cgroup

__all__ = ["CpuLimit", "CpuMeter", "Reading"]


@dataclass(frozen=True)
class CpuLimit:
    """A run's CPU-time limit, and the wall-clock rules that go with it."""

    limit_s: float

    @property
    def backstop_s(self) -> float:
        """The program's own wall-clock time at which it is stopped as idle."""
        return max(2 * self.limit_s, self.limit_s + 1.0)

    @property
    def cap_s(self) -> float:
        """The wall-clock time at which a program the machine starved is given up on."""
        return max(10 * self.backstop_s, 60.0)

    @property
    def check_s(self) -> float:
        """How often the host reads the figures while the program runs."""
        return 0.025 if self.limit_s < 2 else 0.05

    def reason_to_stop(self, reading: Reading) -> str | None:
        """Why the program must stop now: `cpu` (its limit), `idle` (the backstop), `busy`
        (the machine starved it); None while it may go on."""
        if reading.cpu_s >= self.limit_s:
            return "cpu"
        if reading.own_wall_s >= self.backstop_s:
            return "idle"
        if reading.wall_s >= self.cap_s:
            return "busy"
        return None


@dataclass(frozen=True)
class Reading:
    """The program's figures since it started, in seconds."""

    cpu_s: float
    wall_s: float
    waited_s: float  # waiting for a CPU the machine gave to others

    @property
    def own_wall_s(self) -> float:
        return max(0.0, self.wall_s - self.waited_s)


class CpuMeter:
    """A container's CPU time and waiting since `start()`, from its cgroup on the host."""

    def __init__(self, cgroup: Cgroup, clock: Callable[[], float] = time.monotonic) -> None:
        self.cgroup = cgroup
        self.clock = clock
        self.began: float | None = None
        self._cpu = 0
        self._stall: int | None = None
        self._waits: dict[int, int] = {}
        self._longest = 0
        self.last: Reading | None = None

    def start(self) -> None:
        """The program starts now."""
        sample = self.cgroup.sample()
        self._cpu = sample.cpu_ns if sample is not None else 0
        self._stall = self.cgroup.stall_ns()
        self._waits = self.cgroup.waits_ns() if self._stall is None else {}
        self._longest = 0
        self.began = self.clock()
        self.last = Reading(0.0, 0.0, 0.0)

    def read(self) -> Reading | None:
        """The figures now (None before `start`, or once the cgroup is gone: `last` keeps
        the latest)."""
        if self.began is None:
            return None
        sample = self.cgroup.sample()
        if sample is None:
            return None
        wall = self.clock() - self.began
        self.last = Reading((sample.cpu_ns - self._cpu) / 1e9, wall, self._waited() / 1e9)
        return self.last

    def _waited(self) -> int:
        if self._stall is not None:
            now = self.cgroup.stall_ns()
            return max(0, now - self._stall) if now is not None else 0
        for tid, wait in self.cgroup.waits_ns().items():
            self._longest = max(self._longest, wait - self._waits.get(tid, 0))
        return self._longest
