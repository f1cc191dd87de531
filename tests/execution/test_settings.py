"""Read the container's real settings back from the engine: every hardening setting is there."""

from __future__ import annotations

import json

import pytest

from hazmat.backends.base import RUNSC_MEMORY_MB, Job, Program
from hazmat.backends.container.engine import Engine
from hazmat.backends.container.seccomp import load_profile
from hazmat.backends.container.uids import UID_BASE
from hazmat.backends.docker.driver import container_config
from hazmat.languages import get_language
from hazmat.policy import PRESETS, Runtime, TrustLevel

pytestmark = [pytest.mark.docker, pytest.mark.matrix]


@pytest.mark.parametrize("language", ["python", "go"])
def test_created_container_has_every_hardening_setting(
    engine: Engine, runtime: str, language: str
) -> None:
    limits = PRESETS["strict"]
    job = Job(
        get_language(language),
        get_language(language).image,
        limits,
        Runtime(runtime),
        TrustLevel.UNTRUSTED,
        Program({}, [], b"", 1),
    )
    profile = load_profile()
    assert profile.text, "the seccomp base profile is missing (scripts/ensure-engine.sh)"
    uid = UID_BASE + 11
    config = container_config(job.spec, {"hazmat": "1"}, engine.api.api_version, profile, uid)
    cid = engine.api.create_container(**config)["Id"]
    try:
        info = engine.api.inspect_container(cid)
    finally:
        engine.api.remove_container(cid, force=True)
    hc, cfg = info["HostConfig"], info["Config"]
    assert hc["ReadonlyRootfs"] is True
    assert hc["NetworkMode"] == "none" and cfg["NetworkDisabled"] is True
    assert hc["CapDrop"] == ["ALL"] and hc["Privileged"] is False
    # the agent's only capabilities: start the program as its uid, signal and end it
    assert sorted(hc["CapAdd"]) == ["KILL", "SETGID", "SETPCAP", "SETUID"]
    assert "no-new-privileges=true" in hc["SecurityOpt"]
    seccomp = [o for o in hc["SecurityOpt"] if o.startswith("seccomp=")]
    assert len(seccomp) == 1
    allowed = {
        n
        for rule in json.loads(seccomp[0][8:])["syscalls"]
        if rule["action"] == "SCMP_ACT_ALLOW" and not rule.get("includes", {}).get("caps")
        for n in rule["names"]
    }
    assert "ptrace" not in allowed and "read" in allowed
    assert cfg["User"] == "0:0"
    assert f"HAZMAT_UID={uid}" in cfg["Env"]
    assert f"uid={uid},gid={uid}" in hc["Tmpfs"]["/work"]
    # a language with a build step starts with the build's budget; the host sets the
    # program's own once the build is done (test_compile.py)
    memory = limits.build_memory_mb if language == "go" else limits.memory_mb
    assert limits.build_memory_mb > limits.memory_mb
    # under gVisor the cgroup counts gVisor's own memory too: its limit is a backstop above
    # the program's, which is judged from the program's own peak (docs/batch.md, runtimes)
    memory += {"runc": 0, "runsc": RUNSC_MEMORY_MB}[runtime]
    assert hc["Memory"] == hc["MemorySwap"] == memory * 1024 * 1024
    assert hc["NanoCpus"] == int(limits.cpus * 1e9)
    # the program's tasks; under gVisor its own host tasks too: 256 + 7 x pids (security.md),
    # and the program's own tasks counted per uid, so that they never reach the host limit
    assert hc["PidsLimit"] == {"runc": limits.pids, "runsc": 256 + 7 * limits.pids}[runtime]
    ulimits = {u["Name"]: (u["Soft"], u["Hard"]) for u in hc["Ulimits"]}
    assert ulimits["nproc"] == (limits.pids, limits.pids)
    assert ulimits["nofile"] == (limits.nofile, limits.nofile)
    assert ulimits["fsize"][0] > limits.tmpfs_mb * 1024 * 1024
    assert ulimits["core"] == (0, 0)
    assert f"size={limits.tmpfs_mb}m" in hc["Tmpfs"]["/work"]
    assert "noexec" in hc["Tmpfs"]["/work"]
    assert ("exec" if language == "go" else "noexec") in hc["Tmpfs"]["/tmp"].split(",")
    assert hc["ShmSize"] == limits.tmpfs_mb * 1024 * 1024
    assert hc["LogConfig"]["Type"] == "none"
    assert hc["Init"] is True
    assert hc["Runtime"] == runtime
    assert not hc["Binds"] and not info["Mounts"]
    assert cfg["Labels"]["hazmat"] == "1"
