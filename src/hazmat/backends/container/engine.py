"""The connection to the Docker engine, and the translation of its errors into ours."""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import docker
import docker.errors
import requests.exceptions

from hazmat._exceptions import (
    EngineUnavailable,
    ImageNotFound,
    InfraError,
    RuntimeUnavailable,
)
from hazmat.policy import HostResources, Runtime

__all__ = ["Engine", "EngineInfo", "map_docker_errors"]

# How long one engine API call may take before the engine counts as not answering.
API_TIMEOUT_S = 60
PROBE_TIMEOUT_S = 3  # a health ping (a cluster worker's every second)
# docker-py keeps one connection pool per request URL, 10 connections each, the 25 most recent
# (docker-py issues #2477, #3311; docker compose #3586): with 16 callers more than 10 creates
# are in flight at once, a pool fills, and evicting it while a connection goes back raced into
# "'NoneType' object has no attribute 'qsize'" (seen in benchmarks/pool_sizing.py). Room for
# every thread hazmat runs at once, and pools enough that one in use is not evicted.
MAX_POOL_SIZE = 128
NUM_POOLS = 1024
MIN_API_VERSION = "1.41"  # Docker 20.10, the oldest engine hazmat is tested on
DEFAULT_HOST = "unix:///var/run/docker.sock"


@contextmanager
def map_docker_errors(image: str | None = None) -> Iterator[None]:
    """Turn docker-py and requests exceptions into hazmat's, most specific first."""
    try:
        yield
    except docker.errors.ImageNotFound as exc:
        raise ImageNotFound(missing_image_message(image or "?")) from exc
    except docker.errors.APIError as exc:
        text = str(exc.explanation or exc)
        if "runtime" in text and ("unknown" in text or "invalid" in text):
            raise RuntimeUnavailable(f"the Docker engine refused the runtime: {text}") from exc
        raise InfraError(f"the Docker engine returned an error: {text}") from exc
    except (requests.exceptions.RequestException, docker.errors.DockerException) as exc:
        if _caused_by(exc, requests.exceptions.Timeout):
            raise EngineUnavailable(f"the Docker engine did not answer in time: {exc}") from exc
        raise EngineUnavailable(unreachable_message(exc)) from exc


def _reach(url: str, timeout: float) -> None:
    """Connect to a local engine's socket once, and close it: `EngineUnavailable` if nobody
    is there. docker-py leaves the socket of a failed connect open (an unclosed socket for
    every try at a stopped engine, in a process that keeps trying), so it is only handed a
    socket that answers. Engines reached over TCP or SSH are left to docker-py."""
    try:
        parsed = docker.utils.parse_host(url)  # as docker-py reads it
    except docker.errors.DockerException:
        return  # docker-py says what is wrong with it
    if not parsed.startswith("http+unix://"):
        return
    path = parsed.removeprefix("http+unix://")
    path = path if path.startswith("/") else f"/{path}"  # as docker-py's unix adapter does
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(timeout)
            sock.connect(path)
    except OSError as exc:
        raise EngineUnavailable(unreachable_message(exc)) from exc


def _caused_by(exc: BaseException, kind: type[BaseException]) -> bool:
    """Whether `exc` or anything in its cause chain is a `kind` (docker-py wraps errors)."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, kind):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def unreachable_message(exc: BaseException) -> str:
    """Why the engine cannot be reached, in words, and what to do: no raw exception tuples."""
    where = os.environ.get("DOCKER_HOST") or DEFAULT_HOST
    source = "DOCKER_HOST" if os.environ.get("DOCKER_HOST") else "the default; set DOCKER_HOST"
    reason = _root_reason(exc)
    return (
        f"cannot reach the Docker engine at {where} ({source} to use another): {reason}. "
        "Is it running? Start it (`systemctl start docker`, or `dockerd` as root), make sure "
        "this user may use its socket, and run `hazmat doctor`"
    )


def _root_reason(exc: BaseException) -> str:
    """The innermost OS-level reason in a docker-py / requests / urllib3 cause chain."""
    seen: BaseException | None = exc
    reason = ""
    while seen is not None:
        for arg in (seen, *getattr(seen, "args", ())):
            if isinstance(arg, OSError) and arg.strerror:
                reason = arg.strerror
        seen = seen.__cause__ or seen.__context__
    return reason or type(exc).__name__


def missing_image_message(image: str) -> str:
    """What to do about an image the engine does not have: the command that builds it when
    it is one of hazmat's standard images, else where images come from."""
    from hazmat.languages import DEFAULT_SUITE, SUITES, standard_images

    repository, _, tag = image.partition(":")
    name = repository.removeprefix("hazmat/")
    suite = next((s for s, t in SUITES.items() if t == tag), None)
    standard = standard_images()
    if repository.startswith("hazmat/") and name in standard and suite is not None:
        option = "" if suite == DEFAULT_SUITE else f" --suite {suite}"
        return (
            f"image {image} is not on the Docker engine; build it with "
            f"`hazmat images build --lang {name}{option}` (needs root; hazmat never pulls images)"
        )
    ours = sorted(f"hazmat/{n}:{SUITES[DEFAULT_SUITE]}" for n in standard)
    unknown = (
        f", and it is not one `hazmat images build` makes ({', '.join(ours)}; an image of "
        "your own comes from `hazmat images build --name NAME --from BASE`)"
        if image.startswith("hazmat/")
        else ""
    )
    return (
        f"image {image} is not on the Docker engine{unknown}; hazmat never pulls: "
        "load it yourself (e.g. `docker load`) or point the policy at another image"
    )


