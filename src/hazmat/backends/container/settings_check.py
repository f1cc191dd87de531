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

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from hazmat.backends.agent.compiled import AGENT_PATH
from hazmat.backends.base import Spec
from hazmat.egress.proxy import EGRESS_DIR  # where a run's proxy socket appears
from hazmat.policy import Runtime

__all__ = [
    "AGENT_CAPS",
    "AGENT_USER",
    "MASKED_PATHS",
    "WORKDIR",
    "check",
    "expected",
    "host_pids_limit",
    "tmpfs_mounts",
    "ulimits",
]

WORKDIR = "/work"  # the program's working directory, a tmpfs
# The agent runs as root in the container with only what it needs to start the program's
# processes as the run's own uid (SETUID, SETGID, SETPCAP for an empty bounding set) and to
# signal and end them (KILL); the program holds no capability (backends/agent/single.py).
AGENT_USER = "0:0"
AGENT_CAPS = ("KILL", "SETGID", "SETPCAP", "SETUID")
# Under gVisor the pids cgroup also holds the sandbox's own host tasks: about 36-44 when idle
# (Sentry threads, gofer, ptrace stubs), a few more per thread inside, about 6 more per process
# inside (measured on the ptrace platform: 63 sleeping processes 409 host tasks, 63 sleeping
# threads 42), and the Sentry adds threads of its own under load. Peaks measured here at the
# strict preset (32 pids): a Go build and run of 8 busy goroutines 117-133, 16 goroutines doing
# file I/O with GOMAXPROCS 8 149-165, 8 node worker threads 118-129, a 16-thread Python pool
# doing I/O 116-131. When the cgroup refuses the Sentry a thread, the whole sandbox dies with
# status 2 (the Go runtime cannot make a thread), so the host limit must stay out of the
# program's reach: the program's own tasks are bounded by `nproc` (see `ulimits`), and the
# host limit leaves room for all of them as processes plus the Sentry under load.
RUNSC_PIDS_BASE = 256
RUNSC_PIDS_PER_TASK = 7
_MiB = 1024 * 1024


def host_pids_limit(spec: Spec) -> int:
    """The pids cgroup limit that gives the program `spec.pids` tasks under its runtime."""
    if spec.runtime is Runtime.RUNSC:
        return RUNSC_PIDS_BASE + RUNSC_PIDS_PER_TASK * spec.pids
    return spec.pids


# Docker's own masks (what the engine applies when none are given), and the host's identity:
# the boot id and kernel command line name this machine to whoever reads them, and DMI the
# hardware it runs on. Masked paths read as empty (files) or as an empty read-only directory.
DOCKER_MASKED_PATHS = (
    "/proc/asound", "/proc/acpi", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
    "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi", "/sys/firmware",
)  # fmt: skip
HOST_IDENTITY_PATHS = (
    "/proc/cmdline",
    "/proc/sys/kernel/random/boot_id",
    "/sys/class/dmi/id",
    "/sys/devices/virtual/dmi/id",
    "/sys/devices/virtual/powercap",
)
MASKED_PATHS = DOCKER_MASKED_PATHS + HOST_IDENTITY_PATHS
READONLY_PATHS = ("/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger")


def tmpfs_mounts(spec: Spec, workdir: str, exec_tmp: bool, uid: int) -> dict[str, str]:
    """The two tmpfs mounts: the working directory (the program's uid's, noexec) and /tmp.

    A kept build's working directory (backends/kept/kept_build.py) is root's, mode 1777 like /tmp:
    the program writes in it but cannot change the directory itself (its mode, its times, its
    extended attributes and ACLs), which would otherwise carry from one test to the next."""
    size = f"size={spec.tmpfs_mb}m"
    owner = "mode=1777" if spec.kept_build else f"uid={uid},gid={uid},mode=0700"
    return {
        workdir: f"rw,nosuid,nodev,noexec,{size},{owner}",
        "/tmp": f"rw,nosuid,nodev,{'exec' if exec_tmp else 'noexec'},{size},mode=1777",
    }


