"""The settings check of the direct OCI tier (backends/oci/driver.py): read what was applied back
from the kernel, compare it with what the policy demands, worked out from the spec alone
(backends/container/settings_check.py's `expected`), never from the config.json that was written.

Under runc the sandbox's first process is an ordinary host process, so the check reads the
kernel's own account of it, as the program will find it: /proc/<pid>/status (uid, the three
capability sets, no_new_privs, seccomp filter mode), its namespaces against the host's, its
network devices (loopback only), its mounts (a read-only root; /work and /tmp as the policy
says), its rlimits and OOM score, and its cgroup's limits. Under runsc the first process is
gVisor's sandbox, whose settings inside are the Sentry's own and cannot be read from the
host: the check reads the cgroup's limits and the sandbox's namespaces from the kernel, and
the rest from the bundle the runtime holds (`runsc state`), as the Docker backend reads
`inspect` under either runtime. Each difference is one line.
"""

from __future__ import annotations

import json
import os
import posixpath
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hazmat.backends.base import Spec
from hazmat.backends.container.cgroup import CGROUP_ROOT
from hazmat.backends.container.settings_check import AGENT_CAPS, MASKED_PATHS, expected
from hazmat.policy import Runtime

__all__ = ["cgroup_problems", "check_bundle", "check_kernel"]

# capability numbers (linux/capability.h) of the agent's set
_CAP_BITS = {"KILL": 5, "SETGID": 6, "SETUID": 7, "SETPCAP": 8}
_LIMIT_NAMES = {
    "nofile": "Max open files",
    "fsize": "Max file size",
    "core": "Max core file size",
    "nproc": "Max processes",
}
_NAMESPACES = ("pid", "net", "ipc", "uts", "mnt")
_DEFAULTS = {"exec", "suid", "dev"}  # mount options the kernel shows by leaving "no..." out


def _cap_mask() -> int:
    return sum(1 << _CAP_BITS[cap] for cap in AGENT_CAPS)


def check_kernel(pid: int, spec: Spec, uid: int, proc: Path = Path("/proc")) -> list[str]:
    """What the kernel applied to the sandbox's first process under runc."""
    want = expected(spec, uid)
    base = proc / str(pid)
    problems: list[str] = []
    try:
        status = _fields((base / "status").read_text())
    except OSError as exc:
        return [f"cannot read the sandbox's process {pid}: {exc}"]
    if status.get("Uid", "").split() != ["0"] * 4:
        problems.append(f"process uid {status.get('Uid')!r}, want 0 (the agent)")
    for name in ("CapEff", "CapPrm", "CapBnd"):
        if int(status.get(name, "-1"), 16) != _cap_mask():
            problems.append(f"{name} {status.get(name)}, want {_cap_mask():016x}")
    if status.get("CapAmb", "0") not in ("0", "0000000000000000"):
        problems.append(f"ambient capabilities {status.get('CapAmb')}")
    if status.get("NoNewPrivs") != "1":
        problems.append(f"no_new_privs {status.get('NoNewPrivs')!r}, want 1")
    if status.get("Seccomp") != "2":
        problems.append(f"seccomp mode {status.get('Seccomp')!r}, want 2 (a filter)")
    problems += _namespace_problems(base, proc / "self", (*_NAMESPACES, "cgroup"))
    problems += _network_problems(base)
    problems += _mount_problems(base, want["tmpfs"])
    problems += _limit_problems(base, want["ulimits"])
    score = _read(base / "oom_score_adj")
    if score != str(want["oom_score_adj"]):
        problems.append(f"oom_score_adj {score!r}, want {want['oom_score_adj']}")
    return problems


