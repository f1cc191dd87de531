"""The direct OCI tier's parts that need no runtime: the relay's framing, the bundle's
config.json, the seccomp profile in the spec's terms, the settings check on a made-up /proc,
the waits on what a runtime writes (with real files and processes standing in for it), and
the policy key that chooses the tier. tests/execution/test_oci.py runs the real thing."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import struct
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from hazmat import Policy, PolicyError, Sandbox, parse_policy
from hazmat._exceptions import InfraError
from hazmat.backends.agent import compiled
from hazmat.backends.agent.compiled import AGENT_PATH
from hazmat.backends.base import Spec
from hazmat.backends.container.seccomp import for_oci, load_profile
from hazmat.backends.container.settings_check import MASKED_PATHS
from hazmat.backends.oci import prerequisites
from hazmat.backends.oci.memcg import (
    make_memory_cgroup,
    memory_cgroup,
    remove_memory_cgroup,
    runtime_cgroup,
)
from hazmat.backends.oci.prerequisites import Choice, choice, missing
from hazmat.backends.oci.readback import check_bundle, check_kernel
from hazmat.backends.oci.relay import Relay
from hazmat.backends.oci.spec import bundle_config
from hazmat.backends.oci.wait import FirstProcess, runtime_state, wait_for_pid
from hazmat.languages import get_language
from hazmat.policy import PRESETS, Runtime

STRICT = PRESETS["strict"]
ALLOW = "SCMP_ACT_ALLOW"
UID = 1_500_070_000


def _spec(runtime: Runtime = Runtime.RUNC, egress: str | None = None) -> Spec:
    return Spec.of("python", get_language("python").image, runtime, STRICT, egress)


def _frames(data: bytes) -> list[tuple[int, bytes]]:
    out = []
    while data:
        stream, size = struct.unpack(">BxxxL", data[:8])
        out.append((stream, data[8 : 8 + size]))
        data = data[8 + size :]
    return out


def test_the_relay_frames_output_and_passes_stdin_and_its_end() -> None:
    stdin_r, stdin_w = os.pipe()
    stdout_r, stdout_w = os.pipe()
    stderr_r, stderr_w = os.pipe()
    relay = Relay(stdin_w, stdout_r, stderr_r)
    try:
        relay.sock.sendall(b"job\n")
        relay.sock.shutdown(1)  # the host's EOF closes the sandbox's stdin
        with os.fdopen(stdin_r, "rb") as sandbox_in:
            assert sandbox_in.read() == b"job\n"
        # a sandbox writing a frame header of its own gets it framed as its data
        forged = struct.pack(">BxxxL", 2, 3) + b"abc"
        os.write(stdout_w, forged)
        os.close(stdout_w)
        os.write(stderr_w, b"oops")
        os.close(stderr_w)
        got = b""
        relay.sock.settimeout(10)
        while chunk := relay.sock.recv(65536):
            got += chunk
    finally:
        relay.close()
    frames = _frames(got)
    assert (1, forged) in frames and (2, b"oops") in frames
    assert b"".join(d for s, d in frames if s == 1) == forged


def test_the_bundle_asks_for_every_hardening_setting(tmp_path: Path) -> None:
    profile = json.dumps(
        {
            "defaultAction": "SCMP_ACT_ERRNO",
            "syscalls": [{"names": ["read"], "action": ALLOW}],
        }
    )
    config = bundle_config(
        _spec(), UID, rootfs=tmp_path, init=Path("/usr/bin/tini"), cgroup="/hazmat/x",
        annotations={"hazmat": "1"}, seccomp=profile,
    )  # fmt: skip
    process, linux = config["process"], config["linux"]
    assert process["user"] == {"uid": 0, "gid": 0}
    assert process["capabilities"]["bounding"] == sorted(
        ["CAP_KILL", "CAP_SETGID", "CAP_SETPCAP", "CAP_SETUID"]
    )
    assert "inheritable" not in process["capabilities"] and "ambient" not in process["capabilities"]
    assert process["noNewPrivileges"] is True and process["oomScoreAdj"] == 1000
    assert config["root"] == {"path": str(tmp_path), "readonly": True}
    assert {ns["type"] for ns in linux["namespaces"]} == {
        "pid", "network", "ipc", "uts", "mount", "cgroup"
    }  # fmt: skip
    assert linux["resources"]["memory"]["limit"] == linux["resources"]["memory"]["swap"]
    assert linux["resources"]["pids"]["limit"] == STRICT.pids
    assert linux["seccomp"]["defaultAction"] == "SCMP_ACT_ERRNO"
    assert set(MASKED_PATHS) <= set(linux["maskedPaths"])
    work = next(m for m in config["mounts"] if m["destination"] == "/work")
    assert f"uid={UID}" in work["options"] and "noexec" in work["options"]
    assert not [m for m in config["mounts"] if m["destination"] == "/run/hazmat-egress"]
    assert f"HAZMAT_UID={UID}" in process["env"]
    assert check_bundle(config, _spec(), UID) == []


def test_under_gvisor_the_bundle_has_no_seccomp_and_an_egress_run_its_socket(
    tmp_path: Path,
) -> None:
    spec = _spec(Runtime.RUNSC, egress=str(tmp_path))
    config = bundle_config(
        spec, UID, rootfs=tmp_path, init=Path("/usr/bin/tini"), cgroup="/hazmat/x",
        annotations={}, seccomp='{"defaultAction": "SCMP_ACT_ERRNO", "syscalls": []}',
    )  # fmt: skip
    assert "seccomp" not in config["linux"]  # gVisor filters the Sentry itself
    egress = [m for m in config["mounts"] if m["destination"] == "/run/hazmat-egress"]
    assert egress and "ro" in egress[0]["options"] and egress[0]["source"] == str(tmp_path)
    assert config["linux"]["resources"]["pids"]["limit"] > STRICT.pids  # the Sentry's own


def test_check_bundle_names_each_difference(tmp_path: Path) -> None:
    config = bundle_config(
        _spec(), UID, rootfs=tmp_path, init=Path("/usr/bin/tini"), cgroup="/x",
        annotations={}, seccomp=None,
    )  # fmt: skip
    config["process"]["capabilities"]["bounding"].append("CAP_SYS_ADMIN")
    config["process"]["noNewPrivileges"] = False
    config["root"]["readonly"] = False
    config["linux"]["namespaces"] = [{"type": "pid"}]
    said = "; ".join(check_bundle(config, _spec(), UID))
    for part in ("CAP_SYS_ADMIN", "no_new_privileges", "writable", "network"):
        assert part in said, said


def test_the_profile_in_the_specs_terms_keeps_the_rules_that_apply_here() -> None:
    profile = {
        "defaultAction": "SCMP_ACT_ERRNO",
        "defaultErrnoRet": 1,
        "archMap": [
            {"architecture": "SCMP_ARCH_X86_64", "subArchitectures": ["SCMP_ARCH_X86"]},
            {"architecture": "SCMP_ARCH_AARCH64", "subArchitectures": ["SCMP_ARCH_ARM"]},
        ],
        "syscalls": [
            {"names": ["read"], "action": ALLOW},
            {"names": ["bpf"], "action": ALLOW, "includes": {"caps": ["CAP_SYS_ADMIN"]}},
            {"names": ["arch_prctl"], "action": ALLOW, "includes": {"arches": ["amd64"]}},
            {"names": ["new"], "action": ALLOW, "includes": {"minKernel": "9.1"}},
            {"names": ["clone"], "action": ALLOW, "excludes": {"caps": ["CAP_KILL"]}},
            {"names": ["x"], "action": "SCMP_ACT_ERRNO", "errnoRet": 38},
        ],
    }  # fmt: skip
    oci = for_oci(json.dumps(profile), frozenset({"CAP_KILL"}), "x86_64", "6.1.0-13-amd64")
    assert oci["architectures"] == ["SCMP_ARCH_X86_64"]  # the native ABI alone
    assert oci["defaultErrnoRet"] == 1
    assert [r["names"] for r in oci["syscalls"]] == [["read"], ["arch_prctl"], ["x"]]
    assert oci["syscalls"][-1]["errnoRet"] == 38
    arm = for_oci(json.dumps(profile), frozenset(), "aarch64", "9.2.0")
    assert [r["names"] for r in arm["syscalls"]] == [["read"], ["new"], ["clone"], ["x"]]


def _fake_proc(tmp_path: Path, status: dict[str, str]) -> Path:
    """A /proc with the sandbox's process 42 and this process's namespaces as the host's."""
    proc = tmp_path / "proc"
    (proc / "42" / "ns").mkdir(parents=True)
    (proc / "42" / "net").mkdir()
    (proc / "self" / "ns").mkdir(parents=True)
    (proc / "42" / "status").write_text("".join(f"{k}:\t{v}\n" for k, v in status.items()))
    for kind in ("pid", "net", "ipc", "uts", "mnt", "cgroup"):
        (proc / "self" / "ns" / kind).symlink_to(f"{kind}:[1]")
        (proc / "42" / "ns" / kind).symlink_to(f"{kind}:[1]")  # the host's: wrong
    (proc / "42" / "net" / "dev").write_text("h1\nh2\n    lo: 0\n  eth0: 0\n")
    (proc / "42" / "mountinfo").write_text("1 0 8:1 / / rw,relatime - ext4 /dev/sda1 rw\n")
    return proc


