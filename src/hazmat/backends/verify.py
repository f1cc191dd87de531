"""The settings check: read a container's settings back from the engine, compare with policy.

What hazmat asked for at create time is not proof of what the engine applied (an engine with
a different default, a plugin, an admin's daemon.json, a bug in the layer that builds the
request). `check` compares the engine's own account (`inspect`) of each setting the security
model rests on with the value the policy asked for, and returns one line per difference.
Each container is checked after it has started and before it gets a job; in the warm pool
that happens when the container is made, off the hot path. The engine does not change these
settings afterwards on its own (`docker update` by an administrator could change memory and
pids of a running container; that is outside what this check sees).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from hazmat.backends.base import Spec
from hazmat.policy import Runtime

__all__ = ["SANDBOX_USER", "check", "expected", "host_pids_limit"]

SANDBOX_USER = "65534:65534"  # nobody:nogroup, present in every Debian-like image
# Under gVisor the pids cgroup also holds the sandbox's own host tasks: about 44 when idle
# (Sentry threads, gofer, ptrace stubs) and about 2 more per task inside (measured here). A Go
# build of a one-line program peaked at 110-122 host tasks: with a base of 64 (a limit of 128
# for 32 pids) the toolchain could not create a thread now and then and died with status 2.
RUNSC_PIDS_BASE = 128
RUNSC_PIDS_PER_TASK = 2
_MiB = 1024 * 1024


def host_pids_limit(spec: Spec) -> int:
    """The pids cgroup limit that gives the program `spec.pids` tasks under its runtime."""
    if spec.runtime is Runtime.RUNSC:
        return RUNSC_PIDS_BASE + RUNSC_PIDS_PER_TASK * spec.pids
    return spec.pids


def expected(spec: Spec) -> dict[str, Any]:
    """The settings the policy demands for a container of `spec`, worked out from the spec
    alone (not from the request sent to the engine, so a wrong request is caught too)."""
    memory = spec.memory_mb * _MiB
    return {
        "network": "none",
        "read_only_root": True,
        "cap_drop": "ALL",
        "cap_add": [],
        "privileged": False,
        "no_new_privileges": True,
        "user": SANDBOX_USER,
        "memory": memory,
        "memory_swap": memory,
        "pids": host_pids_limit(spec),
        "nano_cpus": int(spec.cpus * 1e9),
        "runtime": spec.runtime.value,
        "network_disabled": True,
    }


_READ_BACK: Mapping[str, Callable[[Mapping[str, Any], Mapping[str, Any]], Any]] = {
    "network": lambda c, h: h.get("NetworkMode"),
    "read_only_root": lambda c, h: bool(h.get("ReadonlyRootfs")),
    "cap_drop": lambda c, h: (
        "ALL" if "ALL" in [x.upper() for x in h.get("CapDrop") or []] else None
    ),
    "cap_add": lambda c, h: sorted(h.get("CapAdd") or []),
    "privileged": lambda c, h: bool(h.get("Privileged")),
    "no_new_privileges": lambda c, h: any(
        opt in ("no-new-privileges", "no-new-privileges=true", "no-new-privileges:true")
        for opt in h.get("SecurityOpt") or []
    ),
    "user": lambda c, h: c.get("User"),
    "memory": lambda c, h: h.get("Memory"),
    "memory_swap": lambda c, h: h.get("MemorySwap"),
    "pids": lambda c, h: h.get("PidsLimit"),
    "nano_cpus": lambda c, h: h.get("NanoCpus"),
    "runtime": lambda c, h: h.get("Runtime"),
    "network_disabled": lambda c, h: bool(c.get("NetworkDisabled")),
}


def check(inspected: Mapping[str, Any], want: Mapping[str, Any]) -> list[str]:
    """One line per setting whose value in `inspected` (the engine's inspect output) differs
    from `want` (from `expected`); an empty list when everything matches."""
    config = inspected.get("Config") or {}
    host = inspected.get("HostConfig") or {}
    problems = []
    for name, wanted in want.items():
        got = _READ_BACK[name](config, host)
        if got != wanted:
            problems.append(f"{name}: policy asked for {wanted!r}, the engine has {got!r}")
    return problems
