"""The OCI runtime spec (`config.json`) of a sandbox run by runc or runsc directly
(backends/oci/driver.py): the same hardening as the Docker backend's `container_config`, written in
the runtime's own terms. backends/oci/readback.py reads the applied settings back from the
kernel and compares them with what the policy demands, worked out independently of this file.

Written by hand: no maintained Python library generates OCI runtime specs (`runc spec` prints
a template, which would still need every field below set), and the document is plain JSON
whose fields the runtime-spec defines (config.md, config-linux.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hazmat.backends.agent.compiled import AGENT_PATH
from hazmat.backends.base import Spec
from hazmat.backends.container.hardening import agent_command, environment
from hazmat.backends.container.seccomp import for_oci
from hazmat.backends.container.settings_check import (
    AGENT_CAPS,
    MASKED_PATHS,
    READONLY_PATHS,
    WORKDIR,
    host_pids_limit,
    tmpfs_mounts,
    ulimits,
)
from hazmat.egress.proxy import EGRESS_DIR
from hazmat.languages import get_language
from hazmat.policy import Runtime

__all__ = ["INIT_PATH", "OCI_VERSION", "bundle_config", "capabilities"]

OCI_VERSION = "1.0.2"
INIT_PATH = "/sbin/docker-init"  # where the host's tini is mounted, as the engine mounts it
CPU_PERIOD_US = 100_000
_MiB = 1024 * 1024


def capabilities() -> list[str]:
    """The agent's capabilities in the spec's names (the program gets none: agent.py)."""
    return sorted(f"CAP_{cap}" for cap in AGENT_CAPS)


def bundle_config(
    spec: Spec,
    uid: int,
    *,
    rootfs: Path,
    init: Path,
    cgroup: str,
    annotations: dict[str, str],
    seccomp: str | None,
    agent: Path | None = None,
) -> dict[str, Any]:
    """The config.json of a sandbox for `spec` whose program runs as `uid`, over the
    prepared read-only `rootfs`, with the host's `init` (tini) as its first process, in the
    cgroup `cgroup`, with hazmat's seccomp profile `seccomp` (Docker's format) under runc.
    With `agent` (the compiled agent on this host: backends/agent/compiled.py), the sandbox runs
    it, mounted read-only, in place of the shell agent."""
    lang = get_language(spec.language)
    caps = capabilities()
    memory = spec.start_memory_mb * _MiB
    env = environment(spec, lang, uid)
    config: dict[str, Any] = {
        "ociVersion": OCI_VERSION,
        "process": {
            "terminal": False,
            "user": {"uid": 0, "gid": 0},
            "args": [INIT_PATH, "--", *agent_command(spec, compiled=agent is not None)],
            "env": [f"{key}={value}" for key, value in env.items()],
            "cwd": "/",
            "capabilities": {"bounding": caps, "effective": caps, "permitted": caps},
            "rlimits": [
                {"type": f"RLIMIT_{name.upper()}", "soft": soft, "hard": hard}
                for name, soft, hard in ulimits(spec)
            ],
            "noNewPrivileges": True,
            "oomScoreAdj": 1000,
        },
        "root": {"path": str(rootfs), "readonly": True},
        "hostname": "sandbox",
        "mounts": _mounts(spec, uid, spec.exec_tmp, init, agent),
        "annotations": annotations,
        "linux": {
            "namespaces": [
                {"type": kind} for kind in ("pid", "network", "ipc", "uts", "mount", "cgroup")
            ],
            "resources": {
                "memory": {"limit": memory, "swap": memory},
                "pids": {"limit": host_pids_limit(spec)},
                "cpu": {"quota": int(spec.cpus * CPU_PERIOD_US), "period": CPU_PERIOD_US},
                "devices": [{"allow": False, "access": "rwm"}],
            },
            "cgroupsPath": cgroup,
            "maskedPaths": list(MASKED_PATHS),
            "readonlyPaths": list(READONLY_PATHS),
        },
    }
    if spec.runtime is Runtime.RUNSC:
        # gVisor's own: the spec's cgroup namespace is not one it implements
        config["linux"]["namespaces"] = [
            ns for ns in config["linux"]["namespaces"] if ns["type"] != "cgroup"
        ]
    elif seccomp:
        config["linux"]["seccomp"] = for_oci(seccomp, frozenset(caps))
    return config



def _mounts(
    spec: Spec, uid: int, exec_tmp: bool, init: Path, agent: Path | None
) -> list[dict[str, Any]]:
    shm = f"size={spec.tmpfs_mb * _MiB}"
    mounts: list[dict[str, Any]] = [
        {"destination": "/proc", "type": "proc", "source": "proc",
         "options": ["nosuid", "noexec", "nodev"]},
        {"destination": "/dev", "type": "tmpfs", "source": "tmpfs",
         "options": ["nosuid", "strictatime", "mode=755", "size=65536k"]},
        {"destination": "/dev/pts", "type": "devpts", "source": "devpts",
         "options": ["nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"]},
        {"destination": "/dev/shm", "type": "tmpfs", "source": "shm",
         "options": ["nosuid", "noexec", "nodev", "mode=1777", shm]},
        {"destination": "/dev/mqueue", "type": "mqueue", "source": "mqueue",
         "options": ["nosuid", "noexec", "nodev"]},
        {"destination": "/sys", "type": "sysfs", "source": "sysfs",
         "options": ["nosuid", "noexec", "nodev", "ro"]},
        {"destination": "/sys/fs/cgroup", "type": "cgroup", "source": "cgroup",
         "options": ["nosuid", "noexec", "nodev", "relatime", "ro"]},
    ]  # fmt: skip
    for path, options in tmpfs_mounts(spec, WORKDIR, exec_tmp, uid).items():
        mounts.append(
            {"destination": path, "type": "tmpfs", "source": "tmpfs", "options": options.split(",")}
        )
    mounts.append(
        {"destination": INIT_PATH, "type": "bind", "source": str(init),
         "options": ["rbind", "ro", "nosuid", "nodev"]}
    )  # fmt: skip
    if agent is not None:
        mounts.append(
            {"destination": AGENT_PATH, "type": "bind", "source": str(agent),
             "options": ["rbind", "ro", "nosuid", "nodev"]}
        )  # fmt: skip
    if spec.egress is not None:
        mounts.append(
            {"destination": EGRESS_DIR, "type": "bind", "source": spec.egress,
             "options": ["rbind", "ro", "nosuid", "nodev", "noexec"]}
        )  # fmt: skip
    return mounts
