"""The direct OCI tier's own behaviour (backends/oci/driver.py), under runc and runsc: no daemon in
the path of a run, the settings read back from the kernel, uids of its own, what a dead process
left reaped, root file systems exported once. The execution, abuse and red-team suites run
against the tier through the `sandbox` fixture (modules marked `oci`)."""

from __future__ import annotations

import fcntl
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from hazmat import Outcome, Sandbox
from hazmat._exceptions import InfraError, SettingsMismatch
from hazmat.backends.base import Job, Program, Spec
from hazmat.backends.container.engine import Engine
from hazmat.backends.container.uids import Uids
from hazmat.backends.oci import driver as oci_driver
from hazmat.backends.oci import rootfs as oci_rootfs
from hazmat.backends.oci import wait as oci_wait
from hazmat.backends.oci.driver import OCI_UID_BASE, OciBackend, OciStarted, runtime_binary
from hazmat.backends.oci.rootfs import RootFs
from hazmat.backends.oci.spec import bundle_config
from hazmat.languages import get_language
from hazmat.policy import PRESETS, Runtime, TrustLevel

pytestmark = [pytest.mark.docker, pytest.mark.matrix]
STRICT = PRESETS["strict"]


def _spec(runtime: str) -> Spec:
    return Spec.of("python", get_language("python").image, Runtime(runtime), STRICT)


def _job(runtime: str, code: str) -> Job:
    python = get_language("python")
    program = Program({"main.py": textwrap.dedent(code).encode()}, [], b"", 1 << 20)
    return Job(python, python.image, STRICT, Runtime(runtime), TrustLevel.UNTRUSTED, program)


def _state(backend: OciBackend, runtime: str, cid: str) -> subprocess.CompletedProcess[bytes]:
    command = backend.driver.runtime_command(Runtime(runtime))
    return subprocess.run([*command, "state", cid], capture_output=True, check=False)


def test_a_run_needs_no_engine_once_the_image_is_prepared(
    engine: Engine, runtime: str, tmp_path: Path
) -> None:
    """The engine given to the tier answers nothing (a socket nobody listens on): only the
    root file system's preparation, done here beforehand, ever needed it."""
    dead = Engine(base_url=f"unix://{tmp_path / 'nobody.sock'}")
    backend = OciBackend(dead)
    backend.driver.rootfs = RootFs(engine)
    backend.driver.rootfs.path(get_language("python").image)  # prepared (or found) with the engine
    try:
        report = backend.execute(_job(runtime, "import os; print('ran', os.getuid())"))
    finally:
        backend.close()
    assert report.exit_code == 0, report
    assert report.stdout.decode().split()[0] == "ran"
    assert int(report.stdout.split()[1]) in Uids(OCI_UID_BASE)
    assert not (tmp_path / "nobody.sock").exists()  # nothing was ever there to answer


def _wider(*args: Any, **kwargs: Any) -> dict[str, Any]:
    """A bundle that asks for more than the policy allows."""
    config = bundle_config(*args, **kwargs)
    config["process"]["capabilities"]["bounding"].append("CAP_NET_RAW")
    config["process"]["capabilities"]["effective"].append("CAP_NET_RAW")
    config["process"]["capabilities"]["permitted"].append("CAP_NET_RAW")
    config["process"]["noNewPrivileges"] = False
    config["linux"]["resources"]["memory"] = {"limit": 1 << 30, "swap": 1 << 30}
    config["linux"]["resources"]["pids"] = {"limit": 4096}
    return config


def test_a_sandbox_that_differs_from_the_policy_takes_no_job(engine: Engine, runtime: str) -> None:
    backend = OciBackend(engine, bundle=_wider)
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
        other.driver.uids = Uids(base=started[0].uid, count=1)
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


