"""Failures that are not the code's fault: missing image, unreachable or hung engine, runtime."""

from __future__ import annotations

import contextlib
import gc
import os
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest

from hazmat import Outcome, Sandbox, parse_policy
from hazmat.backends.container.engine import Engine, EngineInfo
from hazmat.backends.container.seccomp import load_profile
from hazmat.backends.docker.driver import LABEL, DockerBackend, container_config
from hazmat.languages import LANGUAGES
from hazmat.testing import as_asked

pytestmark = pytest.mark.docker


def test_missing_hazmat_tag_is_not_sent_to_the_image_builder(engine: Engine) -> None:
    policy = parse_policy({"images": {"python": "hazmat/python:does-not-exist"}})
    result = Sandbox(as_asked(policy), backend=DockerBackend(engine)).run("print(1)")
    assert result.outcome is Outcome.INFRA_ERROR
    from hazmat.images.recipes import RECIPES

    error = result.error or ""
    assert "not one `hazmat images build` makes (" in error and "never pulls" in error
    assert all(recipe.ref in error for recipe in RECIPES.values()), error


def test_a_missing_image_hazmat_builds_names_the_command() -> None:
    from hazmat.backends.container.engine import missing_image_message
    from hazmat.images.recipes import RECIPES

    message = missing_image_message(RECIPES["node"].ref)
    assert "`hazmat images build --lang node`" in message
    legacy = missing_image_message(RECIPES["python"].on("bookworm").ref)
    assert "`hazmat images build --lang python --suite bookworm`" in legacy
    own = RECIPES["python"].ref.replace("/python:", "/stats:")  # a name no recipe has
    assert "--name NAME --from BASE" in missing_image_message(own)


def test_missing_foreign_image_is_never_pulled(engine: Engine) -> None:
    image = "hazmat-test/never-pulled:1"
    policy = parse_policy({"images": {"python": image}})
    result = Sandbox(as_asked(policy), backend=DockerBackend(engine)).run("print(1)")
    assert result.outcome is Outcome.INFRA_ERROR
    assert "never pulls" in (result.error or "")
    assert engine.api.images(name=image) == []


# docker-py's unix-socket connection does not close its socket when connecting fails, and
# urllib3 leaves a timed-out one to the garbage collector. These tests collect it themselves,
# so the warning is raised (and ignored) here rather than in whichever test runs next.
leaks_a_socket = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")


def _run_against(url: str, timeout: int = 60) -> tuple[Outcome, str]:
    engine = Engine(base_url=url, timeout=timeout)
    with Sandbox(as_asked(), backend=DockerBackend(engine)) as sandbox:
        result = sandbox.run("print(1)")
    return result.outcome, result.error or ""


@leaks_a_socket
def test_unreachable_engine_is_an_infra_error(tmp_path: Path) -> None:
    outcome, error = _run_against(f"unix://{tmp_path}/no-such.sock")
    gc.collect()
    assert outcome is Outcome.INFRA_ERROR
    assert "cannot reach the Docker engine" in error


@leaks_a_socket
def test_stopped_engine_leaves_a_socket_that_refuses(tmp_path: Path) -> None:
    # What a stopped dockerd leaves behind: a socket file nobody listens on.
    path = tmp_path / "docker.sock"
    stale = socket.socket(socket.AF_UNIX)
    stale.bind(str(path))
    stale.close()
    outcome, error = _run_against(f"unix://{path}")
    gc.collect()
    assert outcome is Outcome.INFRA_ERROR
    assert "cannot reach the Docker engine" in error


@pytest.fixture
def silent_socket(tmp_path: Path) -> Iterator[Path]:
    """An engine that accepts connections and never answers."""
    path = tmp_path / "hung.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.listen(8)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield path
    stop.set()
    thread.join()
    for conn in held:
        conn.close()
    server.close()


@leaks_a_socket
def test_hung_engine_is_an_infra_error_within_the_api_timeout(silent_socket: Path) -> None:
    started = time.monotonic()
    outcome, error = _run_against(f"unix://{silent_socket}", timeout=1)
    gc.collect()
    assert outcome is Outcome.INFRA_ERROR
    assert "did not answer in time" in error
    assert time.monotonic() - started < 10


class RuncOnlyEngine(Engine):
    """The real engine, reporting that it has no runsc."""

    def info(self) -> EngineInfo:
        real = super().info()
        return EngineInfo(
            real.version,
            real.api_version,
            frozenset({"runc"}),
            real.resources,
            real.cgroup_version,
            real.kernel,
        )


def test_missing_runtime_fails_closed_never_falls_back() -> None:
    engine = RuncOnlyEngine()
    try:
        result = Sandbox(as_asked(), backend=DockerBackend(engine)).run("print(1)", runtime="runsc")
    finally:
        engine.close()
    assert result.outcome is Outcome.INFRA_ERROR
    assert "no runtime 'runsc'" in (result.error or "")
    assert result.container_id is None


