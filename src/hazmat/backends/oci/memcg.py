"""A gVisor sandbox's memory cgroup on a cgroup v1 host: made by hazmat, not by runsc.

Under runsc the kernel's OOM killer, at the memory limit, kills gVisor's Sentry: the whole
sandbox ends, not one program in it, so no agent is left to report the kill. runsc then removes
the cgroups it made, and with them their count of that kill, often before the host's sampling
(every 50 ms) has read it: the run said `error` where it was `memory_limit`. runsc takes a cgroup
that is already there as it finds it, neither setting nor removing it (runsc/cgroup: it sets
and removes only those it made). So hazmat makes the sandbox's memory cgroup itself, with the
spec's limits, before runsc starts, and removes it only after the sandbox is gone: its OOM
count is read once the sandbox has ended. The limits are still read back from the kernel
before the sandbox takes a job (readback.py), as every other sandbox's are.

runc needs none of this: it runs with `--keep`, so the cgroups it made stay until hazmat deletes
the sandbox (driver.py). On a cgroup v2 host a cgroup holds every controller, so one made here
would leave runsc setting none of the limits: nothing is made there (docs/security.md).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from hazmat.backends.container.cgroup import CGROUP_ROOT, Cgroup

__all__ = ["make_memory_cgroup", "memory_cgroup", "remove_memory_cgroup"]


def memory_cgroup(path: str, root: Path = CGROUP_ROOT) -> Path | None:
    """Where the memory cgroup of the spec's cgroup `path` is, on a cgroup v1 host; None on v2."""
    memory = root / "memory"
    return memory / path.lstrip("/") if memory.is_dir() else None


def make_memory_cgroup(path: str, limit: int, swap: int, root: Path = CGROUP_ROOT) -> Path | None:
    """Make the memory cgroup for the spec's cgroup `path`, limited to `limit` bytes of memory
    and `swap` bytes of memory and swap; None on a cgroup v2 host. OSError when it cannot be
    made or limited (whatever was made is removed)."""
    folder = memory_cgroup(path, root)
    if folder is None:
        return None
    folder.parent.mkdir(parents=True, exist_ok=True)
    folder.mkdir()  # a new sandbox's: never one that is there already
    try:
        Cgroup(folder, folder, False).limit_memory(limit)
        both = folder / "memory.memsw.limit_in_bytes"
        if swap != limit and both.exists():
            both.write_text(str(swap))
    except BaseException:
        remove_memory_cgroup(folder)
        raise
    return folder


def remove_memory_cgroup(folder: Path) -> None:
    """Remove it, once nothing is in it (no error if it is gone)."""
    with contextlib.suppress(FileNotFoundError):
        os.rmdir(folder)
