"""A gVisor sandbox's memory cgroup: made by hazmat, not by runsc, so that it outlives the
sandbox.

Under runsc the kernel's OOM killer, at the memory limit, kills gVisor's Sentry: the whole
sandbox ends, not one program in it, so no agent is left to report the kill. runsc then removes
the cgroups it made, and with them their count of that kill, often before the host's sampling
(every 50 ms) has read it: the run said `error` where it was `memory_limit`. So hazmat makes a
cgroup of its own for the sandbox before runsc starts, removes it only after the sandbox is
gone, and reads the OOM count there once the sandbox has ended:

- cgroup v1: the sandbox's memory cgroup itself (`memory/hazmat/<id>`), with the spec's
  limits. runsc takes a cgroup that is already there as it finds it, neither setting nor
  removing it (runsc/cgroup: it sets and removes only those it made).
- cgroup v2: one cgroup holds every controller, so one runsc found there would get none of its
  limits (cpu, pids, memory). hazmat makes the parent (`hazmat/<id>`), with the controllers the
  limits need enabled for its children, and runsc makes, limits and removes the
  sandbox's own cgroup inside it (`hazmat/<id>/sandbox`, `runtime_cgroup`). A v2 parent's
  `memory.events` counts its children's OOM kills too (they are hierarchical), and stays.

The limits are still read back from the kernel, in the sandbox's own cgroup, before the sandbox
takes a job (readback.py), as every other sandbox's are.

runc needs none of this: it runs with `--keep`, so the cgroups it made stay until hazmat deletes
the sandbox (driver.py).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from hazmat.backends.container.cgroup import CGROUP_ROOT, CONTROLLERS_V2, Cgroup

__all__ = ["make_memory_cgroup", "memory_cgroup", "remove_memory_cgroup", "runtime_cgroup"]

# v2: the name of runsc's own cgroup inside hazmat's
_INNER = "sandbox"


def _unified(root: Path) -> bool | None:
    """True on a cgroup v2 host, False on v1 (a memory hierarchy of its own), None without
    cgroups."""
    if (root / "memory").is_dir():
        return False
    if (root / "cgroup.controllers").is_file():
        return True
    return None


def memory_cgroup(path: str, root: Path = CGROUP_ROOT) -> Path | None:
    """Where hazmat's cgroup for the spec's cgroup `path` is (v1: in the memory hierarchy; v2:
    the parent of runsc's own); None on a host without cgroups."""
    unified = _unified(root)
    if unified is None:
        return None
    return (root if unified else root / "memory") / path.lstrip("/")


def runtime_cgroup(path: str, root: Path = CGROUP_ROOT) -> str:
    """The `cgroupsPath` runsc is given for hazmat's cgroup `path`: that one on v1 (it takes
    it as it is), one inside it on v2 (it makes, limits and removes that one)."""
    return f"{path.rstrip('/')}/{_INNER}" if _unified(root) else path


def make_memory_cgroup(path: str, limit: int, swap: int, root: Path = CGROUP_ROOT) -> Path | None:
    """Make hazmat's cgroup for the spec's cgroup `path`: on v1 limited to `limit` bytes of
    memory and `swap` bytes of memory and swap, on v2 with its controllers enabled for the
    cgroup runsc makes inside it. None on a host without cgroups. OSError when it cannot be
    made or limited (whatever was made is removed)."""
    folder = memory_cgroup(path, root)
    if folder is None:
        return None
    unified = _unified(root)
    if unified:
        _delegate(root, folder.parent)
    else:
        folder.parent.mkdir(parents=True, exist_ok=True)
    folder.mkdir()  # a new sandbox's: never one that is there already
    try:
        if unified:
            _enable_controllers(folder)
        else:
            Cgroup(folder, folder, False).limit_memory(limit)
            both = folder / "memory.memsw.limit_in_bytes"
            if swap != limit and both.exists():
                both.write_text(str(swap))
    except BaseException:
        remove_memory_cgroup(folder)
        raise
    return folder


def _delegate(root: Path, folder: Path) -> None:
    """v2: make `folder` and the cgroups above it, up from `root`, each with the controllers
    the limits need enabled for its children."""
    current = root
    _enable_controllers(current)
    for part in folder.relative_to(root).parts:
        current = current / part
        current.mkdir(exist_ok=True)
        _enable_controllers(current)


def _enable_controllers(folder: Path) -> None:
    """v2: enable for `folder`'s children each controller the limits need that it has not
    enabled yet. One it lacks is not an error here: the sandbox's limits are read back from
    the kernel before it takes a job (readback.py), and `hazmat doctor` names what is lacking."""
    enabled = set((folder / "cgroup.subtree_control").read_text().split())
    for name in CONTROLLERS_V2:
        if name not in enabled:
            with contextlib.suppress(OSError):
                (folder / "cgroup.subtree_control").write_text(f"+{name}")


def remove_memory_cgroup(folder: Path) -> None:
    """Remove it, and on v2 runsc's inside it if runsc has not, once nothing is in them (no
    error if they are gone)."""
    with contextlib.suppress(FileNotFoundError):
        os.rmdir(folder / _INNER)
    with contextlib.suppress(FileNotFoundError):
        os.rmdir(folder)