def _container(engine: Engine, labels: dict[str, str]) -> str:
    from hazmat.backends.base import Spec
    from hazmat.backends.container.uids import UID_BASE
    from hazmat.policy import PRESETS, Runtime

    spec = Spec.of("python", LANGUAGES["python"].image, Runtime.RUNC, PRESETS["strict"])
    config = container_config(spec, labels, engine.api.api_version, load_profile(), UID_BASE)
    return str(engine.api.create_container(**config)["Id"])


def test_reaper_removes_only_what_is_abandoned(engine: Engine) -> None:
    """Dead owners' containers go; a live owner's stays even past its deadline (it is in use);
    an owner on another host or PID namespace is judged by the deadline; no deadline, never."""
    from hazmat.backends.container.owners import pid_namespace, start_time

    dead = subprocess.Popen(["true"])
    dead.wait()
    host, ns = socket.gethostname(), pid_namespace()
    future, past = f"{time.time() + 3600:.0f}", f"{time.time() - 1:.0f}"
    me = {
        f"{LABEL}.owner": f"{host}:{os.getpid()}",
        f"{LABEL}.owner_start": start_time(os.getpid()),
        f"{LABEL}.pidns": ns,
    }
    made = {
        "orphan": {
            f"{LABEL}.owner": f"{host}:{dead.pid}",
            f"{LABEL}.pidns": ns,
            f"{LABEL}.deadline": future,
        },
        "reused_pid": {**me, f"{LABEL}.owner_start": "1", f"{LABEL}.deadline": future},
        "far_and_late": {f"{LABEL}.owner": "elsewhere:1", f"{LABEL}.deadline": past},
        "other_pidns_late": {**me, f"{LABEL}.pidns": "1", f"{LABEL}.deadline": past},
        "live_and_late": {**me, f"{LABEL}.deadline": past},
        "live": {**me, f"{LABEL}.deadline": future},
        "far_in_time": {f"{LABEL}.owner": "elsewhere:1", f"{LABEL}.deadline": future},
        "no_deadline": {f"{LABEL}.owner": f"{host}:{dead.pid}", f"{LABEL}.pidns": ns},
    }
    ids = {name: _container(engine, {LABEL: "1", **labels}) for name, labels in made.items()}
    try:
        removed = set(DockerBackend(engine).reap())
        gone = {name for name, cid in ids.items() if cid in removed}
        assert gone == {"orphan", "reused_pid", "far_and_late", "other_pidns_late"}
    finally:
        for cid in ids.values():
            with contextlib.suppress(docker.errors.NotFound):
                engine.api.remove_container(cid, force=True)


def test_a_container_prepared_for_a_blocked_run_is_removed(engine: Engine) -> None:
    owner = {"label": f"{LABEL}.owner={socket.gethostname()}:{os.getpid()}"}

    def ours() -> set[str]:
        return {c["Id"] for c in engine.api.containers(all=True, filters=owner)}

    # containers this process made before (another test's pool, still being removed) are not
    # this test's
    earlier = ours()

    def mine_gone() -> bool:  # the removal runs once the prepared start completes
        deadline = time.monotonic() + 30
        while ours() - earlier:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)
        return True

    with Sandbox(as_asked(), backend=DockerBackend(engine)) as sandbox:
        blocked = sandbox.run("import ctypes\nctypes.CDLL(None)")
        assert mine_gone(), "the container prepared for a blocked run was left until close"
        fine = sandbox.run("print('after')", runtime="runc")
    assert blocked.outcome is Outcome.BLOCKED and blocked.container_id is None
    assert fine.outcome is Outcome.OK and fine.stdout == "after\n"


def test_a_create_that_times_out_on_our_side_leaves_no_container(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The engine made the container but its answer never reached us (a client timeout under
    load): the start fails, and the container is found by its start label and removed."""
    import requests.exceptions

    from hazmat import EngineUnavailable
    from hazmat.backends.base import Spec
    from hazmat.policy import PRESETS, Runtime

    backend = DockerBackend(engine)
    real = engine.api.create_container

    def late(**config: object) -> object:
        real(**config)
        raise requests.exceptions.ReadTimeout("read timed out")

    monkeypatch.setattr(engine.api, "create_container", late)
    owner = {"label": f"{LABEL}.owner={socket.gethostname()}:{os.getpid()}"}
    before = {c["Id"] for c in engine.api.containers(all=True, filters=owner)}
    spec = Spec.of("python", LANGUAGES["python"].image, Runtime.RUNC, PRESETS["strict"])
    with pytest.raises(EngineUnavailable, match="did not answer in time"):
        backend.start(spec, lifetime_s=10)
    after = {c["Id"] for c in engine.api.containers(all=True, filters=owner)}
    assert after <= before


def test_a_failing_reap_does_not_stop_runs(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    from hazmat import InfraError

    backend = DockerBackend(engine)

    def broken() -> list[str]:
        raise InfraError("the engine refused to list containers")

    monkeypatch.setattr(backend, "reap", broken)
    with Sandbox(as_asked(), backend=backend) as sandbox:
        result = sandbox.run("print('still runs')", runtime="runc")
    assert result.outcome is Outcome.OK and result.stdout == "still runs\n"
