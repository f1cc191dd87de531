"""hazmat's seccomp profile: a current upstream default profile, minus ptrace, io_uring and
other kernel surface no runtime needs, with socket(2) limited to the families a sandbox uses,
for the machine's native system call ABI only.

Only the native ABI: Docker's profile also loads the 32-bit and x32 ABIs (x86-64's `int $0x80`
and x32, arm64's AArch32), and libseccomp cannot filter them as strictly: on i386 it turns the
socket(2) family rules into a `socketcall` rule with no family check, so a 32-bit
`socketcall(SYS_SOCKET, AF_VSOCK)` passed where the 64-bit `socket(AF_VSOCK)` was refused. With
the native architecture alone in the filter, libseccomp kills a call made through any other ABI
(SIGSYS): the whole 32-bit and x32 surface is gone, whatever rules the base profile has.

Docker's default profile allows `ptrace` on kernels from 4.8 on. The program runs as a uid of
its own, apart from PID 1 (docker-init) and the agent (both root in the container), so the
kernel's own ptrace checks already refuse it them; the profile takes `ptrace`,
`process_vm_readv` and `process_vm_writev` away as well, so that nothing rests on that alone.
No rule allows a DENIED syscall, not even one that needs a capability (the program holds
none, the agent only KILL, SETGID, SETPCAP and SETUID). The other rules that need a capability
are kept as the base has them: they never apply to the program.

The base profile is not shipped with hazmat: `scripts/ensure-engine.sh` extracts Debian 13's
engine default (moby 26.1, from golang-github-docker-docker-dev; the installed engine's own
when that is out of reach) into `/var/lib/hazmat/seccomp/docker-default.json`
(`HAZMAT_SECCOMP_BASE` names another file). A base whose default action allows everything is
refused. When no base profile is found, containers get the engine's built-in default and
every result says so.
"""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path
from typing import Any

from hazmat._exceptions import InfraError

__all__ = [
    "DENIED",
    "SOCKET_FAMILIES",
    "SOCKET_PROTOCOLS",
    "SeccompProfile",
    "UnsafeProfile",
    "for_oci",
    "load_profile",
    "usable_profile",
]

DENIED = frozenset(
    {
        "ptrace",
        "process_vm_readv",
        "process_vm_writev",
        # io_uring: a large kernel surface with a history of local privilege escalations,
        # allowed by the engine 20.10 default (newer engines block it); no runtime needs it
        "io_uring_setup",
        "io_uring_enter",
        "io_uring_register",
        # the 32-bit multiplexer of socket(2) and its kin: its arguments are a pointer, so no
        # rule can check a family through it (Docker's current default denies it too)
        "socketcall",
        # secret memory the kernel unmaps from its own direct map: nothing a sandbox needs
        "memfd_secret",
        # a process's own LDT: only 16-bit and old 32-bit code wants one (Docker allows it on x86)
        "modify_ldt",
    }
)
# socket(2) only for these families: AF_UNIX, AF_INET, AF_INET6 (loopback: there is no other
# network) and AF_NETLINK (getifaddrs, if_nameindex), that one only with its protocol below.
# AF_VSOCK, AF_ALG, AF_PACKET, AF_KEY, AF_RXRPC, AF_XDP, Bluetooth, RDS, TIPC and the rest are
# refused with EPERM.
SOCKET_FAMILIES = {"AF_UNIX": 1, "AF_INET": 2, "AF_INET6": 10, "AF_NETLINK": 16}
# socket(2)'s protocol (its third argument) where a family allows only some: netlink only for
# NETLINK_ROUTE (0: interfaces, addresses, routes); XFRM, netfilter (nf_tables), audit and the
# rest are refused with EPERM
SOCKET_PROTOCOLS = {"AF_NETLINK": 0}
_ALLOWS_ALL = frozenset({"SCMP_ACT_ALLOW", "SCMP_ACT_LOG", "SCMP_ACT_TRACE"})


class UnsafeProfile(ValueError):
    """A base profile that would leave the sandbox unconfined."""


BASE_PATHS = (
    Path("/var/lib/hazmat/seccomp/docker-default.json"),
    Path("/usr/share/gocode/src/github.com/docker/docker/profiles/seccomp/default.json"),
)
MISSING_NOTE = (
    "seccomp: Docker's built-in default profile (ptrace allowed); "
    "run scripts/ensure-engine.sh to install the base profile hazmat derives its own from"
)


class SeccompProfile:
    """A profile ready for `security_opt`, or None's stand-in when no base was found."""

    def __init__(self, text: str | None, source: str) -> None:
        self.text = text
        self.source = source

    @property
    def security_opt(self) -> list[str]:
        return [f"seccomp={self.text}"] if self.text else []


@functools.cache
def load_profile(base: str | None = None) -> SeccompProfile:
    """Derive hazmat's profile from the first base profile found (cached per process)."""
    candidates = [Path(base)] if base else _candidates()
    for path in candidates:
        if path.is_file():
            profile = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(profile, dict) or profile.get("defaultAction") in _ALLOWS_ALL:
                raise UnsafeProfile(
                    f"the seccomp base profile {path} allows every syscall by default; hazmat "
                    "refuses it (use the engine's default profile: scripts/ensure-engine.sh)"
                )
            return SeccompProfile(json.dumps(derive(profile), separators=(",", ":")), str(path))
    return SeccompProfile(None, "")


def usable_profile(given: SeccompProfile | None = None) -> SeccompProfile:
    """`given`, or the derived profile; `InfraError` when the base profile found is unsafe."""
    try:
        return given or load_profile()
    except UnsafeProfile as exc:
        raise InfraError(str(exc)) from None