def ulimits(spec: Spec) -> list[tuple[str, int, int]]:
    """(name, soft, hard): open files, file size (above the tmpfs, so a full tmpfs says
    ENOSPC rather than EFBIG), no core dumps, and the program's tasks.

    `nproc` is the program's pids budget again, counted by the kernel per uid (every sandbox
    has a uid of its own, backends/container/uids.py): under runc the pids cgroup, which also counts
    the agent, always refuses first (root, the agent, is exempt from `nproc` there); under gVisor it
    is the budget that bites. There the pids cgroup holds the Sentry's own host tasks (see
    `host_pids_limit`), and a zombie or a sleeping task inside costs it little or nothing, so
    without `nproc` a program could fill the sandbox with thousands of zombies until its time
    limit, or make the Sentry itself fail to start a thread; with it, gVisor refuses the fork
    with `EAGAIN` inside the program, as Linux does, and the program's own end is reported."""
    fsize = (spec.tmpfs_mb + 1) * _MiB
    return [
        ("nofile", spec.nofile, spec.nofile),
        ("fsize", fsize, fsize),
        ("core", 0, 0),
        ("nproc", spec.pids, spec.pids),
    ]




def bind_mounts(spec: Spec, agent: str | None = None) -> list[str]:
    """The only mounts a container may have, read-only, as the engine reports them (a mount
    destination and a bind each): its run's proxy socket directory, and the
    compiled agent's binary when the driver mounts it (`agent`, its path on the host)."""
    mounts = [EGRESS_DIR, f"{spec.egress}:{EGRESS_DIR}:ro"] if spec.egress is not None else []
    if agent is not None:
        mounts += [AGENT_PATH, f"{agent}:{AGENT_PATH}:ro"]
    return sorted(mounts)


def expected(
    spec: Spec, uid: int, seccomp_opts: Sequence[str] | None = None, agent: str | None = None
) -> dict[str, Any]:
    """The settings the policy demands for a container of `spec` whose program runs as `uid`,
    worked out from the spec alone (not from the request sent to the engine, so a wrong
    request is caught too), and, given the security options of the seccomp profile in use,
    that profile; `agent`: the compiled agent's binary the driver mounts (None: none)."""

    memory = spec.start_memory_mb * _MiB
    want: dict[str, Any] = {
        "network": "none",
        "read_only_root": True,
        "cap_drop": "ALL",
        "cap_add": sorted(AGENT_CAPS),
        "privileged": False,
        "no_new_privileges": True,
        "user": AGENT_USER,
        "program_uid": str(uid),
        "memory": memory,
        "memory_swap": memory,
        "pids": host_pids_limit(spec),
        "nano_cpus": int(spec.cpus * 1e9),
        "runtime": spec.runtime.value,
        "network_disabled": True,
        "masked_paths": sorted(MASKED_PATHS),
        "readonly_paths": sorted(READONLY_PATHS),
        "tmpfs": tmpfs_mounts(spec, WORKDIR, spec.exec_tmp, uid),
        "shm_size": spec.tmpfs_mb * _MiB,
        "ulimits": sorted(ulimits(spec)),
        "log_driver": "none",
        "namespaces": {"pid": "", "ipc": "private", "userns": "", "uts": ""},
        "devices": [],
        "sysctls": {},
        "init": True,
        "oom_score_adj": 1000,
        "mounts": bind_mounts(spec, agent),
        "apparmor_not_unconfined": True,
        "seccomp_not_unconfined": True,
    }
    if seccomp_opts is not None:
        want["seccomp"] = [o for o in seccomp_opts if o.startswith("seccomp")]
    return want


def _host(i: Mapping[str, Any]) -> Mapping[str, Any]:
    return i.get("HostConfig") or {}


def _config(i: Mapping[str, Any]) -> Mapping[str, Any]:
    return i.get("Config") or {}


def _env(i: Mapping[str, Any]) -> dict[str, str]:
    pairs = (str(e).partition("=") for e in _config(i).get("Env") or [])
    return {name: value for name, _, value in pairs}


def _opts(i: Mapping[str, Any]) -> list[str]:
    return [str(o) for o in _host(i).get("SecurityOpt") or []]


