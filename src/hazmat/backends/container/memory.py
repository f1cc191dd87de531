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
"""

from __future__ import annotations

from hazmat.backends.base import Job
from hazmat.backends.container.cgroup import Cgroup, Monitor, Sample

__all__ = ["held_beside_runsc", "over_memory", "program_peak"]

_MiB = 1024 * 1024


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