def test_check_kernel_reads_what_the_kernel_applied(tmp_path: Path) -> None:
    proc = _fake_proc(
        tmp_path,
        {"Uid": "0 0 0 0", "CapEff": "000001ffffffffff", "CapPrm": "00000000000001e0",
         "CapBnd": "00000000000001e0", "NoNewPrivs": "0", "Seccomp": "0"},
    )  # fmt: skip
    said = "; ".join(check_kernel(42, _spec(), UID, proc))
    for part in (
        "CapEff", "no_new_privs '0'", "seccomp mode '0'", "the net namespace is the host's",
        "eth0", "root file system is writable", "/work is not a tmpfs", "rlimit nofile",
        "oom_score_adj",
    ):  # fmt: skip
        assert part in said, said
    assert "CapPrm" not in said and "CapBnd" not in said  # the agent's four: right


def test_a_masked_path_behind_a_link_is_found_where_runc_masked_it(tmp_path: Path) -> None:
    """`/sys/class/dmi/id` is a link to `/sys/devices/virtual/dmi/id` on every host with DMI
    tables (these machines have none): runc masks the link's target, and the mount table
    lists the target. Read at the link's own path, every runc sandbox was refused there."""
    proc = _fake_proc(tmp_path, {})
    root = proc / "42" / "root"
    (root / "sys" / "devices" / "virtual" / "dmi" / "id").mkdir(parents=True)
    (root / "sys" / "class" / "dmi").mkdir(parents=True)
    (root / "sys" / "class" / "dmi" / "id").symlink_to("../../devices/virtual/dmi/id")
    mountinfo = proc / "42" / "mountinfo"
    said = "; ".join(check_kernel(42, _spec(), UID, proc))
    assert "/sys/class/dmi/id is not masked" in said and "virtual/dmi/id is not masked" in said
    masked = "2 1 0:5 / /sys/devices/virtual/dmi/id ro,relatime - tmpfs tmpfs ro\n"
    mountinfo.write_text(mountinfo.read_text() + masked)
    said = "; ".join(check_kernel(42, _spec(), UID, proc))
    assert "dmi" not in said, said


