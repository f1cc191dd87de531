"""One run's measured program on the CPU clock (backends/container/cpu_time.py): its core and its
meter.

`begin()` is called when the program starts, which is when the host has just sent it its go:
at once for a program without a build step, after the build for one with it, after the
unpacking for a kept build's test (the agent waits for the host in both). It waits for a core
(backends/container/cores.py: no more measured programs at once than the machine has cores), then
starts the meter. While the program runs the pump calls `check()`; `finish()` takes the last reading
and lets the core go. A run on the wall clock, or one whose container's cgroup this host cannot
read, measures nothing (`active` is False) and keeps the wall-clock limit. A session's call
under runsc is also watched for its memory (backends/container/memory.py's `SessionWatch`),
on either clock.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

from hazmat.backends.container.cgroup import Cgroup, Monitor
from hazmat.backends.container.cores import Cores
from hazmat.backends.container.cpu_time import CpuLimit, CpuMeter, Reading
from hazmat.backends.container.memory import SessionWatch

__all__ = ["Measure"]

NO_METER_NOTE = (
    "the CPU time limit was applied as a wall-clock limit: this host cannot read the "
    "container's cgroup"
)


class Measure:
    """The measuring of one run's program (nothing when `limit` is None)."""

    def __init__(
        self,
        limit: CpuLimit | None,
        cgroup: Cgroup | None,
        cores: Cores | None,
        monitor: Monitor | None = None,
        watch: SessionWatch | None = None,
    ) -> None:
        self.monitor = monitor
        self.watch = watch
        self.limit = limit if cgroup is not None else None
        self.wanted = limit is not None
        self.meter = CpuMeter(cgroup) if self.limit is not None and cgroup is not None else None
        self.cores = cores
        self._held = contextlib.ExitStack()
        self.final: Reading | None = None

    @property
    def active(self) -> bool:
        return self.meter is not None

    @property
    def checks(self) -> bool:
        """Whether `check()` can give a reason to stop: a meter, or a watch."""
        return self.active or self.watch is not None

    @property
    def check_s(self) -> float:
        """How often `check()` is called while the program runs."""
        every = [self.limit.check_s] if self.limit is not None else []
        every += [self.watch.check_s] if self.watch is not None else []
        return min(every, default=0.05)

    @property
    def note(self) -> str | None:
        """What the result says when a CPU limit was asked for and could not be measured."""
        return NO_METER_NOTE if self.wanted and not self.active else None

    def begin(self, gate: Callable[[], None] | None = None, after: bool = False) -> None:
        """The program starts now: hold a core, then (past `gate`, which may wait: an
        interactive test's other program, grade/interaction.py) start the meter. `after`: a
        build or an unpacking came first, or a session's earlier calls, whose peak memory is
        not the program's."""
        if after and self.monitor is not None:
            self.monitor.restart_peak()
        if self.meter is None or self.meter.began is not None:
            if gate is not None:
                gate()
            return
        if self.cores is not None:
            self._held.enter_context(self.cores.hold())
        if gate is not None:
            gate()
        self.meter.start()

    def check(self) -> str | None:
        """Why the program must stop now, if it must (CpuLimit.reason_to_stop, then the
        session's memory watch)."""
        if self.meter is not None and self.limit is not None:
            reading = self.meter.read()
            reason = self.limit.reason_to_stop(reading) if reading is not None else None
            if reason is not None:
                return reason
        return self.watch.check() if self.watch is not None else None

    def finish(self) -> Reading | None:
        """The program has ended (or was stopped): the last reading; the core goes."""
        try:
            if self.meter is not None and self.meter.began is not None:
                self.final = self.meter.read() or self.meter.last
            return self.final
        finally:
            self._held.close()

    def over_limit(self) -> bool:
        """Whether the program's CPU time, read at its end, passed its limit."""
        return (
            self.final is not None
            and self.limit is not None
            and (self.final.cpu_s > self.limit.limit_s)
        )
