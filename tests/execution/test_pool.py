"""The warm pool on the real engine: single use, refill, health, max age, shutdown, reaper,
the settings check, and the host's resource figures. (The whole behaviour and abuse suite
also runs through the pool: the `sandbox` fixture has a pooled variant.)"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import docker.errors
import pytest

from hazmat import Outcome, Sandbox, parse_policy
from hazmat.audit.log import AuditLog
from hazmat.backends.base import Spec
from hazmat.backends.container.engine import Engine
from hazmat.backends.container.seccomp import load_profile
from hazmat.backends.container.settings_check import check, expected
from hazmat.backends.container.uids import UID_BASE
from hazmat.backends.docker.driver import LABEL, DockerBackend, container_config
from hazmat.backends.pool.warm import PoolBackend
from hazmat.policy import PRESETS, PoolSettings, Runtime
from hazmat.testing import as_asked, audit_records

UID = UID_BASE + 7

pytestmark = pytest.mark.docker

OVERRIDE = "pool tests run code the assessment flags, on purpose"


def _spec_of(result: Any) -> Spec:
    return Spec.of(result.language, result.image, result.runtime, result.limits)


@pytest.fixture()
def pool(engine: Engine) -> Iterator[Sandbox]:
    backend = PoolBackend(DockerBackend(engine), PoolSettings(size=2, refill_concurrency=2))
    with Sandbox(as_asked(), backend=backend) as sb:
        yield sb


def _exists(engine: Engine, cid: str) -> bool:
    try:
        engine.api.inspect_container(cid)
    except docker.errors.NotFound:
        return False
    return True


def _gone(engine: Engine, cid: str, within_s: float = 20) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if not _exists(engine, cid):
            return True
        time.sleep(0.1)
    return False


@pytest.mark.parametrize("runtime", ["runc", "runsc"])
def test_pooled_runs_each_get_a_new_container_that_is_removed(
    pool: Sandbox, engine: Engine, runtime: str
) -> None:
    backend = pool.backend
    assert isinstance(backend, PoolBackend)
    spec = pool.warm("python", runtime=runtime)
    assert backend.wait_ready(spec, 2)
    seen = []
    for i in range(4):
        result = pool.run(f"print({i})", runtime=runtime)
        assert result.outcome is Outcome.OK and result.stdout == f"{i}\n", result
        assert result.pooled is True
        seen.append(result.container_id)
        assert backend.wait_ready(spec, 1)
    assert len(set(seen)) == 4, "a container was handed out twice"
    assert all(_gone(engine, cid or "") for cid in seen)
    stats = pool.metrics()
    assert stats.pool_hits == 4 and stats.pool_misses == 0


@pytest.mark.matrix
def test_a_process_whose_first_thread_exited_ends_with_the_run(
    pool: Sandbox, engine: Engine, runtime: str
) -> None:
    # a child whose first thread exits while another runs on shows Z, as a zombie would
    code = textwrap.dedent(
        """
        import ctypes, os, threading, time
        print(os.getuid(), flush=True)
        if os.fork() == 0:
            threading.Thread(target=lambda: time.sleep(600)).start()
            ctypes.CDLL(None).pthread_exit(None)
        time.sleep(0.1)
        """
    )
    result = pool.run(code, runtime=runtime, override_reason=OVERRIDE)
    assert result.outcome is Outcome.OK, result.stderr
    uid = result.stdout.strip()
    # the agent ended every process of the run before it reported its end (under runc they
    # are the host's; under gVisor they go with the sandbox, which the pool removes)
    assert [p for p in Path("/proc").iterdir() if _uid_of(p) == uid] == []
    assert _gone(engine, result.container_id or "")


def _uid_of(process: Path) -> str | None:
    try:
        return (process / "status").read_text().split("\nUid:\t", 1)[1].split("\t", 1)[0]
    except (OSError, IndexError):
        return None


def test_a_miss_takes_the_cold_path_and_fills_the_pool(pool: Sandbox) -> None:
    backend = pool.backend
    assert isinstance(backend, PoolBackend)
    first = pool.run("print('cold')", language="python", memory_mb=96)
    assert first.outcome is Outcome.OK and first.pooled is False
    assert backend.wait_ready(_spec_of(first), 2)
    second = pool.run("print('warm')", language="python", memory_mb=96)
    assert second.outcome is Outcome.OK and second.pooled is True
    assert pool.metrics().pool_misses == 1 and pool.metrics().pool_hits == 1


def test_a_pooled_container_that_died_is_replaced_not_used(pool: Sandbox, engine: Engine) -> None:
    backend = pool.backend
    assert isinstance(backend, PoolBackend)
    spec = pool.warm("python", runtime="runc")
    assert backend.wait_ready(spec, 2)
    victims = [s.cid for s in backend.ready_leases(spec)]
    for cid in victims:
        engine.api.kill(cid)
        engine.api.wait(cid, timeout=30)  # stopped: its attach stream has ended
    result = pool.run("print('fine')", runtime="runc")
    assert result.outcome is Outcome.OK and result.stdout == "fine\n", result
    assert result.container_id not in victims
    assert backend.stats.expired >= 2
    assert all(_gone(engine, cid) for cid in victims)


def test_containers_older_than_max_age_are_replaced(engine: Engine) -> None:
    settings = PoolSettings(size=1, max_age_s=1.5)
    with Sandbox(as_asked(), backend=PoolBackend(DockerBackend(engine), settings)) as sb:
        backend = sb.backend
        assert isinstance(backend, PoolBackend)
        spec = sb.warm("python", runtime="runc")
        assert backend.wait_ready(spec, 1)
        first = backend.ready_leases(spec)[0].cid
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and _exists(engine, first):
            time.sleep(0.2)
        assert not _exists(engine, first), "an aged container was kept"
        assert backend.wait_ready(spec, 1)
        assert backend.ready_leases(spec)[0].cid != first


def test_close_removes_every_pooled_container(engine: Engine) -> None:
    sb = Sandbox(as_asked(), backend=PoolBackend(DockerBackend(engine), PoolSettings(size=2)))
    backend = sb.backend
    assert isinstance(backend, PoolBackend)
    spec = sb.warm("python", runtime="runc")
    assert backend.wait_ready(spec, 2)
    held = [s.cid for s in backend.ready_leases(spec)]
    sb.close()
    assert not any(_exists(engine, cid) for cid in held)
    mine = engine.api.containers(
        all=True, filters={"label": f"{LABEL}.owner={os.uname().nodename}:{os.getpid()}"}
    )
    assert mine == []


def test_a_crashed_owner_leaves_nothing_after_the_next_start(
    engine: Engine, python_image: str
) -> None:
    script = textwrap.dedent(
        f"""
        import os
        from hazmat.backends.docker.driver import DockerBackend
        from hazmat.backends.pool.warm import PoolBackend
        from hazmat.backends.base import Spec
        from hazmat.policy import PRESETS, PoolSettings, Runtime
        pool = PoolBackend(DockerBackend(), PoolSettings(size=2))
        spec = Spec.of("python", {python_image!r}, Runtime.RUNC, PRESETS["strict"])
        pool.warm(spec)
        assert pool.wait_ready(spec, 2)
        print(os.getpid(), flush=True)
        os._exit(0)  # no close(): what a crash leaves
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    pid = out.stdout.strip()
    owner = {"label": f"{LABEL}.owner={os.uname().nodename}:{pid}"}
    left = [c["Id"] for c in engine.api.containers(all=True, filters=owner)]
    assert len(left) == 2
    removed = DockerBackend(engine).reap()
    assert set(left) <= set(removed)
    assert engine.api.containers(all=True, filters=owner) == []


