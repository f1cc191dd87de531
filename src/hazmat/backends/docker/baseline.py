"""What `hazmat bench` compares hazmat with, straight to the engine: a plain `docker run` with
the same hardening flags, and the engine API's own create+start (+remove) of the containers
hazmat would make, with no run in them; and what a waiting container costs (`footprint`)."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import docker.errors

from hazmat.backends.base import Spec
from hazmat.backends.container.engine import Engine
from hazmat.backends.container.hardening import container_config
from hazmat.backends.container.settings_check import RUNSC_PIDS_BASE, RUNSC_PIDS_PER_TASK
from hazmat.backends.container.started import Started
from hazmat.backends.container.uids import UID_BASE
from hazmat.backends.docker.driver import DockerBackend
from hazmat.languages import get_language

__all__ = ["RawStarts", "docker_run_command", "footprint"]


def docker_run_command(language: str, runtime: str) -> list[str]:
    """`docker run` with the same hardening flags; the program goes in on stdin."""
    lang = get_language(language)
    build = f"({lang.build}) && " if lang.build else ""  # a subshell: a build may `exec`
    prepare = f"(cd /tmp && {lang.prepare}); " if lang.prepare else ""  # as the pool does
    out_dir = "mkdir -p /tmp/.hazmat-build && "
    script = f"cat > {lang.source_name} && {prepare}{out_dir}{build}{lang.run}"
    env = [f"--env={k}={v}" for k, v in lang.env.items()]
    tmp = "exec" if lang.exec_tmp else "noexec"
    # 128 tasks for the program; under runsc the sentry's own threads count too, so it gets
    # hazmat's headroom (settings_check.host_pids_limit): a flat 128 failed runsc builds at once
    pids = RUNSC_PIDS_BASE + RUNSC_PIDS_PER_TASK * 128 if runtime == "runsc" else 128
    return [
        "docker", "run", "--rm", "-i", f"--runtime={runtime}", "--network=none", "--read-only",
        "--cap-drop=ALL", "--security-opt=no-new-privileges", "--user=65534:65534", "--init",
        "--memory=256m", "--memory-swap=256m", "--cpus=0.5", "--log-driver=none",
        f"--tmpfs=/tmp:rw,nosuid,nodev,{tmp},size=32m",
        "--tmpfs=/work:rw,nosuid,nodev,size=32m,uid=65534,gid=65534,mode=0700",
        "--workdir=/work", f"--pids-limit={pids}", "--env=HOME=/tmp", *env,
        lang.image, "/bin/sh", "-c", script,
    ]  # fmt: skip


class RawStarts:
    """Hardened containers for `spec`, configured as hazmat's own, created and started through
    the engine API with nothing run in them: the engine's own rate, for comparison."""

    def __init__(self, engine: Engine, spec: Spec) -> None:
        self.engine = engine
        backend = DockerBackend(engine)
        self.config = container_config(spec, {}, engine.api.api_version, backend.seccomp, UID_BASE)
        self.config["labels"] = backend.labels(spec, time.time() + 3600, False)

    @contextlib.contextmanager
    def calls(self, remove: bool) -> Iterator[Callable[[], None]]:
        """A call that creates and starts one container (and with `remove`, removes it), safe
        from many threads. The containers left are removed on the way out, also when
        interrupted."""
        made: list[str] = []
        lock = threading.Lock()
        api = self.engine.api

        def once() -> None:
            cid = api.create_container(**self.config)["Id"]
            with lock:
                made.append(cid)
            api.start(cid)
            if remove:
                api.remove_container(cid, force=True, v=True)
                with lock:
                    made.remove(cid)

        try:
            yield once
        finally:
            for cid in made:
                with contextlib.suppress(docker.errors.APIError):
                    api.remove_container(cid, force=True, v=True)


def footprint(started: Started) -> tuple[int | None, int]:
    """What a container waiting for its job holds: its cgroup's memory (None: no cgroup
    found) and the resident memory of the containerd shim that serves it (0: none found)."""
    memory = _usage(started.cgroup.memory) if started.cgroup else None
    return memory, _shim_rss(started.cid)


def _usage(memory: Path) -> int:
    for name in ("memory.usage_in_bytes", "memory.current"):
        path = memory / name
        if path.exists():
            return int(path.read_text())
    return 0


def _shim_rss(cid: str) -> int:
    """RSS of the containerd shim that serves `cid` (one per container on engine 20.10)."""
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes()
            if b"containerd-shim" in cmdline and cid.encode() in cmdline:
                for line in (proc / "status").read_text().splitlines():
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1]) * 1024
        except OSError:
            continue
    return 0
