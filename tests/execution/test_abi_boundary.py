"""The boundary for every system call ABI the kernel offers a program: one C program
(abi_probe.c) tries the kernel surface a sandbox must not reach through the 64-bit `syscall`
instruction, the 32-bit `int $0x80` and x32, under runc in both tiers (the engine's, and the
direct OCI tier), and once under gVisor to say what holds there.

Under runc the seccomp profile loads the native architecture alone (backends/container/
seccomp.py), so every call through `int $0x80` or x32 is killed (SIGSYS), even getpid: the
32-bit `socketcall(SYS_SOCKET, AF_VSOCK)` that passed under Docker's sub-architectures is
refused with the rest. Through the 64-bit ABI, socket(2) is allowed for AF_UNIX, AF_INET,
AF_INET6 and NETLINK_ROUTE alone.
"""

from __future__ import annotations

import errno
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from probes import run

from hazmat import Outcome, Sandbox
from hazmat.backends.container.engine import Engine
from hazmat.backends.docker.driver import DockerBackend
from hazmat.backends.oci.driver import OciBackend
from hazmat.testing import as_asked

pytestmark = [pytest.mark.docker, pytest.mark.oci]

PROBE = (Path(__file__).parent / "abi_probe.c").read_text()
ABIS = ("64", "i386", "x32")
# what a sandbox's program may do through the 64-bit ABI; nothing else the probe tries
ALLOWED_64 = {
    "getpid",
    "socket:AF_UNIX",
    "socket:AF_INET",
    "socket:AF_INET6",
    "socket:NETLINK_ROUTE",
}
REFUSALS = {f"errno {n}" for n in (errno.EPERM, errno.EACCES, errno.ENOSYS, errno.EAFNOSUPPORT)}
KILLED = f"signal {int(signal.SIGSYS)}"


@pytest.fixture(scope="module", params=["docker", "oci"])
def tier(request: pytest.FixtureRequest, engine: Engine) -> Iterator[Sandbox]:
    """A sandbox without a pool on each tier: what is tested is the profile each applies."""
    backend = DockerBackend(engine) if request.param == "docker" else OciBackend(engine)
    with Sandbox(as_asked(), backend=backend) as sandbox:
        yield sandbox


def probe(sandbox: Sandbox, runtime: str) -> dict[tuple[str, str], str]:
    """`(probe, abi) -> ok | errno N | signal N`, from one run of abi_probe.c."""
    result = run(sandbox, runtime, PROBE, language="c", trust="trusted", timeout=30)
    assert result.outcome is Outcome.OK, (result.outcome, result.stderr[-2000:])
    seen = {}
    for line in result.stdout.splitlines():
        name, abi, outcome = line.split(" ", 2)
        seen[(name, abi)] = outcome
    assert ("socketcall:AF_VSOCK", "i386") in seen, result.stdout
    return seen


def test_under_runc_only_the_native_abi_is_open_and_only_its_needed_surface(tier: Sandbox) -> None:
    seen = probe(tier, "runc")
    wrong = []
    for (name, abi), outcome in seen.items():
        if abi == "libc":
            continue
        if abi != "64":
            # the whole ABI is closed: seccomp kills the caller whatever the call
            wanted = {KILLED}
        elif name in ALLOWED_64:
            wanted = {"ok"}
        else:
            wanted = REFUSALS | {KILLED}
        if outcome not in wanted:
            wrong.append(f"{name} {abi}: {outcome}")
    assert not wrong, wrong
    # every probe was tried through every ABI it exists in (socketcall: i386 alone)
    assert {abi for (_, abi) in seen} == {*ABIS, "libc"}
    assert seen[("getifaddrs", "libc")].startswith("ok lo"), seen[("getifaddrs", "libc")]


def test_under_gvisor_no_abi_reaches_the_host_kernels_surface(engine: Engine) -> None:
    """gVisor answers every call with its own kernel; the host's never sees one. It has no
    32-bit or x32 ABI: x32 calls get ENOSYS, and `int $0x80` runs the 64-bit call of the same
    number (measured: i386 socketcall, 102, runs getuid, which is why the probe checks that a
    descriptor really is a socket of the family asked). Through the 64-bit ABI it refuses by
    itself every socket family but the four a sandbox needs, every netlink protocol but
    NETLINK_ROUTE, memfd_secret, modify_ldt, io_uring and bpf; ptrace, keyctl, add_key and
    unshare(CLONE_NEWUSER) it serves from its own kernel, inside the sandbox."""
    with Sandbox(as_asked(), backend=DockerBackend(engine)) as sandbox:
        seen = probe(sandbox, "runsc")
    served_by_gvisor = {"keyctl", "add_key", "ptrace", "unshare"}
    refusals = REFUSALS | {f"errno {errno.EPROTONOSUPPORT}"}
    wrong = []
    for (name, abi), outcome in seen.items():
        if abi == "64" and name in ALLOWED_64:
            wanted = {"ok"}
        elif abi == "x32" or (abi == "64" and name not in served_by_gvisor):
            wanted = refusals
        elif abi == "i386" and name.startswith("socket"):
            wanted = refusals | {"other"}  # never a socket of the family asked
        else:
            continue
        if outcome not in wanted:
            wrong.append(f"{name} {abi}: {outcome}")
    assert not wrong, wrong
    assert seen[("getifaddrs", "libc")].startswith("ok lo"), seen[("getifaddrs", "libc")]
