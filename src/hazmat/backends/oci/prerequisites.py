"""Whether this process can run the direct OCI tier: what `backend: auto` (the default) asks
before it picks the tier, and what `hazmat doctor` reports.

The tier runs `runc` and `runsc` itself, so it needs: to run as root (the runtimes make the
sandboxes' namespaces, cgroups and uid switches as the user hazmat runs as), both runtime
binaries, the host's tini (each sandbox's first process), and cgroups it can create with the
controllers the limits need. An image's root file system is not a prerequisite: it is exported
from the engine on the image's first run (docs/oci-tier.md).

Where any of these is missing, `auto` picks the Docker backend, which needs none of them (the
engine does that work), and says why (`choice`).
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path

from hazmat.backends.container.cgroup import CGROUP_ROOT, CONTROLLERS_V2
from hazmat.backends.container.seccomp import UnsafeProfile, load_profile
from hazmat.backends.oci.driver import find_init, runtime_binary
from hazmat.policy import Runtime

__all__ = [
    "CONTROLLERS_V1",
    "CgroupProblem",
    "Choice",
    "cgroup_problem",
    "choice",
    "missing",
    "seccomp_problem",
]

CONTROLLERS_V1 = ("memory", "pids", "cpu", "cpuacct")


@dataclass(frozen=True)
class CgroupProblem:
    """Why this process cannot make the sandboxes' cgroups, and what fixes it."""

    why: str
    fix: str


DELEGATE = (
    "enable the controllers in cgroup.subtree_control (systemd: Delegate=yes for the service "
    "that runs hazmat)"
)
AS_ROOT = "run hazmat as root, or delegate a cgroup subtree to its user"


@dataclass(frozen=True)
class Choice:
    """The tier a policy's `backend` comes to on this machine, and why (one sentence)."""

    tier: str  # "docker" or "oci"
    why: str


def choice(backend: str) -> Choice:
    """`docker` and `oci` are themselves; `auto` is the OCI tier where its prerequisites hold,
    else the Docker backend."""
    if backend != "auto":
        return Choice(backend, f"the policy says backend: {backend}")
    lacking = missing()
    if not lacking:
        return Choice("oci", "auto: the direct OCI tier's prerequisites hold")
    return Choice("docker", f"auto: the direct OCI tier is not usable here ({'; '.join(lacking)})")


@functools.cache
def missing() -> tuple[str, ...]:
    """What this process lacks to run the OCI tier, one phrase each; empty: nothing. Looked
    at once per process (`missing.cache_clear()` to look again)."""
    found = []
    if os.geteuid() != 0:
        found.append("not running as root")
    for runtime in Runtime:
        if runtime_binary(runtime) is None:
            found.append(f"no {runtime.value} binary")
    if find_init() is None:
        found.append("no tini (docker-init)")
    seccomp = seccomp_problem()
    if seccomp:
        found.append(seccomp)
    if not found:  # the probe makes a cgroup: only where it can matter
        problem = cgroup_problem()
        if problem:
            found.append(problem.why)
    return tuple(found)


def seccomp_problem() -> str | None:
    """Why runc would start the tier's sandboxes with no seccomp filter, or None. The tier has
    no engine whose built-in profile would stand in: without hazmat's own (derived from the
    base profile `scripts/ensure-engine.sh` installs) every runc sandbox would be refused by
    the settings read back from the kernel (`seccomp mode '0'`)."""
    try:
        profile = load_profile()
    except (UnsafeProfile, OSError, ValueError) as exc:
        return f"an unusable seccomp base profile ({exc})"
    if profile.text is None:
        return "no seccomp base profile (scripts/ensure-engine.sh installs it)"
    return None


def cgroup_problem() -> CgroupProblem | None:
    """Why this process cannot make the sandboxes' cgroups (every controller the limits need,
    made and removed here) and what fixes it, or None when it can."""
    unified = (CGROUP_ROOT / "cgroup.controllers").is_file()
    probe = f"hazmat-probe-{os.getpid()}"
    if unified:
        try:
            delegated = (CGROUP_ROOT / "cgroup.subtree_control").read_text().split()
        except OSError as exc:
            why = f"cannot read {CGROUP_ROOT}/cgroup.subtree_control ({exc.strerror})"
            return CgroupProblem(why, AS_ROOT)
        lacking = [c for c in CONTROLLERS_V2 if c not in delegated]
        if lacking:
            why = f"cgroup v2 without {', '.join(lacking)} delegated at {CGROUP_ROOT}"
            return CgroupProblem(why, DELEGATE)
        folders = [CGROUP_ROOT / probe]
    else:
        folders = [CGROUP_ROOT / name / probe for name in CONTROLLERS_V1]
    made: list[Path] = []
    try:
        for folder in folders:
            folder.mkdir()
            made.append(folder)
    except OSError as exc:
        return CgroupProblem(f"cannot create a cgroup ({exc.strerror}: {exc.filename})", AS_ROOT)
    finally:
        for folder in reversed(made):
            folder.rmdir()
    return None