def check_bundle(config: Mapping[str, Any], spec: Spec, uid: int) -> list[str]:
    """What the runtime was handed (its own copy of config.json, under runsc), against the
    policy: user, capabilities, no_new_privs, rlimits, read-only root, tmpfs, namespaces."""
    want = expected(spec, uid)
    process = config.get("process") or {}
    problems: list[str] = []
    user = process.get("user") or {}
    if (user.get("uid"), user.get("gid")) != (0, 0):
        problems.append(f"user {user}, want 0:0 (the agent)")
    caps = sorted(f"CAP_{c}" for c in AGENT_CAPS)
    for kind in ("bounding", "effective", "permitted", "inheritable", "ambient"):
        have = sorted((process.get("capabilities") or {}).get(kind) or [])
        wanted = caps if kind in ("bounding", "effective", "permitted") else []
        if have != wanted:
            problems.append(f"{kind} capabilities {have}, want {wanted}")
    if process.get("noNewPrivileges") is not True:
        problems.append("no_new_privileges is not set")
    limits = sorted(
        (str(r.get("type", "")).removeprefix("RLIMIT_").lower(), r.get("soft"), r.get("hard"))
        for r in process.get("rlimits") or []
    )
    if limits != want["ulimits"]:
        problems.append(f"rlimits {limits}, want {want['ulimits']}")
    if not (config.get("root") or {}).get("readonly"):
        problems.append("the root file system is writable")
    tmpfs = {
        m.get("destination"): ",".join(m.get("options") or [])
        for m in config.get("mounts") or []
        if m.get("type") == "tmpfs" and m.get("destination") in want["tmpfs"]
    }
    if tmpfs != want["tmpfs"]:
        problems.append(f"tmpfs {tmpfs}, want {want['tmpfs']}")
    linux = config.get("linux") or {}
    kinds = {ns.get("type") for ns in linux.get("namespaces") or [] if not ns.get("path")}
    missing = {"pid", "network", "ipc", "uts", "mount"} - kinds
    if missing:
        problems.append(f"namespaces not new: {sorted(missing)}")
    masked = set(linux.get("maskedPaths") or [])
    if not set(MASKED_PATHS) <= masked:
        problems.append(f"paths not masked: {sorted(set(MASKED_PATHS) - masked)}")
    return problems


def cgroup_problems(
    pid: int, spec: Spec, proc: Path = Path("/proc"), root: Path = CGROUP_ROOT
) -> list[str]:
    """The cgroup limits of `pid`'s cgroup, read from the kernel's files (v1 or v2)."""
    want = expected(spec, 0)
    try:
        lines = (proc / str(pid) / "cgroup").read_text().splitlines()
    except OSError as exc:
        return [f"cannot read the sandbox's cgroup: {exc}"]
    paths: dict[str, str] = {}
    for line in lines:
        _, controllers, path = line.split(":", 2)
        for name in controllers.split(",") if controllers else [""]:
            paths[name] = path.lstrip("/")
    quota = int(spec.cpus * 100_000)
    if "memory" in paths:  # v1
        found = {
            "memory": _read(root / "memory" / paths["memory"] / "memory.limit_in_bytes"),
            "memory_swap": _read(root / "memory" / paths["memory"] / "memory.memsw.limit_in_bytes"),
            "pids": _read(root / "pids" / paths.get("pids", "?") / "pids.max"),
            "cpu": _read(root / "cpu" / paths.get("cpu", "?") / "cpu.cfs_quota_us"),
        }
        wanted = {
            "memory": str(want["memory"]),
            "memory_swap": str(want["memory_swap"]) if found["memory_swap"] else "",
            "pids": str(want["pids"]),
            "cpu": str(quota),
        }
    else:  # v2: swap is counted apart, so memory+swap = memory means no swap
        group = root / paths.get("", "?")
        found = {
            "memory": _read(group / "memory.max"),
            "memory_swap": _read(group / "memory.swap.max"),
            "pids": _read(group / "pids.max"),
            "cpu": _read(group / "cpu.max").split(" ")[0],
        }
        wanted = {
            "memory": str(want["memory"]),
            "memory_swap": "0",
            "pids": str(want["pids"]),
            "cpu": str(quota),
        }
    return [
        f"cgroup {name} {found[name] or 'unreadable'}, want {wanted[name]}"
        for name in wanted
        if found[name] != wanted[name]
    ]


def runtime_namespaces(spec: Spec) -> tuple[str, ...]:
    """The namespaces the sandbox's first host process must not share with the host."""
    return (
        (*_NAMESPACES, "cgroup") if spec.runtime is Runtime.RUNC else ("net", "ipc", "uts", "mnt")
    )


