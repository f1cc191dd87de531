"""Shared fixtures. Tests marked `docker` run against the real engine and hazmat's images."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator

import docker
import pytest

from hazmat import Policy, Sandbox
from hazmat.backends.docker import LABEL, DockerBackend
from hazmat.backends.engine import Engine

# Every run is audited: keep the test session's records out of the real state directory. The
# CLI tests' subprocesses inherit this.
os.environ["HAZMAT_AUDIT_DIR"] = tempfile.mkdtemp(prefix="hazmat-test-audit-")
os.environ["HAZMAT_CACHE_DIR"] = tempfile.mkdtemp(prefix="hazmat-test-cache-")


def _labelled_containers() -> list[str]:
    client = docker.APIClient(version="auto")
    try:
        return [c["Id"][:12] for c in client.containers(all=True, filters={"label": LABEL})]
    finally:
        client.close()


@pytest.fixture(scope="session", autouse=True)
def no_containers_left(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fail the session if any hazmat-labelled container is left on the engine."""
    uses_docker = any(item.get_closest_marker("docker") for item in request.session.items)
    yield
    if uses_docker:
        left = _labelled_containers()
        assert not left, f"hazmat containers left on the engine: {left}"


@pytest.fixture(scope="session")
def engine() -> Iterator[Engine]:
    eng = Engine()
    eng.info()  # fail loudly (not skip) when the engine is down: `make test` starts it
    yield eng
    eng.close()


@pytest.fixture(scope="session")
def sandbox(engine: Engine) -> Iterator[Sandbox]:
    """A sandbox with the built-in policy on the real engine (runc)."""
    with Sandbox(Policy(), backend=DockerBackend(engine)) as sb:
        yield sb


@pytest.fixture(scope="session", params=["runc", "runsc"])
def runtime(request: pytest.FixtureRequest, engine: Engine) -> str:
    name = str(request.param)
    if name not in engine.info().runtimes:
        pytest.fail(f"runtime {name} is not registered with the engine (scripts/ensure-engine.sh)")
    return name