def test_a_sandbox_that_ends_by_itself_keeps_its_memory_cgroup_until_discarded(
    engine: Engine, runtime: str
) -> None:
    """What the kernel's OOM killer does to a sandbox whose first process it picks (runc's
    init or agent, gVisor's Sentry): the sandbox ends with nothing inside left to say why. Its
    memory cgroup, and so its OOM count, is still there to be read after the runtime's `run`
    has ended, and goes when the sandbox is discarded (runc `--keep`; runsc:
    backends/oci/memcg.py)."""
    backend = OciBackend(engine)
    started = backend.start(_spec(runtime), lifetime_s=60)
    assert started.bundle is not None and started.cgroup is not None
    try:
        first = int((started.bundle / "pid").read_text())
        subprocess.run(["kill", "-KILL", str(first)], check=True)
        assert started.ended.wait(30)
        assert started.cgroup.oom_kills() == 0  # readable: the cgroup outlived its sandbox
    finally:
        backend.discard(started)
        backend.close()
    assert started.cgroup.oom_kills() is None and not started.cgroup.memory.exists()


def test_filling_the_tmpfs_past_the_memory_limit_is_the_memory_limit(runtime: str) -> None:
    """A small program that fills /tmp (a tmpfs, counted as the sandbox's memory) past the
    memory limit: the OOM killer may pick the agent or the sandbox as a whole rather than the
    program, and the run still says `memory_limit`."""
    from hazmat import parse_policy

    policy = parse_policy({"backend": "oci", "pool": {"size": 0}})
    memory = policy.settings("unknown").limits.tmpfs_mb * 5 // 8  # the tmpfs can hold more
    code = r"""
        #include <stdio.h>
        #include <string.h>
        static char block[1 << 16];
        int main(void) {
            FILE *f = fopen("/tmp/fill", "wb");
            memset(block, 1, sizeof block);
            for (;;) {
                if (fwrite(block, 1, sizeof block, f) != sizeof block) return 3;
                fflush(f);
            }
        }
    """
    with Sandbox(policy) as sb:
        result = sb.run(
            textwrap.dedent(code), "c", runtime=runtime, trust="unknown", memory_mb=memory,
            override_reason="filling the tmpfs until the memory limit is hit",
        )  # fmt: skip
    assert result.outcome is Outcome.MEMORY_LIMIT, result
    assert result.exit_code == 137