@dataclass(frozen=True)
class EngineInfo:
    version: str
    api_version: str
    runtimes: frozenset[str]
    resources: HostResources
    cgroup_version: str
    kernel: str


class Engine:
    """A lazily opened, thread-safe handle on the Docker engine's API."""

    def __init__(self, base_url: str | None = None, timeout: int = API_TIMEOUT_S) -> None:
        self._base_url = base_url
        self._timeout = timeout
        self._lock = threading.Lock()
        self._api: docker.APIClient | None = None
        self._info: EngineInfo | None = None
        self._probe: Engine | None = None

    @property
    def api(self) -> docker.APIClient:
        with self._lock:
            if self._api is None:
                with map_docker_errors():
                    self._api = self._connect()
            return self._api

    def _connect(self) -> docker.APIClient:
        """Negotiate the API version with a probe client that is always closed (docker-py's
        own `version="auto"` leaks its connection when the engine does not answer)."""
        kwargs: dict[str, Any] = {
            "timeout": self._timeout,
            "max_pool_size": MAX_POOL_SIZE,
            "num_pools": NUM_POOLS,
        }
        if self._base_url:
            kwargs["base_url"] = self._base_url
        else:
            kwargs.update(docker.utils.kwargs_from_env())
        _reach(str(kwargs.get("base_url") or DEFAULT_HOST), self._timeout)
        probe = docker.APIClient(version=MIN_API_VERSION, **kwargs)
        try:
            server = str(probe.version(api_version=False)["ApiVersion"])
        finally:
            probe.close()
        ours = docker.constants.DEFAULT_DOCKER_API_VERSION
        version = min(server, ours, key=lambda v: tuple(int(p) for p in v.split(".")))
        return docker.APIClient(version=version, **kwargs)

    @property
    def local(self) -> bool:
        """Whether the engine runs on this machine (reached through a unix socket)."""
        url = self._base_url or os.environ.get("DOCKER_HOST") or DEFAULT_HOST
        return url.startswith(("unix://", "/"))

    def probe(self) -> Engine:
        """The same engine through a client of its own with a short timeout
        (PROBE_TIMEOUT_S), for health checks and upkeep a hung engine must not hold up."""
        with self._lock:
            if self._probe is None:
                self._probe = Engine(self._base_url, timeout=PROBE_TIMEOUT_S)
            return self._probe

    def runtimes_now(self) -> set[str]:
        """The runtimes the engine has, if it answers a ping within PROBE_TIMEOUT_S; else
        empty."""
        probe = self.probe()
        try:
            probe.api.ping()
            return set(probe.info().runtimes)
        except Exception:
            return set()

    def info(self) -> EngineInfo:
        if self._info is None:
            with map_docker_errors():
                raw = self.api.info()
                version = self.api.version()
            self._info = EngineInfo(
                version=str(version.get("Version", "?")),
                api_version=str(version.get("ApiVersion", "?")),
                runtimes=frozenset(raw.get("Runtimes") or {}),
                resources=HostResources(
                    cpus=int(raw.get("NCPU") or 1),
                    memory_mb=int(raw.get("MemTotal") or 0) // (1024 * 1024) or 1024,
                ),
                cgroup_version=str(raw.get("CgroupVersion", "1")),
                kernel=str(raw.get("KernelVersion", "?")),
            )
        return self._info

    def require_runtime(self, runtime: Runtime) -> None:
        """Fail closed when the runtime is missing: never fall back to another one."""
        if runtime.value not in self.info().runtimes:
            raise RuntimeUnavailable(
                f"the Docker engine has no runtime {runtime.value!r} "
                f"(it has: {', '.join(sorted(self.info().runtimes))}); "
                "register it in /etc/docker/daemon.json, see `hazmat doctor`"
            )

    def close(self) -> None:
        with self._lock:
            probe, self._probe = self._probe, None
            if probe is not None:
                probe.close()
            if self._api is not None:
                self._api.close()
                self._api = None
