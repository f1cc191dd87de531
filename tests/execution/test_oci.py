"""The direct OCI tier's own behaviour (backends/oci.py), under runc and runsc: no daemon in
the path of a run, the settings read back from the kernel, uids of its own, what a dead process
left reaped, root file systems exported once. The execution, abuse and red-team suites run
against the tier through the `sandbox` fixture (modules marked `oci`)."""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import pytest

from hazmat import Outcome, Policy, Sandbox
from hazmat._exceptions import InfraError, SettingsMismatch
from hazmat.backends import oci
from hazmat.backends.base import Job, Program, Spec
from hazmat.backends.engine import Engine
from hazmat.backends.oci import OCI_UID_BASE, OciBackend, OciStarted
from hazmat.backends.oci_rootfs import RootFs
from hazmat.backends.uids import Uids
from hazmat.languages import get_language
from hazmat.policy import PRESETS, Runtime, TrustLevel

pytestmark = pytest.mark.docker
STRICT = PRESETS["strict"]


def _spec(runtime: str) -> Spec:
    return Spec.of("python", get_language("python").image, Runtime(runtime), STRICT)


def _job(runtime: str, code: str) -> Job:
    python = get_language("python")
    program = Program({"main.py": textwrap.dedent(code).encode()}, [], b"", 1 << 20)
    return Job(python, python.image, STRICT, Runtime(runtime), TrustLevel.UNTRUSTED, program)


def _state(backend: OciBackend, runtime: str, cid: str) -> subprocess.CompletedProcess[bytes]:
    command = backend._runtime_command(Runtime(runtime))
    return subprocess.run([*command, "state", cid], capture_output=True, check=False)


def test_a_run_needs_no_engine_once_the_image_is_prepared(
    engine: Engine, runtime: str, tmp_path: Path
) -> None:
    """The engine given to the tier answers nothing (a socket nobody listens on): only the
    root file system's preparation, done here beforehand, ever needed it."""
    dead = Engine(base_url=f"unix://{tmp_path / 'nobody.sock'}")
    backend = OciBackend(dead)
    backend.rootfs = RootFs(engine)
    backend.rootfs.path(get_language("python").image)  # prepared (or found) with the engine
    try:
        report = backend.execute(_job(runtime, "import os; print('ran', os.getuid())"))
    finally:
        backend.close()
    assert report.exit_code == 0, report
    assert report.stdout.decode().split()[0] == "ran"
    assert int(report.stdout.split()[1]) in Uids(OCI_UID_BASE)
    assert not (tmp_path / "nobody.sock").exists()  # nothing was ever there to answer


