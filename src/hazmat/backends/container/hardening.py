"""Every hardening setting of a sandbox container, in one place: what `create_container` is
asked for. backends/container/settings_check.py reads the same settings back from the engine and
compares them with what the policy demands, worked out independently of this file.
"""

from __future__ import annotations

from typing import Any

import docker.types

from hazmat.backends.agent.compiled import AGENT_PATH
from hazmat.backends.agent.runners import RUNNERS
from hazmat.backends.agent.session_agent import SESSION_SCRIPT, session_environment
from hazmat.backends.agent.single import AGENT_SCRIPT, COLLECT_SCRIPT, STAGE_SCRIPT
from hazmat.backends.base import Spec
from hazmat.backends.container.seccomp import SeccompProfile
from hazmat.backends.container.settings_check import (
    AGENT_CAPS,
    AGENT_USER,
    MASKED_PATHS,
    WORKDIR,
    host_pids_limit,
    tmpfs_mounts,
    ulimits,
)
from hazmat.egress.proxy import EGRESS_DIR, SOCKET_NAME
from hazmat.languages import Language, get_language
from hazmat.policy import Runtime
from hazmat.policy.build_flags import build_command

__all__ = ["WORKDIR", "agent_command", "container_config", "environment", "heap_mb"]

_MiB = 1024 * 1024


def heap_mb(memory_mb: int) -> int:
    """The heap a managed runtime (V8) may grow to: three quarters of the container's memory,
    so running out is the runtime's prompt, clear error rather than a slow thrash at the cap."""
    return max(16, memory_mb * 3 // 4)


def container_config(
    spec: Spec,
    labels: dict[str, str],
    api_version: str,
    seccomp: SeccompProfile,
    uid: int,
    agent: str | None = None,
) -> dict[str, Any]:
    """The create_container arguments for `spec` with its program running as `uid`: every
    hardening setting lives here. `agent`: the compiled agent's binary on the engine's host,
    mounted read-only and run in place of the shell agent."""
    lang = get_language(spec.language)
    return {
        "image": spec.image,
        "command": agent_command(spec, compiled=agent is not None),
        "user": AGENT_USER,
        # the agent stays out of the working directory: it is the program's, mode 0700
        "working_dir": "/",
        "hostname": "sandbox",
        "environment": environment(spec, lang, uid),
        "stdin_open": True,
        "tty": False,
        "network_disabled": True,
        "labels": labels,
        "host_config": _host_config(spec, api_version, seccomp, uid, agent),
    }


def agent_command(spec: Spec, compiled: bool) -> list[str]:
    """What the container starts (under its init): the agent, or a session's; the compiled
    one (mounted at AGENT_PATH) or the shell one."""
    if compiled:
        return [AGENT_PATH, "session"] if spec.session else [AGENT_PATH]
    return ["/bin/sh", "-c", SESSION_SCRIPT if spec.session else AGENT_SCRIPT]


def environment(spec: Spec, lang: Language, uid: int) -> dict[str, str]:
    """The agent's environment; the program sees none of the HAZMAT_ variables."""
    warm, runner = RUNNERS[lang.runner] if lang.runner else ("", "")
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": "/tmp",
        "TMPDIR": "/tmp",
        "LANG": "C.UTF-8",
        "HAZMAT_UID": str(uid),
        "HAZMAT_WORKDIR": WORKDIR,
        "HAZMAT_STAGE": STAGE_SCRIPT,
        "HAZMAT_COLLECT": COLLECT_SCRIPT,
        "HAZMAT_BUILD": build_command(lang, spec.build_flags),
        "HAZMAT_PREPARE": lang.prepare,
        "HAZMAT_RUN": lang.run,
        "HAZMAT_WARM": f"{warm} {lang.entry}" if warm else "",
        "HAZMAT_HEAP_MB": str(heap_mb(spec.memory_mb)),
        **({"HAZMAT_RUNNER": runner} if runner else {}),
        **({"HAZMAT_EGRESS": f"{EGRESS_DIR}/{SOCKET_NAME}"} if spec.egress else {}),
        **lang.env,
        **(_kept_environment(spec, lang) if spec.session else {}),
    }


def _kept_environment(spec: Spec, lang: Language) -> dict[str, str]:
    isolate = spec.kept_build and spec.runtime is Runtime.RUNSC
    heap = heap_mb(spec.memory_mb)
    env = session_environment(lang, heap, spec.kept_build, isolate, spec.build_flags)
    if lang.repl is not None and lang.repl.hazmat == "python" and not spec.kept_build:
        env["HAZMAT_MEMORY_MB"] = str(spec.memory_mb)  # its address space (inside/repl.py)
    return env


def _host_config(
    spec: Spec, api_version: str, seccomp: SeccompProfile, uid: int, agent: str | None
) -> dict[str, Any]:
    binds = {spec.egress: {"bind": EGRESS_DIR, "mode": "ro"}} if spec.egress else {}
    if agent:
        binds[agent] = {"bind": AGENT_PATH, "mode": "ro"}
    config: dict[str, Any] = docker.types.HostConfig(
        version=api_version,
        read_only=True,
        network_mode="none",
        cap_drop=["ALL"],
        cap_add=list(AGENT_CAPS),
        security_opt=["no-new-privileges=true", *seccomp.security_opt],
        privileged=False,
        init=True,
        ipc_mode="private",
        mem_limit=spec.start_memory_mb * _MiB,
        memswap_limit=spec.start_memory_mb * _MiB,
        nano_cpus=int(spec.cpus * 1e9),
        pids_limit=host_pids_limit(spec),
        shm_size=spec.tmpfs_mb * _MiB,
        oom_score_adj=1000,
        ulimits=[
            docker.types.Ulimit(name=name, soft=soft, hard=hard)
            for name, soft, hard in ulimits(spec)
        ],
        tmpfs=tmpfs_mounts(spec, WORKDIR, spec.exec_tmp, uid),
        log_config=docker.types.LogConfig(type="none"),
        runtime=spec.runtime.value,
        binds=binds or None,
    )
    config["MaskedPaths"] = list(MASKED_PATHS)  # given at all, it replaces Docker's defaults
    return config
