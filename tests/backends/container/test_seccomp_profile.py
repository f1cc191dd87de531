"""hazmat's seccomp profile, derived from the engine's default: what it removes and refuses."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from hazmat.backends.container.seccomp import (
    BASE_PATHS,
    DENIED,
    UnsafeProfile,
    derive,
    for_oci,
    load_profile,
)

BASE = {
    "defaultAction": "SCMP_ACT_ERRNO",
    "syscalls": [
        {"names": ["read", "socket", "io_uring_setup", "ptrace"], "action": "SCMP_ACT_ALLOW"},
        {"names": ["io_uring_enter", "io_uring_register"], "action": "SCMP_ACT_ALLOW"},
        {"names": ["bpf"], "action": "SCMP_ACT_ALLOW", "includes": {"caps": ["CAP_SYS_ADMIN"]}},
    ],
}


def allowed_unconditionally(profile: dict[str, object]) -> set[str]:
    return {
        name
        for rule in profile["syscalls"]  # type: ignore[attr-defined]
        if rule["action"] == "SCMP_ACT_ALLOW" and not rule.get("args") and not rule.get("includes")
        for name in rule["names"]
    }


def test_io_uring_ptrace_and_any_socket_family_are_gone() -> None:
    derived = derive(BASE)
    assert allowed_unconditionally(derived) == {"read"}
    families = sorted(
        rule["args"][0]["value"] for rule in derived["syscalls"] if rule["names"] == ["socket"]
    )
    # the kernel's numbers, not the module's own table: unix, ip, ip6, netlink and nothing else
    wanted = [socket.AF_UNIX, socket.AF_INET, socket.AF_INET6, socket.AF_NETLINK]
    assert families == sorted(int(family) for family in wanted)
    assert socket.AF_VSOCK not in families


@pytest.mark.parametrize("action", ["SCMP_ACT_ALLOW", "SCMP_ACT_LOG"])
def test_a_base_that_allows_everything_is_refused(tmp_path: Path, action: str) -> None:
    base = tmp_path / "open.json"
    base.write_text(json.dumps({"defaultAction": action, "syscalls": []}))
    with pytest.raises(UnsafeProfile, match="allows every syscall"):
        load_profile(str(base))


def test_doctor_fails_on_an_unconfined_base(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hazmat.cli.doctor import _profile_check

    base = tmp_path / "open.json"
    base.write_text(json.dumps({"defaultAction": "SCMP_ACT_ALLOW", "syscalls": []}))
    monkeypatch.setenv("HAZMAT_SECCOMP_BASE", str(base))
    load_profile.cache_clear()
    try:
        check = _profile_check()
    finally:
        monkeypatch.undo()
        load_profile.cache_clear()
    assert not check.ok and "allows every syscall" in check.detail


# Docker's default profile's shape (moby 26.1): the 32-bit and x32 ABIs as sub-architectures,
# socket(2) with a family check, socketcall, memfd_secret and modify_ldt allowed
DOCKER_SHAPED = {
    "defaultAction": "SCMP_ACT_ERRNO",
    "defaultErrnoRet": 1,
    "archMap": [
        {"architecture": "SCMP_ARCH_X86_64",
         "subArchitectures": ["SCMP_ARCH_X86", "SCMP_ARCH_X32"]},
        {"architecture": "SCMP_ARCH_AARCH64", "subArchitectures": ["SCMP_ARCH_ARM"]},
    ],
    "syscalls": [
        {"names": ["read", "socketcall", "memfd_secret", "getpid", "socketpair"],
         "action": "SCMP_ACT_ALLOW"},
        {"names": ["socket"], "action": "SCMP_ACT_ALLOW",
         "args": [{"index": 0, "value": 40, "op": "SCMP_CMP_NE"}]},
        {"names": ["modify_ldt"], "action": "SCMP_ACT_ALLOW",
         "includes": {"arches": ["amd64", "x32", "x86"]}},
        {"names": ["ptrace"], "action": "SCMP_ACT_ALLOW", "includes": {"minKernel": "4.8"}},
        {"names": ["ptrace", "kcmp"], "action": "SCMP_ACT_ALLOW",
         "includes": {"caps": ["CAP_SYS_PTRACE"]}},
    ],
}  # fmt: skip
SUB_ARCHES = {"SCMP_ARCH_X86", "SCMP_ARCH_X32", "SCMP_ARCH_ARM"}


def _bases() -> list[object]:
    """The Docker-shaped base above, the same in the older `architectures` form, and the
    engine's real base profile where scripts/ensure-engine.sh installed it."""
    listed = {k: v for k, v in DOCKER_SHAPED.items() if k != "archMap"}
    listed["architectures"] = ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"]
    found = [p for p in BASE_PATHS if p.is_file()][:1]
    return [
        pytest.param(DOCKER_SHAPED, id="archMap"),
        pytest.param(listed, id="architectures"),
        *(pytest.param(json.loads(p.read_text()), id="installed") for p in found),
    ]


@pytest.mark.parametrize("base", _bases())
def test_the_profile_offers_the_native_abi_alone(base: dict[str, object]) -> None:
    derived = derive(base)
    text = json.dumps(derived)
    for arch in SUB_ARCHES:
        assert f'"{arch}"' not in text
    assert all(not entry["subArchitectures"] for entry in derived.get("archMap", []))
    oci = for_oci(text, frozenset({"CAP_KILL"}), "x86_64", "6.18.0")
    assert oci["architectures"] == ["SCMP_ARCH_X86_64"]


@pytest.mark.parametrize("base", _bases())
def test_socketcall_memfd_secret_modify_ldt_ptrace_are_allowed_by_no_rule(
    base: dict[str, object],
) -> None:
    derived = derive(base)
    allowed = {
        name
        for rule in derived["syscalls"]
        if rule["action"] == "SCMP_ACT_ALLOW"
        for name in rule["names"]
    }  # by any rule, even one that needs a capability
    assert {"socketcall", "memfd_secret", "modify_ldt", "ptrace"} <= DENIED
    assert not DENIED & allowed
    assert "read" in allowed


@pytest.mark.parametrize("base", _bases())
def test_socketpair_is_allowed_for_af_unix_alone(base: dict[str, object]) -> None:
    """socketpair(AF_TIPC) made two live TIPC sockets (its module loaded) where the base
    profile allowed socketpair for every family, as Docker's does."""
    syscalls = derive(base)["syscalls"]
    pairs = [r for r in syscalls if "socketpair" in r["names"] and r["action"] == "SCMP_ACT_ALLOW"]
    assert [r["args"] for r in pairs] == [
        [{"index": 0, "value": socket.AF_UNIX, "valueTwo": 0, "op": "SCMP_CMP_EQ"}]
    ]


def test_netlink_is_allowed_for_netlink_route_alone() -> None:
    rules = [rule for rule in derive(DOCKER_SHAPED)["syscalls"] if rule["names"] == ["socket"]]
    netlink = [r for r in rules if r["args"][0]["value"] == socket.AF_NETLINK]
    assert len(netlink) == 1, netlink
    checks = {(a["index"], a["op"], a["value"]) for a in netlink[0]["args"]}
    assert checks == {(0, "SCMP_CMP_EQ", socket.AF_NETLINK), (2, "SCMP_CMP_EQ", 0)}
    # every other family rule checks the family alone, for equality
    others = [r["args"] for r in rules if r not in netlink]
    assert all(len(a) == 1 and a[0]["op"] == "SCMP_CMP_EQ" for a in others), others