class _Wider(OciBackend):
    """A tier whose bundles ask for more than the policy allows."""

    def bundle(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        config = super().bundle(*args, **kwargs)
        config["process"]["capabilities"]["bounding"].append("CAP_NET_RAW")
        config["process"]["capabilities"]["effective"].append("CAP_NET_RAW")
        config["process"]["capabilities"]["permitted"].append("CAP_NET_RAW")
        config["process"]["noNewPrivileges"] = False
        config["linux"]["resources"]["memory"] = {"limit": 1 << 30, "swap": 1 << 30}
        config["linux"]["resources"]["pids"] = {"limit": 4096}
        return config


def test_a_sandbox_that_differs_from_the_policy_takes_no_job(engine: Engine, runtime: str) -> None:
    backend = _Wider(engine)
    try:
        with pytest.raises(SettingsMismatch) as caught:
            backend.start(_spec(runtime), lifetime_s=60)
        bundles = list((backend.run_dir / "bundles").glob("*"))
    finally:
        backend.close()
    said = "; ".join(caught.value.problems)
    assert "cgroup memory 1073741824" in said and "cgroup pids 4096" in said, said
    if runtime == "runc":  # read from the kernel: the process itself
        assert "CapEff" in said and "no_new_privs '0'" in said, said
    else:  # gVisor's sandbox: what the runtime holds
        assert "capabilities" in said and "no_new_privileges" in said, said
    assert not [b for b in bundles if b.name in said]  # removed at once


def test_live_sandboxes_never_share_a_uid(engine: Engine, runtime: str) -> None:
    mine, other = OciBackend(engine), OciBackend(engine)
    started: list[OciStarted] = []
    try:
        started = [mine.start(_spec(runtime), lifetime_s=60) for _ in range(3)]
        uids = {s.uid for s in started}
        assert len(uids) == 3 and all(uid in Uids(OCI_UID_BASE) for uid in uids)
        # another process whose bookkeeping can only pick a uid taken here: the claim file
        # (created exclusively) refuses it every time
        other.uids = Uids(base=started[0].uid, count=1)
        with pytest.raises(InfraError, match="no free sandbox uid"):
            other.start(_spec(runtime), lifetime_s=60)
    finally:
        for one in started:
            mine.discard(one)
        mine.close()
        other.close()
    assert not any((mine.run_dir / "uids" / str(uid)).exists() for uid in uids)


def test_what_a_dead_process_left_is_reaped(engine: Engine, runtime: str) -> None:
    """A sandbox whose owner is gone (its annotations name a process that no longer runs)
    is killed and deleted by any tier's reaper, with its bundle, cgroup and uid claim."""
    backend = OciBackend(engine)
    started = backend.start(_spec(runtime), lifetime_s=60)
    assert started.bundle is not None and started.cgroup is not None
    config_path = started.bundle / "config.json"
    config = json.loads(config_path.read_text())
    config["annotations"]["hazmat.owner"] = (
        config["annotations"]["hazmat.owner"].rsplit(":")[0] + ":999999999"
    )
    config["annotations"]["hazmat.owner_start"] = "0"
    config_path.write_text(json.dumps(config))
    reaper = OciBackend(engine)
    try:
        assert started.cid in reaper.reap()
        assert _state(reaper, runtime, started.cid).returncode != 0  # the runtime has none
        assert not started.bundle.exists()
        assert not (reaper.run_dir / "uids" / str(started.uid)).exists()
        assert not started.cgroup.memory.exists()
    finally:
        backend.discard(started)
        backend.close()
        reaper.close()


def test_a_runtime_kill_that_fails_still_ends_the_sandbox(
    engine: Engine, runtime: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`runc|runsc kill` that does not answer: discard still ends the runtime process (after
    its wait times out), deletes the sandbox and frees its uid, and raises nothing."""
    real_run = subprocess.run

    def run(argv: list[str], *args: Any, **kwargs: Any) -> Any:
        if "kill" in argv:
            raise subprocess.TimeoutExpired(argv, 30)
        return real_run(argv, *args, **kwargs)

    backend = OciBackend(engine)
    started = backend.start(_spec(runtime), lifetime_s=60)
    monkeypatch.setattr(oci, "_KILL_TIMEOUT_S", 2.0)
    monkeypatch.setattr(subprocess, "run", run)
    try:
        backend.discard(started)
    finally:
        monkeypatch.undo()
        backend.close()
    assert started.process is not None and started.process.returncode is not None
    assert started.bundle is not None and not started.bundle.exists()
    assert not (backend.run_dir / "uids" / str(started.uid)).exists()
    assert _state(backend, runtime, started.cid).returncode != 0  # the runtime has none


class _DeleteFailsOnce(OciBackend):
    """A tier whose first removal of a sandbox does not answer in time."""

    failed = False

    def _delete(self, command: list[str], cid: str, bundle: Path) -> None:
        if not self.failed:
            self.failed = True
            raise subprocess.TimeoutExpired([*command, "delete", cid], 30)
        super()._delete(command, cid, bundle)


def test_a_sandbox_whose_removal_failed_is_removed_when_its_backend_closes(
    engine: Engine, runtime: str
) -> None:
    backend = _DeleteFailsOnce(engine)
    started = backend.start(_spec(runtime), lifetime_s=60)
    assert started.bundle is not None
    try:
        with pytest.raises(subprocess.TimeoutExpired):
            backend.discard(started)
        assert started.bundle.exists()  # not forgotten: still the backend's to remove
    finally:
        backend.close()
    assert started.process is not None and started.process.returncode is not None
    assert not started.bundle.exists()
    assert not (backend.run_dir / "uids" / str(started.uid)).exists()
    assert _state(backend, runtime, started.cid).returncode != 0


def test_root_file_systems_are_exported_once_per_image_id(
    engine: Engine, tmp_path: Path, python_image: str
) -> None:
    rootfs = RootFs(engine, tmp_path)
    root = rootfs.path(python_image)
    assert (root / "usr" / "bin").is_dir() and (root.parent / "ready").is_file()
    image_id = engine.api.inspect_image(python_image)["Id"]
    assert (root.parent / "ready").read_text().strip() == image_id
    assert RootFs(engine, tmp_path).path(python_image) == root  # found, not exported again
    assert [p.name for p in rootfs.prepared()] == [root.parent.name]
    # a preparation that died half-way is never used, and is redone
    (root.parent / "ready").unlink()
    again = RootFs(engine, tmp_path).path(python_image)
    assert again == root and (root.parent / "ready").is_file()


def test_the_policy_chooses_the_tier(python_image: str) -> None:
    from hazmat import parse_policy

    policy = parse_policy({"backend": "oci", "pool": {"size": 0}})
    with Sandbox(policy) as sb:
        assert isinstance(sb.backend, OciBackend)
        result = sb.run("print('tier')", trust="trusted")
    assert result.outcome is Outcome.OK and result.stdout == "tier\n", result
    assert result.container_id is not None and result.container_id.startswith("hazmat-")
    with Sandbox(Policy(), pool=False) as sb:
        assert not isinstance(sb.backend, OciBackend)


def test_a_session_keeps_its_state_on_the_tier(runtime: str) -> None:
    """A session's one sandbox, kept between calls (backends/session.py over the tier)."""
    from hazmat import parse_policy

    policy = parse_policy({"backend": "oci", "pool": {"size": 0}})
    with Sandbox(policy) as sb, sb.session("python", runtime=runtime) as session:
        first = session.run("x = 41\nopen('f', 'w').write('hi')")
        second = session.run("print(x + 1, open('f').read())")
        kept = second.container_id
    assert first.outcome is Outcome.OK, first
    assert second.stdout == "42 hi\n", second
    assert kept is not None and kept == first.container_id and kept.startswith("hazmat-")
    assert not (OciBackend().run_dir / "bundles" / kept).exists()  # ended with the session