def test_a_closed_backend_leaves_none_of_its_containers(
    engine: Engine, python_image: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whatever happened to a container a backend started (here: nobody discarded it, as when
    a removal fails while the engine is away), closing the backend removes it; another
    backend's containers in the same process stay. Closing does not go through the engine's
    short-timeout client (here: it fails, as it times out on a loaded machine): a worker
    stopping on a busy engine left containers behind that way."""
    spec = Spec.of("python", python_image, Runtime.RUNC, PRESETS["strict"])
    lost, other = DockerBackend(engine), DockerBackend(engine)
    forgotten = lost.start(spec, lifetime_s=60)
    kept = other.start(spec, lifetime_s=60)
    try:
        monkeypatch.setattr(engine, "probe", lambda: Engine("unix:///nonexistent/docker.sock"))
        lost.close()
        ids = {c["Id"] for c in engine.api.containers(all=True, filters={"label": LABEL})}
        assert forgotten.cid not in ids and kept.cid in ids
    finally:
        lost.discard(forgotten)  # its attach connection (the container is gone already)
        other.discard(kept)
        other.close()


def test_the_settings_check_finds_a_container_that_differs(
    engine: Engine, python_image: str
) -> None:
    spec = Spec.of("python", python_image, Runtime.RUNC, PRESETS["strict"])
    config = container_config(spec, {LABEL: "1"}, engine.api.api_version, load_profile(), UID)
    want = expected(spec, UID)
    other = container_config(
        Spec.of("python", python_image, Runtime.RUNC, PRESETS["standard"]),
        {LABEL: "1"},
        engine.api.api_version,
        load_profile(),
        UID + 1,
    )
    host = dict(other["host_config"])
    host.update(ReadonlyRootfs=False, CapDrop=None, CapAdd=["NET_RAW"], SecurityOpt=None)
    other.update(user="65534:65534", host_config=host)
    same = engine.api.create_container(**config)["Id"]
    differs = engine.api.create_container(**other)["Id"]
    try:
        assert check(engine.api.inspect_container(same), want) == []
        problems = check(engine.api.inspect_container(differs), want)
    finally:
        for cid in (same, differs):
            engine.api.remove_container(cid, force=True)
    named = {p.split(":")[0] for p in problems}
    assert named == {
        "read_only_root",
        "cap_drop",
        "cap_add",
        "no_new_privileges",
        "user",
        "program_uid",
        "memory",
        "memory_swap",
        "pids",
        "tmpfs",  # the standard preset's working directory is larger
        "shm_size",
        "ulimits",
    }


def test_the_settings_check_covers_every_security_relevant_field(
    engine: Engine, tmp_path: Path, python_image: str
) -> None:
    """Containers created (never started) with one loosened setting each: each is named."""
    spec = Spec.of("python", python_image, Runtime.RUNC, PRESETS["strict"])
    profile = load_profile()
    want = expected(spec, UID, profile.security_opt)
    loosen: dict[str, dict[str, Any]] = {
        "masked_paths": {"MaskedPaths": []},
        "mounts": {"Binds": [f"{tmp_path}:/mnt:ro"]},
        "seccomp": {"SecurityOpt": ["no-new-privileges=true", "seccomp=unconfined"]},
        "namespaces": {"PidMode": "host"},
        "sysctls": {"Sysctls": {"kernel.msgmax": "65536"}},
        "devices": {
            "Devices": [
                {"PathOnHost": "/dev/null", "PathInContainer": "/dev/x", "CgroupPermissions": "r"}
            ]
        },
        "init": {"Init": False},
        "oom_score_adj": {"OomScoreAdj": 0},
        "log_driver": {"LogConfig": {"Type": "json-file", "Config": {}}},
    }
    for field, change in loosen.items():
        config = container_config(spec, {LABEL: "1"}, engine.api.api_version, profile, UID)
        config["host_config"] = {**config["host_config"], **change}
        cid = engine.api.create_container(**config)["Id"]
        try:
            problems = check(engine.api.inspect_container(cid), want)
        finally:
            engine.api.remove_container(cid, force=True, v=True)
        assert field in {p.split(":")[0] for p in problems}, (field, problems)
    same = engine.api.create_container(
        **container_config(spec, {LABEL: "1"}, engine.api.api_version, profile, UID)
    )["Id"]
    try:
        assert check(engine.api.inspect_container(same), want) == []
    finally:
        engine.api.remove_container(same, force=True, v=True)


def _loosened(*args: Any) -> dict[str, Any]:
    """Asks the engine for a writable root filesystem: the settings check must notice."""
    config = container_config(*args)
    config["host_config"]["ReadonlyRootfs"] = False
    return config


@pytest.mark.parametrize("pooled", [False, True])
def test_a_container_that_differs_gets_no_job_and_is_a_security_event(
    engine: Engine, tmp_path: Path, pooled: bool
) -> None:
    backend: Any = DockerBackend(engine, config=_loosened)
    if pooled:
        backend = PoolBackend(backend, PoolSettings(size=1))
    with Sandbox(as_asked(), backend=backend, audit=AuditLog(tmp_path)) as sb:
        if pooled:
            sb.warm("python", runtime="runc")
            assert backend.wait_for(lambda stats: stats.failed > 0, 60)
        result = sb.run("print('never')", runtime="runc")
    assert result.outcome is Outcome.INFRA_ERROR and result.stdout == ""
    assert any(p.startswith("read_only_root") for p in result.settings_mismatch)
    assert "differs from the policy" in (result.error or "")
    events = [d for kind, d in audit_records(sb) if kind == "security.settings_mismatch"]
    where = [e["where"] for e in events]
    assert where == (["pool", "run"] if pooled else ["run"]), events


@pytest.mark.parametrize("runtime", ["runc", "runsc"])
def test_peak_memory_and_cpu_time_come_from_the_host(sandbox: Sandbox, runtime: str) -> None:
    """The figures are the host's (the sandbox's cgroup), not the program's word. Under runc
    the cgroup holds the program's process, so its CPU time is at least what the process
    itself counted. Under gVisor the program's clock is the Sentry's own accounting, which
    need not match the host's CPU time (it once read 400 ms where the host counted 336): there
    the host's figure is only ordered against a run that does next to nothing."""
    code = textwrap.dedent(
        """
        import time
        began = time.process_time()
        block = bytearray(120 * 1024 * 1024)
        for i in range(0, len(block), 4096):
            block[i] = 1
        end = time.process_time() + 0.4
        while time.process_time() < end:
            pass
        print((time.process_time() - began) * 1000)
        """
    )
    result = sandbox.run(code, runtime=runtime, override_reason=OVERRIDE)
    assert result.outcome is Outcome.OK, result
    assert result.peak_memory_bytes is not None and result.cpu_time_ms is not None
    assert result.peak_memory_bytes >= 120 * 1024 * 1024
    if runtime == "runc":
        assert result.cpu_time_ms >= float(result.stdout), result
    small = sandbox.run("print(1)", runtime=runtime)
    assert small.peak_memory_bytes is not None and small.peak_memory_bytes < 100 * 1024 * 1024
    assert small.cpu_time_ms is not None and small.cpu_time_ms < result.cpu_time_ms


def test_an_oom_kill_is_seen_through_the_cgroup(sandbox: Sandbox) -> None:
    code = "hog = []\nwhile True:\n    hog.append(bytearray(16 * 1024 * 1024))\n"
    result = sandbox.run(code, runtime="runc", memory_mb=96, override_reason=OVERRIDE)
    assert result.outcome is Outcome.MEMORY_LIMIT, result
    assert result.peak_memory_bytes is not None
    assert result.peak_memory_bytes >= 80 * 1024 * 1024


def test_policy_pool_keys_are_validated() -> None:
    from hazmat import PolicyError

    with pytest.raises(PolicyError, match=re.escape("pool.size")):
        parse_policy({"pool": {"size": -1}})
    with pytest.raises(PolicyError, match=re.escape("pool.prewarm")):
        parse_policy({"pool": {"prewarm": ["cobol"]}})
    with pytest.raises(PolicyError, match=re.escape("pool.sise: unknown key")):
        parse_policy({"pool": {"sise": 2}})
    policy = parse_policy({"pool": {"size": 3, "max_age_s": 60, "prewarm": ["py", "js"]}})
    assert policy.pool.size == 3 and policy.pool.prewarm == ("python", "javascript")
