"""hazmat's seccomp profile, derived from the engine's default: what it removes and refuses."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from hazmat.backends.container.seccomp import (
    UnsafeProfile,
    derive,
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