def sandbox_problems(pid: int, spec: Spec, proc: Path = Path("/proc")) -> list[str]:
    """gVisor's sandbox process, seen from the host: its own namespaces and no network."""
    base = proc / str(pid)
    return _namespace_problems(base, proc / "self", runtime_namespaces(spec)) + _network_problems(
        base
    )


def _namespace_problems(base: Path, host: Path, kinds: tuple[str, ...]) -> list[str]:
    problems = []
    for kind in kinds:
        try:
            if os.readlink(base / "ns" / kind) == os.readlink(host / "ns" / kind):
                problems.append(f"the {kind} namespace is the host's")
        except OSError as exc:
            problems.append(f"cannot read the {kind} namespace: {exc}")
    return problems


def _network_problems(base: Path) -> list[str]:
    lines = _read(base / "net" / "dev").splitlines()[2:]
    devices = sorted(line.split(":")[0].strip() for line in lines if ":" in line)
    return [] if devices in ([], ["lo"]) else [f"network devices {devices}, want only lo"]


def _mount_problems(base: Path, tmpfs: Mapping[str, str]) -> list[str]:
    mounts: dict[str, tuple[str, set[str]]] = {}
    for line in _read(base / "mountinfo").splitlines():
        fields = line.split()
        sep = fields.index("-")
        options = set(fields[5].split(",")) | set(fields[sep + 3].split(","))
        mounts[fields[4]] = (fields[sep + 1], options)  # the last mount on a point wins
    problems = []
    if "ro" not in mounts.get("/", ("", set()))[1]:
        problems.append("the root file system is writable")
    for point, asked in tmpfs.items():
        kind, have = mounts.get(point, ("", set()))
        wanted = {o.replace("mode=0", "mode=") for o in asked.split(",")} - {"rw"}
        if kind != "tmpfs":
            problems.append(f"{point} is not a tmpfs ({kind or 'not mounted'})")
            continue
        have = {o for o in have if not o.startswith("size=")}
        if not any(o.startswith("mode=") for o in have):
            have.add("mode=1777")  # the kernel shows tmpfs's default mode by leaving it out
        wanted = {o for o in wanted if not o.startswith("size=")}
        # "exec" (and "suid", "dev") is the kernel's default: shown as no "noexec"
        lacking = {o for o in wanted - have if o not in _DEFAULTS or f"no{o}" in have}
        if lacking:
            problems.append(f"{point} lacks {sorted(lacking)}")
    for path in MASKED_PATHS:
        target = _inside(f"{base}/root", path)
        if target not in mounts and os.path.lexists(f"{base}/root{target}"):
            problems.append(f"{path} is not masked")
    return problems


def _inside(root: str, path: str, hops: int = 16) -> str:
    """`path` with every symbolic link in it followed within the sandbox's root file system
    `root`, as runc follows them when it masks a path: the mount table shows what it masked
    (`/sys/class/dmi/id` is a link to `/sys/devices/virtual/dmi/id`, on every host with DMI
    tables). A link never leads above `root`; past `hops` links the path is left as it is."""
    done, rest = "", [p for p in path.split("/") if p]
    while rest:
        here = f"{done}/{rest.pop(0)}"
        if hops and os.path.islink(root + here):
            hops -= 1
            link = os.readlink(root + here)
            joined = link if link.startswith("/") else f"{done}/{link}"
            rest = [p for p in posixpath.normpath("/" + joined).split("/") if p] + rest
            done = ""
            continue
        done = here
    return done or "/"


def _limit_problems(base: Path, wanted: list[tuple[str, int, int]]) -> list[str]:
    table = _read(base / "limits")
    problems = []
    for name, soft, hard in wanted:
        row = next((line for line in table.splitlines() if line.startswith(_LIMIT_NAMES[name])), "")
        values = row[len(_LIMIT_NAMES[name]) :].split()[:2]
        if values != [str(soft), str(hard)]:
            problems.append(f"rlimit {name} {values}, want {[soft, hard]}")
    return problems


def _fields(text: str) -> dict[str, str]:
    return {k.strip(): v.strip() for k, _, v in (line.partition(":") for line in text.splitlines())}


def _read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return ""


def load_config(bundle: Path) -> dict[str, Any]:
    return dict(json.loads((bundle / "config.json").read_text()))
