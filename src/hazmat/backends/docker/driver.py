"""The Docker tier's driver: containers made by a local or remote Docker engine.

Never `containers.run()` (it pulls silently): create, attach, start, wait and remove are
explicit, and removal happens in `finally`. A container is started before it has a job: the
agent (backends/agent/single.py) says when it is ready, the settings check
(backends/container/settings_check.py) compares what the engine applied with what was asked, and
only then may it take its one job (backends/container/backend.py runs it). Containers carry the
`hazmat` label, their owner (backends/container/owners.py), so that `reap()` can remove what a
killed process left behind, and the program's uid (backends/container/uids.py).
"""

from __future__ import annotations

import contextlib
import logging
import secrets
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

import docker.errors
import docker.types
import requests.exceptions

from hazmat._cache import cache_folder
from hazmat._exceptions import InfraError, SettingsMismatch
from hazmat.backends.agent.compiled import AGENT_PATH, compiled_agent
from hazmat.backends.agent.runners import READY_LINE
from hazmat.backends.base import Job, Spec
from hazmat.backends.container.backend import READY_TIMEOUT_S, ContainerBackend
from hazmat.backends.container.cgroup import Cgroup
from hazmat.backends.container.engine import Engine, map_docker_errors
from hazmat.backends.container.hardening import container_config
from hazmat.backends.container.owners import LABEL, abandoned
from hazmat.backends.container.seccomp import SeccompProfile, usable_profile
from hazmat.backends.container.settings_check import check, expected, host_pids_limit
from hazmat.backends.container.started import Started
from hazmat.backends.container.stream import NotReady, wait_ready
from hazmat.backends.container.uids import Uids
from hazmat.policy import HostResources, Runtime

__all__ = [
    "LABEL",
    "DockerBackend",
    "DockerDriver",
    "Started",
    "abandoned",
    "container_config",
    "host_pids_limit",
]

log = logging.getLogger(__name__)
_MiB = 1024 * 1024
# How many uids to try before giving up on a container (each try loses only to another
# live container holding the same uid: one in 65536 per live container)
UID_TRIES = 8
# The create_container arguments for a spec, its labels, the engine's API version, the
# seccomp profile, the program's uid and the compiled agent's binary to mount (None: the shell
# agent) (a test gives one that asks for more: the settings check must notice)
Config = Callable[[Spec, dict[str, str], str, SeccompProfile, int, str | None], dict[str, Any]]


class DockerBackend(ContainerBackend):
    """Runs each job in a container nobody used before, on a local or remote Docker engine
    (the engine named by DOCKER_HOST when none is given)."""

    def __init__(
        self,
        engine: Engine | None = None,
        seccomp: SeccompProfile | None = None,
        *,
        config: Config = container_config,
        compiled: bool = True,
    ) -> None:
        driver = DockerDriver(engine or Engine(), usable_profile(seccomp), config, compiled)
        super().__init__(driver)
        self.driver: DockerDriver = driver

    @property
    def tier(self) -> str:
        return "docker"

    @property
    def engine(self) -> Engine:
        """The engine the driver makes containers on."""
        return self.driver.engine