_READ_BACK: Mapping[str, Callable[[Mapping[str, Any]], Any]] = {
    "network": lambda i: _host(i).get("NetworkMode"),
    "read_only_root": lambda i: bool(_host(i).get("ReadonlyRootfs")),
    "cap_drop": lambda i: (
        "ALL" if "ALL" in [x.upper() for x in _host(i).get("CapDrop") or []] else None
    ),
    "cap_add": lambda i: sorted(
        str(c).upper().removeprefix("CAP_") for c in _host(i).get("CapAdd") or []
    ),
    "privileged": lambda i: bool(_host(i).get("Privileged")),
    "no_new_privileges": lambda i: any(
        opt in ("no-new-privileges", "no-new-privileges=true", "no-new-privileges:true")
        for opt in _opts(i)
    ),
    "user": lambda i: _config(i).get("User"),
    "program_uid": lambda i: _env(i).get("HAZMAT_UID"),
    "memory": lambda i: _host(i).get("Memory"),
    "memory_swap": lambda i: _host(i).get("MemorySwap"),
    "pids": lambda i: _host(i).get("PidsLimit"),
    "nano_cpus": lambda i: _host(i).get("NanoCpus"),
    "runtime": lambda i: _host(i).get("Runtime"),
    "network_disabled": lambda i: bool(_config(i).get("NetworkDisabled")),
    # present at least: more masks are fine, a missing one is not
    "masked_paths": lambda i: sorted(set(_host(i).get("MaskedPaths") or []) & set(MASKED_PATHS)),
    "readonly_paths": lambda i: sorted(
        set(_host(i).get("ReadonlyPaths") or []) & set(READONLY_PATHS)
    ),
    "tmpfs": lambda i: dict(_host(i).get("Tmpfs") or {}),
    "shm_size": lambda i: _host(i).get("ShmSize"),
    "ulimits": lambda i: sorted(
        (u.get("Name"), u.get("Soft"), u.get("Hard")) for u in _host(i).get("Ulimits") or []
    ),
    "log_driver": lambda i: (_host(i).get("LogConfig") or {}).get("Type"),
    "namespaces": lambda i: {
        "pid": _host(i).get("PidMode"),
        "ipc": _host(i).get("IpcMode"),
        "userns": _host(i).get("UsernsMode"),
        "uts": _host(i).get("UTSMode"),
    },
    "devices": lambda i: [
        *(_host(i).get("Devices") or []),
        *(_host(i).get("DeviceCgroupRules") or []),
        *(_host(i).get("DeviceRequests") or []),
    ],
    "sysctls": lambda i: dict(_host(i).get("Sysctls") or {}),
    "init": lambda i: _host(i).get("Init") is True,
    "oom_score_adj": lambda i: _host(i).get("OomScoreAdj"),
    # an image's VOLUME would give a writable, unsized volume that outlives the container
    "mounts": lambda i: sorted(
        [
            *(str(m.get("Destination")) for m in i.get("Mounts") or []),
            *(str(b) for b in _host(i).get("Binds") or []),
            *(str(v) for v in _host(i).get("VolumesFrom") or []),
        ]
    ),
    "apparmor_not_unconfined": lambda i: (
        i.get("AppArmorProfile") != "unconfined"
        and not any(o.replace(":", "=") == "apparmor=unconfined" for o in _opts(i))
    ),
    "seccomp_not_unconfined": lambda i: (
        not any(o.replace(":", "=") == "seccomp=unconfined" for o in _opts(i))
    ),
    "seccomp": lambda i: [o for o in _opts(i) if o.startswith("seccomp")],
}


def check(inspected: Mapping[str, Any], want: Mapping[str, Any]) -> list[str]:
    """One line per setting whose value in `inspected` (the engine's inspect output) differs
    from `want` (from `expected`); an empty list when everything matches."""
    problems = []
    for name, wanted in want.items():
        got = _READ_BACK[name](inspected)
        if got == wanted:
            continue
        if name == "seccomp":  # the profile is long: say so, not print it
            problems.append(
                f"seccomp: policy asked for '{len(wanted)} profile(s)', "
                f"the engine has '{len(got)} other(s)'"
            )
        else:
            problems.append(f"{name}: policy asked for {wanted!r}, the engine has {got!r}")
    return problems
