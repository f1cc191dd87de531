"""A program's own memory, from its container's cgroup on the host, under runc and runsc.

Under runc every process in the container's cgroup is the program's (and the agent's shell,
about 1 MB), and the cgroup's limit is the program's: the kernel kills at it. Under runsc the
cgroup also holds gVisor itself (the Sentry, the gofer, the ptrace stubs), whose own memory is
their anonymous memory and the kernel's memory for them (`Cgroup.runtime_memory`: 17-25 MB
idle, measured), while the program's memory and its files in tmpfs are all gVisor's memory
file (shared memory). So under runsc the program's peak is the cgroup's less gVisor's own, the
cgroup's limit is a backstop `RUNSC_MEMORY_MB` above the program's (`Spec.runtime_memory_mb`),
and the program's limit is judged from its own peak (`RunReport.memory_exceeded`). The peak is
counted from the program's start (`Monitor.restart_peak`): a build's is not the program's. Where
the kernel cannot reset a peak (cgroup v2 before Linux 6.12), the program's is the most memory
in use seen since its start (sampled every 50 ms, gVisor's own aside): a spike shorter than
that can pass unseen, and under runsc the backstop still bounds it.

gVisor has no OOM killer of its own: under runsc a program that reaches the backstop is the
host's OOM kill of the whole sandbox. For a run that is its end anyway; a session would lose
its files and everything it keeps. So under runsc a session's call is watched
(`SessionWatch`): once the program's memory in use (gVisor's own aside) passes its limit, the
host ends the call (the session agent's `kill`: the call's processes, the kept interpreter
too) and the session goes on. The watch reads the cgroup every 10 ms; on cgroup v2 the kernel
also slows the sandbox's allocations from halfway up the backstop (`memory.high`), so that a
program allocating faster than that cannot outrun it. On cgroup v1, which has no such
setting, a program that allocates the rest of the backstop (about 40 MB past its limit) within
one interval, or in one step, can still reach it, and its session ends as before.
"""

from __future__ import annotations

import time

from hazmat.backends.base import RUNSC_MEMORY_MB, Job
from hazmat.backends.container.cgroup import Cgroup, Monitor, Sample
from hazmat.policy import Runtime

__all__ = ["MEMORY_STOP", "SessionWatch", "held_beside_runsc", "over_memory", "program_peak"]

_MiB = 1024 * 1024

# why a session's call was ended by `SessionWatch` (RunReport.stopped_by)
MEMORY_STOP = "memory"


def program_peak(figures: Sample | None, monitor: Monitor | None) -> int | None:
    """The program's peak memory: its container's cgroup's peak since the program started,
    less, under runsc, gVisor's own memory (`Cgroup.runtime_memory`: the Sentry's and the
    gofer's, not the program's, which is all in gVisor's memory file). None when unknown."""
    if figures is None or monitor is None:
        return None
    if monitor.program_high is not None:  # the kernel's peak could not be reset: sampled
        return monitor.program_high
    return max(0, figures.memory_peak - monitor.runtime_high)


def held_beside_runsc(cgroup: Cgroup, memory_mb: int) -> int | None:
    """Under runsc, the bytes the build left in use (gVisor's own memory aside) when they are
    more than the program's limit of `memory_mb`: the cgroup's limit is a backstop above it."""
    in_use, own = cgroup.usage(), cgroup.runtime_memory()
    if in_use is None or own is None:
        return None
    return in_use - own if in_use - own > memory_mb * _MiB else None


def over_memory(peak: int | None, job: Job, monitor: Monitor | None, prelude: bool) -> bool:
    """Whether the program's own peak passed its limit: only a peak from the program's start
    (a build's or an unpacking's before it, when the kernel could not reset the peak, is not
    the program's)."""
    if peak is None or monitor is None or peak <= job.spec.memory_mb * _MiB:
        return False
    started = monitor.restarted or monitor.program_high is not None
    return started or not (job.language.build or prelude)


class SessionWatch:
    """Under runsc, one session call's memory, watched from the host (the module's docstring):
    `check()` says `MEMORY_STOP` once the program's memory in use, gVisor's own aside, passes
    its limit."""

    check_s = 0.01  # a program can allocate more than a GB/s under runsc: 10 MB a check

    def __init__(self, cgroup: Cgroup, memory_mb: int) -> None:
        self.cgroup = cgroup
        self.limit = memory_mb * _MiB
        # the kernel slows allocations from halfway up the backstop (cgroup v2 alone)
        cgroup.throttle_memory((memory_mb + RUNSC_MEMORY_MB // 2) * _MiB)

    @classmethod
    def of(cls, cgroup: Cgroup | None, job: Job) -> SessionWatch | None:
        """The watch for a session's call (`job`) under runsc; None under runc, where the
        kernel kills the program's process at the limit, not the sandbox."""
        if cgroup is None or job.runtime is not Runtime.RUNSC:
            return None
        return cls(cgroup, job.spec.memory_mb)

    def check(self) -> str | None:
        """`MEMORY_STOP` once the program's memory in use has passed its limit, else None."""
        return MEMORY_STOP if self._over() else None

    def settle(self, within_s: float = 1.0) -> None:
        """Before the call: wait (at most `within_s`) until the memory in use is back under the
        limit. gVisor gives the host back the memory of processes that ended some tens of ms
        later (measured: the program's 269 MB when the last call was ended, 121 MB 20 ms
        later, 21 MB at 40 ms): that is not the next call's, to be judged or ended by."""
        deadline = time.monotonic() + within_s
        while self._over() and time.monotonic() < deadline:
            time.sleep(self.check_s)

    def _over(self) -> bool:
        in_use, own = self.cgroup.usage(), self.cgroup.runtime_memory()
        return in_use is not None and own is not None and in_use - own > self.limit