class DockerDriver:
    """Makes, checks and removes containers through the engine (`Driver`). A single run's
    container gets the compiled agent (backends/agent/compiled.py) mounted when the engine runs
    on this machine, `compiled` is asked and the host can build it; otherwise the shell agent."""

    def __init__(
        self, engine: Engine, seccomp: SeccompProfile, config: Config, compiled: bool = True
    ) -> None:
        self.engine = engine
        self.seccomp = seccomp
        self.config = config
        self.uids = Uids()
        self.compiled = compiled and engine.local
        self._lock = threading.Lock()

    def agent(self) -> str | None:
        """The compiled agent's binary on this host, mounted into every sandbox; None: the shell
        agents (a remote engine, no C compiler here, or an engine that could not mount it)."""
        if not self.compiled:
            return None
        binary = compiled_agent(cache_folder())
        return str(binary) if binary is not None else None

    @property
    def local(self) -> bool:
        return self.engine.local

    def resources(self) -> HostResources:
        return self.engine.info().resources

    def runtimes(self) -> set[str]:
        return self.engine.runtimes_now() & {runtime.value for runtime in Runtime}

    def start(self, spec: Spec, labels: dict[str, str], expires: float) -> Started:
        """Create, attach, start; wait until the agent is ready; check the settings.

        Raises `SettingsMismatch` (after removing the container) when the engine's settings
        differ from the policy's, and `InfraError` when the container does not get ready. An
        engine that cannot mount or run the compiled agent (one confined to some folders) is
        told once, in the log, and the shell agents run from then on.
        """
        agent = self.agent()
        try:
            return self._start(spec, labels, expires, agent)
        except SettingsMismatch:
            raise
        except InfraError as exc:
            if agent is None or not _about_agent(str(exc), agent):
                raise
            with self._lock:
                told, self.compiled = not self.compiled, False
            if not told:
                log.warning(
                    "the engine cannot run the compiled agent %s; the shell one runs: %s",
                    agent,
                    exc,
                )
            return self._start(spec, labels, expires, None)

    def _start(
        self, spec: Spec, labels: dict[str, str], expires: float, agent: str | None
    ) -> Started:
        api = self.engine.api
        self.engine.require_runtime(spec.runtime)
        token = secrets.token_hex(8)  # finds the container if create answers too late to say
        labels = {**labels, f"{LABEL}.start": token}
        cid: str | None = None
        uid: int | None = None
        attached: Any = None
        try:
            cid, uid = self._create(spec, labels, agent)
            with map_docker_errors(spec.image):
                attached = api.attach_socket(
                    cid, {"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1}
                )
                api.start(cid)
            sock = _raw_socket(attached)
            try:
                wait_ready(sock, READY_LINE, READY_TIMEOUT_S)
            except NotReady as exc:
                raise InfraError(f"container {cid[:12]} did not get ready: {exc}") from None
            with map_docker_errors(spec.image):
                inspected = api.inspect_container(cid)
            problems = check(inspected, expected(spec, uid, self.seccomp.security_opt, agent))
            if problems:
                raise SettingsMismatch(
                    f"container {cid[:12]} differs from the policy: " + "; ".join(problems),
                    problems,
                )
            cgroup = Cgroup.of_pid(int(inspected["State"].get("Pid") or 0))
            return Started(spec, cid, uid, attached, sock, time.monotonic(), expires, cgroup)
        except BaseException:
            if attached is not None:
                _close_attached(attached)
            if cid is not None:
                with contextlib.suppress(InfraError):
                    self._remove(cid)
            else:  # create may have failed on our side only (a timeout under load)
                self._remove_start(token)
            if uid is not None:
                self.uids.release(uid)
            raise

    def _create(self, spec: Spec, labels: dict[str, str], agent: str | None) -> tuple[str, int]:
        """Create the container with a uid no other live container holds
        (backends/container/uids.py)."""
        api = self.engine.api
        for _ in range(UID_TRIES):
            uid = self.uids.take()
            try:
                with map_docker_errors(spec.image):
                    config = self.config(
                        spec,
                        {**labels, f"{LABEL}.uid": str(uid)},
                        api.api_version,
                        self.seccomp,
                        uid,
                        agent,
                    )
                    cid = str(api.create_container(**config)["Id"])
                    try:
                        same = api.containers(
                            all=True, quiet=True, filters={"label": f"{LABEL}.uid={uid}"}
                        )
                    except BaseException:
                        with contextlib.suppress(InfraError):
                            self._remove(cid)
                        raise
                if all(c["Id"] == cid for c in same):
                    return cid, uid
                self._remove(cid)
            except BaseException:
                self.uids.release(uid)
                raise
            self.uids.release(uid)
        raise InfraError(f"no free sandbox uid after {UID_TRIES} tries")

    def program_memory(self, started: Started, job: Job) -> int | None:
        limit = job.spec.program_cgroup_mb * _MiB
        if started.cgroup is not None:
            try:
                return started.cgroup.limit_memory(limit)
            except OSError as exc:  # not root here: the engine can, for runc
                log.debug("cannot write the container's memory limit: %s", exc)
        if job.runtime is Runtime.RUNSC:
            raise InfraError(
                "the build step's memory budget (compile_memory_mb) needs this host to write "
                "the engine's cgroups under runsc, and it cannot: set compile_memory_mb to 0"
            )
        with map_docker_errors(job.image):
            self.engine.api.update_container(started.cid, mem_limit=limit, memswap_limit=limit)
        return None

    def final_state(self, started: Started, job: Job) -> tuple[int | None, bool]:
        """Exit status and OOM flag from the engine, once the container has stopped."""
        api = self.engine.api
        with map_docker_errors(job.image):
            try:
                status = api.wait(started.cid, timeout=30)
            except requests.exceptions.ReadTimeout:
                # The stream ended but the container did not: stop it ourselves.
                self.kill(started)
                status = api.wait(started.cid, timeout=30)
            state = api.inspect_container(started.cid)["State"]
        code = int(status.get("StatusCode", state.get("ExitCode", -1)))
        return code, bool(state.get("OOMKilled"))

    def discard(self, started: Started) -> None:
        """Close the connection and remove the container (used or not)."""
        with contextlib.suppress(OSError):
            _close_attached(started.attached)
        try:
            self._remove(started.cid)
        finally:
            self.uids.release(started.uid)

    def kill(self, started: Started) -> None:
        # already stopped, or gone
        with contextlib.suppress(docker.errors.APIError, requests.exceptions.RequestException):
            self.engine.api.kill(started.cid)

    def _remove(self, cid: str, engine: Engine | None = None) -> None:
        try:
            # v: with its anonymous volumes (an image's VOLUME would otherwise be left behind)
            (engine or self.engine).api.remove_container(cid, force=True, v=True)
        except docker.errors.NotFound:
            pass
        except (docker.errors.APIError, requests.exceptions.RequestException) as exc:
            raise InfraError(f"could not remove container {cid[:12]}: {exc}") from exc

    def _remove_start(self, token: str) -> None:
        with contextlib.suppress(InfraError):
            with map_docker_errors():
                found = self.engine.api.containers(
                    all=True, filters={"label": f"{LABEL}.start={token}"}
                )
            for c in found:
                self._remove(c["Id"])

    def reap(self) -> list[str]:
        """Remove hazmat containers that are abandoned (see `abandoned`); a container that
        cannot be removed is skipped, not an error."""
        with map_docker_errors():
            found = self.engine.api.containers(all=True, filters={"label": LABEL})
        return self._remove_each([c for c in found if abandoned(c.get("Labels") or {})])

    def _remove_each(self, found: list[dict[str, Any]], engine: Engine | None = None) -> list[str]:
        """Remove each container; one that cannot be removed is logged and skipped."""
        removed = []
        for c in found:
            try:
                self._remove(c["Id"], engine)
            except InfraError as exc:
                log.warning("%s", exc)
                continue
            removed.append(str(c["Id"]))
        return removed

    def remove_leftovers(self, before: float, token: str) -> int:
        """Through the engine's short-timeout client: a worker calls this from its heartbeat,
        which a slow engine just back must not hold up."""

        def made_before(container: dict[str, Any]) -> bool:
            return int(container.get("Created", before)) < int(before)

        return self._remove_mine(self.engine.probe(), made_before, token)

    def remove_mine(self, token: str) -> int:
        """Through the engine's own client (its full timeout): this is the backend's last
        chance, and a forced removal on a loaded engine can take longer than a probe's."""
        return self._remove_mine(self.engine, lambda c: True, token)

    def _remove_mine(
        self, engine: Engine, which: Callable[[dict[str, Any]], bool], token: str
    ) -> int:
        """Remove the containers labelled with the backend's `token` that `which` picks; how
        many. An engine that does not answer is not an error: a later hazmat process's reaper
        removes them (their owner is gone by then)."""
        mine = f"{LABEL}.backend={token}"
        try:
            with map_docker_errors():
                found = engine.api.containers(all=True, filters={"label": mine})
        except InfraError as exc:
            log.warning("could not look for this backend's containers: %s", exc)
            return 0
        return len(self._remove_each([c for c in found if which(c)], engine))

    def close(self) -> None:
        self.engine.close()


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


def _about_agent(error: str, agent: str) -> bool:
    """Whether the engine's error is about the compiled agent's mount or its start: it names
    the binary, on the host or in the container."""
    return agent in error or AGENT_PATH in error
