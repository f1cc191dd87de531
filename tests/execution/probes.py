"""Running a hostile probe on the real engine and reading what it printed (test_abuse.py,
test_identity.py). Most probes are rated BLOCKED by the static assessment; they run on a
written override, because what is tested is the container, whatever the assessment misses."""

from __future__ import annotations

import textwrap
import time

import docker.errors

from hazmat import ExecutionResult, Sandbox
from hazmat.backends.container.backend import ContainerBackend
from hazmat.backends.container.engine import Engine
from hazmat.backends.container.uids import UID_COUNT, Uids
from hazmat.backends.docker.driver import DockerBackend
from hazmat.backends.oci.driver import OCI_UID_BASE, OciBackend

OVERRIDE = "abuse test: the container must contain this whatever the assessment says"


def run(sandbox: Sandbox, runtime: str, code: str, **kwargs: object) -> ExecutionResult:
    kwargs.setdefault("override_reason", OVERRIDE)
    return sandbox.run(textwrap.dedent(code), runtime=runtime, **kwargs)  # type: ignore[arg-type]


def lines(result: ExecutionResult) -> dict[str, str]:
    """`KEY value` lines printed by a probe, as a dict."""
    pairs = (line.split(" ", 1) for line in result.stdout.splitlines() if " " in line)
    return {key: value for key, value in pairs}


def tier_of(sandbox: Sandbox, engine: Engine) -> ContainerBackend:
    """A new backend of the tier `sandbox` runs on (the Docker backend or the OCI tier)."""
    inner = getattr(sandbox.backend, "leaser", sandbox.backend)
    tier: ContainerBackend = (
        OciBackend(engine) if isinstance(inner, OciBackend) else DockerBackend(engine)
    )
    return tier


def gone(sandbox: Sandbox, container_id: str | None, within_s: float = 15) -> bool:
    """Whether the container (or the OCI tier's sandbox) is removed within `within_s`: the
    pool removes in the background."""
    inner = getattr(sandbox.backend, "leaser", sandbox.backend)
    engine = Engine()  # the engine hazmat uses (DOCKER_HOST's): another one knows no container
    deadline = time.monotonic() + within_s
    try:
        while True:
            if isinstance(inner, OciBackend):
                if container_id and not (inner.run_dir / "bundles" / container_id).exists():
                    return True
            else:
                try:
                    engine.api.inspect_container(container_id)
                except docker.errors.NotFound:
                    return True
            if time.monotonic() > deadline:
                return False
            time.sleep(0.1)
    finally:
        engine.close()


def uids_of(sandbox: Sandbox) -> Uids:
    """The range of program uids of the tier `sandbox` runs on (backends/container/uids.py)."""
    inner = getattr(sandbox.backend, "leaser", sandbox.backend)
    return Uids(OCI_UID_BASE, UID_COUNT) if isinstance(inner, OciBackend) else Uids()