# runsc only: a kept runc sandbox (`runc run --keep`) is not killed apart; `delete --force`
# kills it (the next test fails that under both runtimes)
@pytest.mark.parametrize("runtime", ["runsc"])
def test_a_runtime_kill_that_fails_still_ends_the_sandbox(
    engine: Engine, runtime: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`runsc kill` that does not answer: discard still ends the runtime process (after
    its wait times out), deletes the sandbox and frees its uid, and raises nothing."""
    real_run = subprocess.run

    def run(argv: list[str], *args: Any, **kwargs: Any) -> Any:
        if "kill" in argv:
            raise subprocess.TimeoutExpired(argv, 30)
        return real_run(argv, *args, **kwargs)

    backend = OciBackend(engine)
    started = backend.start(_spec(runtime), lifetime_s=60)
    monkeypatch.setattr(oci_driver, "_KILL_TIMEOUT_S", 2.0)
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


class _DeleteFailsOnce:
    """Calls the runtime, but the first `delete` does not answer in time."""

    def __init__(self) -> None:
        self.failed = False

    def __call__(self, argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[bytes]:
        if "delete" in argv and not self.failed:
            self.failed = True
            raise subprocess.TimeoutExpired(argv, 30)
        return subprocess.run(argv, **kwargs)


def test_a_sandbox_whose_removal_failed_is_removed_when_its_backend_closes(
    engine: Engine, runtime: str
) -> None:
    backend = OciBackend(engine, call=_DeleteFailsOnce())
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
    assert result.tier == "oci"
    with Sandbox(parse_policy({"backend": "docker"}), pool=False) as sb:
        assert not isinstance(sb.backend, OciBackend)
        said = sb.run("print('tier')", trust="trusted")
    assert said.outcome is Outcome.OK and said.tier == "docker", said


def test_a_session_keeps_its_state_on_the_tier(runtime: str) -> None:
    """A session's one sandbox, kept between calls (backends/kept/session.py over the tier)."""
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


# -- what the tier waits for (backends/oci/wait.py), against runtimes that take their time ----
# Each runtime below is a real program put in front of the real one (HAZMAT_RUNC /
# HAZMAT_RUNSC): every command but the one it changes is the real runtime's.

_FRONT = """#!{python}
import os, subprocess, sys, time
REAL = {real!r}
args = sys.argv[1:]
if {command!r} not in args:
    os.execv(REAL, [REAL, *args])
pid_file = args[args.index("--pid-file") + 1] if "--pid-file" in args else ""
{body}
"""


def _front(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, runtime: str, body: str, command: str = "run"
) -> None:
    """Put a runtime that runs `body` for `command` in front of the real `runtime`."""
    real = runtime_binary(Runtime(runtime))
    assert real is not None
    front = tmp_path / runtime  # the runtime's own name: the tier's `_delete` goes by it
    front.write_text(
        _FRONT.format(python=sys.executable, real=str(real), command=command, body=body)
    )
    front.chmod(0o755)
    monkeypatch.setenv(f"HAZMAT_{runtime.upper()}", str(front))


# runc's `run`, slower still to write its pid file than it is (utils_linux.go writes it only
# after the container's process was let go): under another name, renamed 2 s after it came
_LATE_PID_FILE = """
args[args.index("--pid-file") + 1] = pid_file + ".late"
runtime = subprocess.Popen([REAL, *args])
while not os.path.exists(pid_file + ".late") and runtime.poll() is None:
    time.sleep(0.01)
time.sleep(2)
if runtime.poll() is None:
    os.rename(pid_file + ".late", pid_file)
sys.exit(runtime.wait())
"""


def test_the_pid_file_is_waited_for_when_the_runtime_writes_it_late(
    engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The agent says it is ready 2 s before the pid file is there: the settings are read
    once it is, and the run goes on (it was "has no pid file", CI's failures of issue 45)."""
    _front(tmp_path, monkeypatch, "runc", _LATE_PID_FILE)
    backend = OciBackend(engine)
    try:
        started = backend.start(_spec("runc"), lifetime_s=60)
        assert started.bundle is not None and started.cgroup is not None
        assert (started.bundle / "pid").is_file() and not started.ended.is_set()
        report = backend.run(started, _job("runc", "print('after the pid file')"))
        backend.discard(started)
    finally:
        backend.close()
    assert report.exit_code == 0 and report.stdout == b"after the pid file\n", report


def test_a_runtime_that_ends_without_its_pid_file_is_an_infra_error_at_once(
    engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The runtime's exit ends the wait, not the deadline (a minute here)."""
    _front(tmp_path, monkeypatch, "runc", 'print("hazmat-ready", flush=True)\nsys.exit(3)')
    monkeypatch.setattr(oci_wait, "PID_FILE_TIMEOUT_S", 60.0)
    backend = OciBackend(engine)
    try:
        with pytest.raises(InfraError) as caught:
            backend.start(_spec("runc"), lifetime_s=60)
    finally:
        backend.close()
    said = str(caught.value)
    assert type(caught.value) is InfraError and "runc ended without writing its pid file" in said
    cid = said.removeprefix("sandbox ").split(":")[0]
    assert cid.startswith("hazmat-") and not (backend.run_dir / "bundles" / cid).exists()


def test_a_pid_file_that_never_comes_is_an_infra_error_at_its_deadline(
    engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A runtime that stays (until its stdin closes) and never writes the file."""
    _front(tmp_path, monkeypatch, "runc", 'print("hazmat-ready", flush=True)\nsys.stdin.read()')
    monkeypatch.setattr(oci_wait, "PID_FILE_TIMEOUT_S", 0.5)
    backend = OciBackend(engine)
    try:
        with pytest.raises(
            InfraError, match=r"^sandbox hazmat-\w+: runc wrote no pid file .* 0.5 s"
        ):
            backend.start(_spec("runc"), lifetime_s=60)
    finally:
        backend.close()


def test_a_pid_that_is_not_the_runtimes_is_never_read_as_the_sandbox(
    engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pid file names a process that does not descend from the runtime (here this test's
    own: as a reused pid would): no settings are read from it, so no false mismatch."""
    body = 'open(pid_file, "w").write(str(os.getppid()))\nprint("hazmat-ready", flush=True)'
    _front(tmp_path, monkeypatch, "runc", body + "\nsys.stdin.read()")
    backend = OciBackend(engine)
    try:
        with pytest.raises(InfraError) as caught:
            backend.start(_spec("runc"), lifetime_s=60)
    finally:
        backend.close()
    assert type(caught.value) is InfraError, caught.value
    assert "named by the runtime's pid file, is not one of the runtime's" in str(caught.value)


# a first process that ended (not yet collected: its pid is still its own) before its
# settings were read
_ENDED_FIRST = """
child = os.fork()
if child == 0:
    os._exit(0)
os.waitid(os.P_PID, child, os.WEXITED | os.WNOWAIT)  # ended, left uncollected
open(pid_file, "w").write(str(child))
print("hazmat-ready", flush=True)
sys.stdin.read()
"""


def test_a_sandbox_that_ended_while_read_is_an_infra_error_not_a_mismatch(
    engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _front(tmp_path, monkeypatch, "runc", _ENDED_FIRST)
    backend = OciBackend(engine)
    try:
        with pytest.raises(InfraError) as caught:
            backend.start(_spec("runc"), lifetime_s=60)
    finally:
        backend.close()
    assert type(caught.value) is InfraError, caught.value  # not SettingsMismatch
    assert "ended while its settings were read" in str(caught.value)


def test_a_runtime_state_that_does_not_come_is_an_infra_error_not_a_mismatch(
    engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`runsc state` answers with an error every time: asked again until its deadline, then
    an error naming the sandbox and what runsc said (it was a settings mismatch: a security
    event for a runtime that did not answer)."""
    body = 'sys.exit("state: container is busy")'
    _front(tmp_path, monkeypatch, "runsc", body, command="state")
    monkeypatch.setattr(oci_wait, "STATE_TIMEOUT_S", 0.5)
    backend = OciBackend(engine)
    try:
        with pytest.raises(InfraError) as caught:
            backend.start(_spec("runsc"), lifetime_s=60)
    finally:
        backend.close()
    assert type(caught.value) is InfraError, caught.value
    said = str(caught.value)
    assert "`runsc state` gave no state (none in 0.5 s): state: container is busy" in said


def test_an_export_under_way_elsewhere_is_waited_for_until_a_deadline(
    engine: Engine, tmp_path: Path, python_image: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process holds the image's lock (its export is under way): waited for, then an
    error naming the image and the lock, with nothing half-made left."""
    rootfs = RootFs(engine, tmp_path)
    name = str(engine.api.inspect_image(python_image)["Id"]).split(":")[-1][:24]
    rootfs.base.mkdir(parents=True)
    monkeypatch.setattr(oci_rootfs, "EXPORT_WAIT_S", 0.5)
    with open(rootfs.base / f".{name}.lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        wanted = rf"^{python_image}: another process .*/\.{name}\.lock\)$"
        with pytest.raises(InfraError, match=wanted):
            rootfs.path(python_image)
    assert not (rootfs.base / name).exists() and rootfs.prepared() == []


def test_a_runtime_that_ends_before_the_ready_line_is_an_infra_error_at_once(
    engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The relay's stream ends with the runtime: the ready wait ends then, with what it said."""
    _front(tmp_path, monkeypatch, "runc", 'sys.exit("runc: cannot start the container")')
    backend = OciBackend(engine)
    try:
        with pytest.raises(InfraError) as caught:
            backend.start(_spec("runc"), lifetime_s=60)
    finally:
        backend.close()
    said = str(caught.value)
    assert said.startswith("sandbox hazmat-") and "did not get ready: the container ended" in said
    assert said.endswith("it said: runc: cannot start the container"), said


# runc's `run` whose process stays after the real runtime has ended (until its stdin closes)
_STAYS = """
code = subprocess.call([REAL, *args])
sys.stdin.read()
sys.exit(code)
"""


def test_a_runtime_that_does_not_end_after_its_run_is_killed_then_an_infra_error(
    engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After a run, the runtime process's end is waited for; the sandbox is killed when it
    does not come, and an error names the sandbox when it does not come even then."""
    _front(tmp_path, monkeypatch, "runc", _STAYS)
    backend = OciBackend(engine)
    started = backend.start(_spec("runc"), lifetime_s=60)
    monkeypatch.setattr(oci_driver, "_KILL_TIMEOUT_S", 0.5)
    try:
        with pytest.raises(InfraError, match=rf"^sandbox {started.cid}: runc did not end in 1 s"):
            backend.driver.final_state(started, _job("runc", ""))
    finally:
        backend.discard(started)
        backend.close()
    assert started.ended.is_set() and not (started.bundle and started.bundle.exists())