def _candidates() -> list[Path]:
    override = os.environ.get("HAZMAT_SECCOMP_BASE")
    return [Path(override)] if override else list(BASE_PATHS)


def derive(profile: dict[str, Any]) -> dict[str, Any]:
    """`profile` for the native ABI only, with no allow rule for the DENIED syscalls (not even
    one that needs a capability), and with socket(2) allowed only for SOCKET_FAMILIES (and
    SOCKET_PROTOCOLS) and socketpair(2) only for AF_UNIX, to a process without capabilities."""
    rules = []
    for rule in profile.get("syscalls", []):
        if rule.get("action") != "SCMP_ACT_ALLOW":
            rules.append(rule)
            continue
        needs_cap = bool((rule.get("includes") or {}).get("caps"))
        dropped = DENIED if needs_cap else DENIED | {"socket", "socketpair"}
        names = [n for n in rule.get("names", []) if n not in dropped]
        if names:
            rules.append({**rule, "names": names})
    rules.extend(_socket_rules())
    return {**profile, **_native_only(profile), "syscalls": rules}


def _socket_rules() -> list[dict[str, Any]]:
    """One socket(2) rule per family; a family in SOCKET_PROTOCOLS also checks the protocol
    (the conditions of one rule must all hold)."""
    rules = []
    for name, family in SOCKET_FAMILIES.items():
        args = [{"index": 0, "value": family, "valueTwo": 0, "op": "SCMP_CMP_EQ"}]
        if name in SOCKET_PROTOCOLS:
            protocol = SOCKET_PROTOCOLS[name]
            args.append({"index": 2, "value": protocol, "valueTwo": 0, "op": "SCMP_CMP_EQ"})
        rules.append({"names": ["socket"], "action": "SCMP_ACT_ALLOW", "args": args})
    # socketpair(2) makes two sockets of a family too (AF_TIPC's loads its module and works):
    # AF_UNIX alone, the only family whose pairs a program uses
    unix = {"index": 0, "value": SOCKET_FAMILIES["AF_UNIX"], "valueTwo": 0, "op": "SCMP_CMP_EQ"}
    rules.append({"names": ["socketpair"], "action": "SCMP_ACT_ALLOW", "args": [unix]})
    return rules


def _native_only(profile: dict[str, Any]) -> dict[str, Any]:
    """The profile's architectures without any sub-architecture: the engine and runc load the
    entry for the machine's own architecture (archMap), or the names listed (architectures);
    either way the 32-bit and x32 ABIs are left out, and the kernel's calls through them are
    killed. A profile that names neither gets the native architecture alone from libseccomp."""
    out: dict[str, Any] = {}
    if profile.get("archMap"):
        out["archMap"] = [
            {"architecture": entry["architecture"], "subArchitectures": []}
            for entry in profile["archMap"]
        ]
    if profile.get("architectures"):
        out["architectures"] = [a for a in profile["architectures"] if a in _NATIVE_ARCHES]
    return out


# the machine's architecture as the profile's `arches` name it (Go's names), and as libseccomp
_GOARCH = {"x86_64": "amd64", "aarch64": "arm64", "ppc64le": "ppc64le", "s390x": "s390x"}
# libseccomp's names of the 64-bit architectures whose kernels also run 32-bit (or x32) code
_NATIVE_ARCHES = frozenset(
    f"SCMP_ARCH_{name}" for name in ("X86_64", "AARCH64", "PPC64LE", "S390X", "RISCV64")
)


def for_oci(text: str, caps: frozenset[str], machine: str = "", kernel: str = "") -> dict[str, Any]:
    """hazmat's profile (`SeccompProfile.text`, Docker's format) as an OCI runtime spec's
    `linux.seccomp` for a process whose bounding set is `caps` ("CAP_KILL"...): the rules
    that apply on this machine, chosen as the engine chooses them (moby's profiles/seccomp:
    a rule's `includes` must all hold and none of its `excludes`), for the native
    architecture alone (no sub-architecture, whatever the profile lists: see `_native_only`)."""
    profile = json.loads(text)
    machine = machine or os.uname().machine
    goarch = _GOARCH.get(machine, machine)
    release = tuple(int(p) for p in (kernel or os.uname().release).split("-")[0].split(".")[:2])
    native = f"SCMP_ARCH_{machine.upper()}"
    listed = [e.get("architecture") for e in profile.get("archMap") or []]
    rules = []
    for rule in profile.get("syscalls", []):
        if not _applies(rule, goarch, caps, release):
            continue
        out = {"names": rule["names"], "action": rule["action"]}
        if rule.get("args"):
            out["args"] = rule["args"]
        if "errnoRet" in rule:
            out["errnoRet"] = rule["errnoRet"]
        rules.append(out)
    oci: dict[str, Any] = {"defaultAction": profile["defaultAction"], "syscalls": rules}
    if native in [*listed, *(profile.get("architectures") or [])]:
        oci["architectures"] = [native]
    if "defaultErrnoRet" in profile:
        oci["defaultErrnoRet"] = profile["defaultErrnoRet"]
    return oci


def _applies(
    rule: dict[str, Any], goarch: str, caps: frozenset[str], release: tuple[int, ...]
) -> bool:
    """Whether the engine would load `rule` for a process with `caps` on this machine."""
    inc, exc = rule.get("includes") or {}, rule.get("excludes") or {}
    if inc.get("arches") and goarch not in inc["arches"]:
        return False
    if inc.get("caps") and not set(inc["caps"]) <= caps:
        return False
    if inc.get("minKernel"):
        wanted = tuple(int(p) for p in str(inc["minKernel"]).split(".")[:2])
        if release < wanted:
            return False
    return not (goarch in (exc.get("arches") or []) or set(exc.get("caps") or []) & caps)