def test_the_policy_chooses_the_tier_by_a_key_it_checks() -> None:
    assert parse_policy({"backend": "oci"}).backend == "oci"
    assert parse_policy({}).backend == "auto" and Policy().backend == "auto"
    with pytest.raises(PolicyError, match=r"backend: expected one of auto, docker, oci, got 'kvm'"):
        parse_policy({"backend": "kvm"})
    with pytest.raises(PolicyError, match="backend"):
        parse_policy({"backend": ["oci"]})


@pytest.fixture
def looked_again() -> Iterator[None]:
    """`missing` looks once per process: each test looks afresh, and leaves no answer."""
    missing.cache_clear()
    yield
    missing.cache_clear()


def test_auto_is_the_oci_tier_where_its_prerequisites_hold(
    looked_again: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(prerequisites, "missing", lambda: ())
    assert choice("auto") == Choice("oci", "auto: the direct OCI tier's prerequisites hold")
    with Sandbox(Policy(), pool=False) as sandbox:  # nothing is started: engines are lazy
        assert sandbox.backend.tier == "oci"
    monkeypatch.setattr(
        prerequisites, "missing", lambda: ("not running as root", "no runsc binary")
    )
    said = choice("auto")
    assert said.tier == "docker"
    assert said.why == (
        "auto: the direct OCI tier is not usable here (not running as root; no runsc binary)"
    )
    with Sandbox(Policy(), pool=False) as sandbox:
        assert sandbox.backend.tier == "docker"
    # a policy that names a tier gets it, whatever this machine has
    assert choice("oci").tier == "oci" and choice("docker").tier == "docker"
    with Sandbox(parse_policy({"backend": "oci"}), pool=False) as sandbox:
        assert sandbox.backend.tier == "oci"


def test_what_the_oci_tier_lacks_is_named(
    looked_again: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    monkeypatch.setenv("HAZMAT_RUNC", "/nonexistent/runc")
    monkeypatch.setenv("HAZMAT_RUNSC", "/nonexistent/runsc")
    found = missing()
    assert found[:3] == ("not running as root", "no runc binary", "no runsc binary"), found
    monkeypatch.delenv("HAZMAT_RUNC")
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    missing.cache_clear()
    assert missing()[0] == "no runsc binary"


def test_no_seccomp_base_profile_keeps_auto_off_the_oci_tier(
    looked_again: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without the base profile the Docker tier falls back on the engine's built-in one; the
    OCI tier has none, and its readback refused every runc sandbox (seen in the cgroup v2
    lab's guest before the profile was put there, while `auto` chose the tier)."""
    monkeypatch.setenv("HAZMAT_SECCOMP_BASE", str(tmp_path / "absent.json"))
    load_profile.cache_clear()
    try:
        assert prerequisites.seccomp_problem() == (
            "no seccomp base profile (scripts/ensure-engine.sh installs it)"
        )
        (tmp_path / "absent.json").write_text('{"defaultAction": "SCMP_ACT_ALLOW"}')
        load_profile.cache_clear()
        said = prerequisites.seccomp_problem()
        assert said is not None and said.startswith("an unusable seccomp base profile")
        assert said in missing()
    finally:
        load_profile.cache_clear()


def test_a_cgroup_problem_comes_with_its_own_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "cgroup.controllers").write_text("cpu memory pids\n")
    (tmp_path / "cgroup.subtree_control").write_text("memory\n")  # cpu, pids not delegated
    monkeypatch.setattr(prerequisites, "CGROUP_ROOT", tmp_path)
    problem = prerequisites.cgroup_problem()
    assert problem is not None and problem.fix == prerequisites.DELEGATE
    assert problem.why == f"cgroup v2 without pids, cpu delegated at {tmp_path}"
    monkeypatch.setattr(prerequisites, "CGROUP_ROOT", tmp_path / "missing")
    problem = prerequisites.cgroup_problem()  # no cgroup.controllers: v1, which is not there
    assert problem is not None and problem.fix == prerequisites.AS_ROOT
    assert problem.why.startswith("cannot create a cgroup")


def test_a_pid_file_being_written_is_not_yet_a_pid(tmp_path: Path) -> None:
    """runsc writes the file in place: an empty one is not a pid. After the runtime ended, one
    more look is taken (it may have written the file just before)."""
    ended = threading.Event()
    ended.set()
    pid_file = tmp_path / "pid"
    pid_file.write_text("")
    with pytest.raises(InfraError, match=r"^sandbox s: runc ended without writing its pid file"):
        wait_for_pid(pid_file, ended, "s", "runc", timeout_s=60)
    pid_file.write_text("1234")
    assert wait_for_pid(pid_file, ended, "s", "runc", timeout_s=60) == 1234


def test_the_first_process_is_held_until_it_ends() -> None:
    """A process of this one's (standing in for the runtime's child): held, and its end seen
    once it has ended; a process not this one's is refused."""
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                             stdin=subprocess.PIPE)  # fmt: skip
    held = FirstProcess(child.pid, os.getpid(), "s")
    try:
        assert not held.ended()
        assert child.stdin is not None
        child.stdin.close()
        child.wait()
        assert held.ended()
    finally:
        held.close()
    with pytest.raises(InfraError, match=r"^sandbox s: process 1, .* not one of the runtime's"):
        FirstProcess(1, os.getpid(), "s")


def test_the_runtimes_state_is_asked_again_until_it_answers(tmp_path: Path) -> None:
    """A runtime whose `state` fails twice, then answers (it counts its calls in a file)."""
    calls = tmp_path / "calls"
    runtime = tmp_path / "runsc"
    runtime.write_text(
        f"#!{sys.executable}\n"
        "import json, pathlib, sys\n"
        f"calls = pathlib.Path({str(calls)!r})\n"
        "calls.write_text(calls.read_text() + 'x' if calls.exists() else 'x')\n"
        "if len(calls.read_text()) < 3:\n"
        "    sys.exit('busy')\n"
        "print(json.dumps({'id': sys.argv[-1], 'bundle': '/b', 'status': 'running'}))\n"
    )
    runtime.chmod(0o755)
    state = runtime_state([str(runtime)], "s", threading.Event(), timeout_s=60)
    assert state == {"id": "s", "bundle": "/b", "status": "running"}
    assert calls.read_text() == "xxx"


def test_a_uid_claim_is_removed_only_by_the_sandbox_that_holds_it(tmp_path: Path) -> None:
    from hazmat.backends.oci.driver import _unclaim

    claim = tmp_path / "1500000007"
    claim.write_text("hazmat-new")  # the uid went to a new sandbox after the old was reaped
    _unclaim(claim, "hazmat-old")
    assert claim.read_text() == "hazmat-new"
    _unclaim(claim, "hazmat-new")
    assert not claim.exists()
    claim.write_text("")  # an older hazmat's claim names nobody
    _unclaim(claim, "hazmat-old")
    assert not claim.exists()
    _unclaim(claim, "hazmat-old")  # already gone: nothing to do


def test_a_single_run_and_a_session_get_the_compiled_agent_mounted(tmp_path: Path) -> None:
    agent = tmp_path / "hazmat-agent"
    agent.write_bytes(b"")
    parts = {"rootfs": tmp_path, "init": Path("/usr/bin/tini"), "cgroup": "/hazmat/x"}
    single = bundle_config(_spec(), UID, annotations={}, seccomp=None, agent=agent, **parts)
    assert single["process"]["args"][-1] == AGENT_PATH
    [mount] = [m for m in single["mounts"] if m["destination"] == AGENT_PATH]
    assert mount["source"] == str(agent) and {"ro", "nosuid", "nodev"} <= set(mount["options"])
    session = dataclasses.replace(_spec(), session=True)
    kept = bundle_config(session, UID, annotations={}, seccomp=None, agent=agent, **parts)
    assert kept["process"]["args"][-2:] == [AGENT_PATH, "session"]
    assert [m["source"] for m in kept["mounts"] if m["destination"] == AGENT_PATH] == [str(agent)]
    shell = bundle_config(_spec(), UID, annotations={}, seccomp=None, agent=None, **parts)
    assert shell["process"]["args"][-3:-1] == ["/bin/sh", "-c"]


def test_the_compiled_agent_is_built_once_per_source_or_says_why_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Built with this host's gcc into the folder, under the source's digest, and again if it
    was removed since; without a C compiler, None and the reason (the shell agent runs)."""
    if not any(shutil.which(name) for name in compiled.COMPILERS):
        pytest.fail("no C compiler on this machine: `make test` installs gcc")
    compiled._build.cache_clear()
    binary = compiled.compiled_agent(tmp_path)
    assert binary is not None and binary.parent.parent == tmp_path / "agent"
    assert os.access(binary, os.X_OK) and compiled.why_not_compiled(tmp_path) is None
    said = subprocess.run([str(binary)], capture_output=True, env={}, check=False)
    assert said.returncode == 125 and b"hazmat-agent: no uid for the program" in said.stderr
    shutil.rmtree(tmp_path / "agent")  # a cleared cache, under a process that built it before
    assert compiled.compiled_agent(tmp_path) == binary and os.access(binary, os.X_OK)
    monkeypatch.setenv("PATH", str(tmp_path / "nothing-here"))
    compiled._build.cache_clear()
    assert compiled.compiled_agent(tmp_path / "elsewhere") is None
    assert "no C compiler" in (compiled.why_not_compiled(tmp_path / "elsewhere") or "")
    compiled._build.cache_clear()


# --- a gVisor sandbox's memory cgroup, hazmat's own (backends/oci/memcg.py) ----------------


def test_runsc_gets_a_cgroup_of_its_own_inside_hazmats_on_a_cgroup_v2_host(tmp_path: Path) -> None:
    """v1: runsc takes hazmat's memory cgroup as it is; v2: one cgroup holds every controller,
    so runsc makes (and limits) its own inside hazmat's, whose memory.events outlives it."""
    v1, v2, none = tmp_path / "v1", tmp_path / "v2", tmp_path / "none"
    (v1 / "memory").mkdir(parents=True)
    v2.mkdir()
    (v2 / "cgroup.controllers").write_text("cpu memory pids\n")
    none.mkdir()
    assert runtime_cgroup("/hazmat/box", v1) == "/hazmat/box"
    assert memory_cgroup("/hazmat/box", v1) == v1 / "memory" / "hazmat" / "box"
    assert runtime_cgroup("/hazmat/box", v2) == "/hazmat/box/sandbox"
    assert memory_cgroup("/hazmat/box", v2) == v2 / "hazmat" / "box"
    assert runtime_cgroup("/hazmat/box", none) == "/hazmat/box"
    assert memory_cgroup("/hazmat/box", none) is None
    assert make_memory_cgroup("/hazmat/box", 1 << 28, 1 << 28, none) is None
    assert list(none.iterdir()) == []


def test_a_v2_cgroup_whose_controllers_cannot_be_enabled_is_not_left(tmp_path: Path) -> None:
    (tmp_path / "cgroup.controllers").write_text("cpu memory pids\n")
    (tmp_path / "cgroup.subtree_control").write_text("cpu memory pids\n")
    (tmp_path / "hazmat").mkdir()
    (tmp_path / "hazmat" / "cgroup.subtree_control").write_text("cpu memory pids\n")
    # the sandbox's is a plain folder: no cgroup.subtree_control of its own
    with pytest.raises(OSError, match=r"cgroup\.subtree_control"):
        make_memory_cgroup("/hazmat/box", 1 << 28, 1 << 28, tmp_path)
    assert not (tmp_path / "hazmat" / "box").exists()


def test_a_memory_cgroup_that_cannot_be_limited_is_not_left(tmp_path: Path) -> None:
    (tmp_path / "memory").mkdir()  # v1, but its folders are plain ones: no limit files
    with pytest.raises(OSError, match=r"memory\.limit_in_bytes"):
        make_memory_cgroup("/hazmat/box", 1 << 28, 1 << 28, tmp_path)
    assert not (tmp_path / "memory" / "hazmat" / "box").exists()
    remove_memory_cgroup(tmp_path / "memory" / "hazmat" / "box")  # gone already: no error


def test_a_sandbox_never_takes_a_memory_cgroup_that_is_there_already(tmp_path: Path) -> None:
    (tmp_path / "memory" / "hazmat" / "box").mkdir(parents=True)
    with pytest.raises(FileExistsError):
        make_memory_cgroup("/hazmat/box", 1 << 28, 1 << 28, tmp_path)
    assert (tmp_path / "memory" / "hazmat" / "box").is_dir()  # not its to remove
