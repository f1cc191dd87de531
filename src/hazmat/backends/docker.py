"""The cold path: one fresh, hardened container per run, created, started, waited for, removed.

Never `containers.run()` (it pulls silently): create, attach, start, wait and remove are
explicit, and removal happens in `finally`. Containers carry the `hazmat` label and the pid of
the process that made them, so `reap()` can remove what a killed process left behind.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import socket
import threading
import time
from typing import Any

import docker.errors
import docker.types
import requests.exceptions

from hazmat._exceptions import InfraError
from hazmat.backends.agent import AGENT_SCRIPT, file_marker, parse_files
from hazmat.backends.base import Backend, Job, RunReport
from hazmat.backends.engine import Engine, map_docker_errors
from hazmat.backends.seccomp import MISSING_NOTE, SeccompProfile, load_profile
from hazmat.backends.stream import pump
from hazmat.policy import HostResources, Runtime

__all__ = ["SANDBOX_USER", "DockerBackend", "container_config"]

SANDBOX_USER = "65534:65534"  # nobody:nogroup, present in every Debian-like image
WORKDIR = "/work"
LABEL = "hazmat"
# A container older than its deadline plus this is removed by any hazmat process's reaper.
REAP_GRACE_S = 120
# Under gVisor the pids cgroup also holds the sandbox's own host tasks: about 44 when idle
# (Sentry threads, gofer, ptrace stubs) and about 2 more per task inside (measured here).
RUNSC_PIDS_BASE = 64
RUNSC_PIDS_PER_TASK = 2
_MiB = 1024 * 1024


def container_config(
    job: Job, labels: dict[str, str], api_version: str, seccomp: SeccompProfile
) -> dict[str, Any]:
    """The create_container arguments for `job`: every hardening setting lives here."""
    lim = job.limits
    lang = job.language
    tmp_exec = "exec" if lang.exec_tmp else "noexec"
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": "/tmp",
        "TMPDIR": "/tmp",
        "LANG": "C.UTF-8",
        "HAZMAT_WORKDIR": WORKDIR,
        "HAZMAT_BUILD": lang.build,
        "HAZMAT_RUN": lang.run,
        **lang.env,
    }
    fsize = (lim.tmpfs_mb + 1) * _MiB  # above the tmpfs size, so a full tmpfs says ENOSPC
    host_config = docker.types.HostConfig(
        version=api_version,
        read_only=True,
        network_mode="none",
        cap_drop=["ALL"],
        security_opt=["no-new-privileges=true", *seccomp.security_opt],
        privileged=False,
        init=True,
        ipc_mode="private",
        mem_limit=lim.memory_mb * _MiB,
        memswap_limit=lim.memory_mb * _MiB,
        nano_cpus=int(lim.cpus * 1e9),
        pids_limit=host_pids_limit(job),
        shm_size=lim.tmpfs_mb * _MiB,
        oom_score_adj=1000,
        ulimits=[
            docker.types.Ulimit(name="nofile", soft=lim.nofile, hard=lim.nofile),
            docker.types.Ulimit(name="fsize", soft=fsize, hard=fsize),
            docker.types.Ulimit(name="core", soft=0, hard=0),
        ],
        tmpfs={
            WORKDIR: f"rw,nosuid,nodev,noexec,size={lim.tmpfs_mb}m,uid=65534,gid=65534,mode=0700",
            "/tmp": f"rw,nosuid,nodev,{tmp_exec},size={lim.tmpfs_mb}m,mode=1777",
        },
        log_config=docker.types.LogConfig(type="none"),
        runtime=job.runtime.value,
    )
    return {
        "image": job.image,
        "command": ["/bin/sh", "-c", AGENT_SCRIPT],
        "user": SANDBOX_USER,
        "working_dir": WORKDIR,
        "hostname": "sandbox",
        "environment": env,
        "stdin_open": True,
        "tty": False,
        "network_disabled": True,
        "labels": labels,
        "host_config": host_config,
    }


def host_pids_limit(job: Job) -> int:
    """The pids cgroup limit that gives the program `limits.pids` tasks under its runtime."""
    if job.runtime is Runtime.RUNSC:
        return RUNSC_PIDS_BASE + RUNSC_PIDS_PER_TASK * job.limits.pids
    return job.limits.pids


class DockerBackend(Backend):
    """Runs each job in a container nobody used before, on a local or remote Docker engine."""

    def __init__(self, engine: Engine | None = None, seccomp: SeccompProfile | None = None) -> None:
        self.engine = engine or Engine()
        self.seccomp = seccomp or load_profile()
        self._reaped = False

    def resources(self) -> HostResources:
        return self.engine.info().resources

    def execute(self, job: Job) -> RunReport:
        api = self.engine.api
        self.engine.require_runtime(job.runtime)
        if not self._reaped:
            self.reap()
            self._reaped = True
        cid: str | None = None
        try:
            with map_docker_errors(job.image):
                created = api.create_container(
                    **container_config(job, self._labels(job), api.api_version, self.seccomp)
                )
                cid = str(created["Id"])
                attached = api.attach_socket(
                    cid, {"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1}
                )
            try:
                with map_docker_errors(job.image):
                    api.start(cid)
                return self._watch(job, cid, _raw_socket(attached))
            finally:
                _close_attached(attached)
        finally:
            if cid is not None:
                self._remove(cid)

    def _watch(self, job: Job, cid: str, sock: socket.socket) -> RunReport:
        api = self.engine.api
        want = job.payload.want
        killer = threading.Thread(target=self._kill, args=(cid,), daemon=True)
        try:
            capture = pump(
                sock,
                job.payload.header() + job.payload.stdin,
                timeout_s=job.limits.timeout_s,
                output_cap=job.limits.output_bytes,
                stop=killer.start,
                marker=file_marker(job.payload.nonce) if want else None,
                files_cap=len(want) * (job.limits.max_file_bytes + 4096),
            )
        finally:
            # Tell the engine nobody reads any more, so a pending kill need not wait for us.
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        if killer.is_alive():
            killer.join(timeout=30)
        with map_docker_errors(job.image):
            try:
                status = api.wait(cid, timeout=30)
            except requests.exceptions.ReadTimeout:
                # The stream ended but the container did not: stop it ourselves.
                self._kill(cid)
                status = api.wait(cid, timeout=30)
            state = api.inspect_container(cid)["State"]
        files, notes = parse_files(capture.files_blob, want) if want else ({}, [])
        if not self.seccomp.text and job.runtime is Runtime.RUNC:
            notes.append(MISSING_NOTE)
        if capture.files_exceeded:
            notes.append("output files section exceeded its cap; files dropped")
            files = {}
        return RunReport(
            exit_code=int(status.get("StatusCode", state.get("ExitCode", -1))),
            stdout=bytes(capture.stdout),
            stderr=bytes(capture.stderr),
            duration_ms=capture.duration_ms,
            container_id=cid,
            timed_out=capture.timed_out,
            oom_killed=bool(state.get("OOMKilled")),
            output_exceeded=capture.output_exceeded,
            files=files,
            notes=tuple(notes),
        )

    def _labels(self, job: Job) -> dict[str, str]:
        deadline = time.time() + job.limits.timeout_s + REAP_GRACE_S
        return {
            LABEL: "1",
            f"{LABEL}.owner": f"{socket.gethostname()}:{os.getpid()}",
            f"{LABEL}.deadline": f"{deadline:.0f}",
            f"{LABEL}.language": job.language.name,
            f"{LABEL}.trust": job.trust.value,
            f"{LABEL}.run": secrets.token_hex(8),
        }

    def _kill(self, cid: str) -> None:
        try:
            self.engine.api.kill(cid)
        except docker.errors.APIError:
            pass  # already stopped

    def _remove(self, cid: str) -> None:
        try:
            self.engine.api.remove_container(cid, force=True)
        except docker.errors.NotFound:
            pass
        except (docker.errors.APIError, requests.exceptions.RequestException) as exc:
            raise InfraError(f"could not remove container {cid[:12]}: {exc}") from exc

    def reap(self) -> list[str]:
        """Remove hazmat containers whose owner process is gone or whose deadline passed."""
        removed = []
        with map_docker_errors():
            found = self.engine.api.containers(all=True, filters={"label": LABEL})
        for c in found:
            if _abandoned(c.get("Labels") or {}):
                self._remove(c["Id"])
                removed.append(str(c["Id"]))
        return removed

    def close(self) -> None:
        self.engine.close()


def _abandoned(labels: dict[str, str]) -> bool:
    try:
        deadline = float(labels.get(f"{LABEL}.deadline", "0"))
    except ValueError:
        deadline = 0
    if time.time() > deadline:
        return True
    host, _, pid = labels.get(f"{LABEL}.owner", "").rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return False
    return not _alive(int(pid))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _close_attached(attached: Any) -> None:
    """Close the attach connection: the HTTP response docker-py keeps on the socket wrapper
    first (it owns the reader over the socket), then the wrapper and the socket."""
    response = getattr(attached, "_response", None)
    if response is not None:
        response.close()
    attached.close()
    raw = getattr(attached, "_sock", None)
    if raw is not None:
        raw.close()


def _raw_socket(sock: Any) -> socket.socket:
    """docker-py hands back a SocketIO for unix sockets; the pump needs the socket itself."""
    raw = getattr(sock, "_sock", sock)
    if not isinstance(raw, socket.socket):
        raise InfraError(f"unsupported attach socket type {type(raw).__name__}")
    return raw
