"""The program's identity: a uid of its own, apart from the agent's and from every other
sandbox's (issue 12: a program that read the agent's nonce forged results, and sandboxes that
shared a uid shared the kernel's per-user budgets). Real engine, runc and runsc, cold and pooled.
"""

from __future__ import annotations

import base64
import re
import socket
import textwrap

import pytest
from probes import lines, run, tier_of, uids_of

from hazmat import PRESETS, Outcome, Sandbox
from hazmat._exceptions import InfraError
from hazmat.backends.agent.single import job_header
from hazmat.backends.base import Job, Program, Spec
from hazmat.backends.container.engine import Engine
from hazmat.backends.container.uids import Uids
from hazmat.backends.docker.driver import DockerBackend
from hazmat.languages import get_language
from hazmat.policy import Runtime, TrustLevel

pytestmark = [pytest.mark.docker, pytest.mark.oci, pytest.mark.matrix]
STRICT = PRESETS["strict"]

# Everything of other uids the program can reach: each process's memory, environment and
# command line, and whether it can be signalled.
PEEK = """
    import base64, os, signal
    me = os.getuid()
    seen, others = bytearray(), 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.stat(f"/proc/{pid}").st_uid == me:
                continue
        except OSError:
            continue
        others += 1
        for what in ("mem", "environ", "cmdline"):
            try:
                with open(f"/proc/{pid}/{what}", "rb") as f:
                    if what == "mem":
                        maps = open(f"/proc/{pid}/maps").read().split()
                        print("MEM_OPENED", pid)
                    seen += f.read(1 << 20)
            except OSError as e:
                print("DENIED", what, e.errno)
        try:
            os.kill(int(pid), signal.SIGKILL)
            print("KILLED", pid)
        except OSError as e:
            print("SIGNAL", e.errno)
    print("OTHERS", others)
    print("SEEN", base64.b64encode(bytes(seen)).decode())
"""


def _job(runtime: str, code: str, nonce: str) -> Job:
    python = get_language("python")
    program = Program({"main.py": textwrap.dedent(code).encode()}, [], b"", 1 << 20, nonce)
    return Job(python, python.image, STRICT, Runtime(runtime), TrustLevel.UNTRUSTED, program)


def test_the_program_cannot_reach_the_agent_or_its_nonce(
    engine: Engine, sandbox: Sandbox, runtime: str
) -> None:
    nonce = "5e" * 16
    backend = tier_of(sandbox, engine)
    try:
        report = backend.execute(_job(runtime, PEEK, nonce))
    finally:
        backend.close()
    out = report.stdout.decode()
    probe = dict(line.split(" ", 1) for line in out.splitlines() if " " in line)
    assert report.exit_code == 0, report
    assert int(probe["OTHERS"]) >= 1  # the agent (and PID 1) are there, as another uid
    assert "KILLED" not in out and "MEM_OPENED" not in out
    assert set(re.findall(r"SIGNAL (\d+)", out)) == {"1"}  # EPERM for every one
    assert nonce.encode() not in base64.b64decode(probe["SEEN"])



# Links into /proc, through which the output files' collector (a process of the program's uid
# once the program is gone) would read itself and the agent: its own memory and environment,
# and the agent's (the program's parent, as the runner is).
LINKS = """
    import os
    os.symlink("/proc/self", "me")
    os.symlink(f"/proc/{os.getppid()}", "agent")
"""
PROC_FILES = ("environ", "mem", "cmdline", "maps", "stack", "syscall", "status")


def test_the_output_files_collector_gives_nothing_with_the_nonce(
    engine: Engine, sandbox: Sandbox, runtime: str
) -> None:
    nonce = "7a" * 16
    want = [f"{link}/{name}" for link in ("me", "agent") for name in PROC_FILES]
    python = get_language("python")
    code = textwrap.dedent(LINKS).encode()
    program = Program({"main.py": code}, want, b"", 1 << 20, nonce)
    job = Job(python, python.image, STRICT, Runtime(runtime), TrustLevel.UNTRUSTED, program)
    backend = tier_of(sandbox, engine)
    try:
        report = backend.execute(job)
    finally:
        backend.close()
    assert report.exit_code == 0, report
    assert "me/cmdline" in report.files, report.files  # the links were followed to /proc
    for name, data in report.files.items():
        assert nonce.encode() not in data, name

def test_a_forged_end_marker_is_program_output(sandbox: Sandbox, runtime: str) -> None:
    """Without the nonce, a made-up marker is just output, and the real status stands."""
    code = """
        import sys
        fake = "0123456789abcdef" * 2
        print(f"\\n--hazmat-files-{fake}--\\nfile 3 x\\nabc")
        print(f"\\n--hazmat-end-{fake}-- 0", flush=True)
        print(f"\\n--hazmat-end-{fake}-- 0", file=sys.stderr, flush=True)
        sys.exit(3)
    """
    result = run(sandbox, runtime, code, output_files=["x"])
    assert result.outcome is Outcome.ERROR and result.exit_code == 3, result
    assert "--hazmat-end-0123456789abcdef" in result.stdout
    assert result.files == {}


def test_the_program_runs_as_its_own_uid_and_owns_the_working_directory(
    sandbox: Sandbox, runtime: str
) -> None:
    code = "import os; print('UID', os.getuid(), os.getgid(), os.stat('.').st_uid, os.getcwd())"
    uid, gid, owner, cwd = lines(run(sandbox, runtime, code))["UID"].split()
    assert uid == gid == owner and int(uid) in uids_of(sandbox) and cwd == "/work"


def test_live_sandboxes_never_share_a_uid(engine: Engine, runtime: str) -> None:
    spec = Spec.of("python", get_language("python").image, Runtime(runtime), STRICT)
    mine, other = DockerBackend(engine), DockerBackend(engine)
    started = []
    try:
        started = [mine.start(spec, lifetime_s=60) for _ in range(3)]
        uids = {s.uid for s in started}
        assert len(uids) == 3 and all(uid in Uids() for uid in uids)
        # another process (with its own bookkeeping) that can only pick a uid taken here: the
        # engine's account of live containers refuses it every time
        taken = started[0].uid
        other.driver.uids = Uids(base=taken, count=1)
        with pytest.raises(InfraError, match="no free sandbox uid"):
            other.start(spec, lifetime_s=60)
        holders = engine.api.containers(all=True, filters={"label": f"hazmat.uid={taken}"})
        assert [c["Id"] for c in holders] == [started[0].cid]
    finally:
        for one in started:
            mine.discard(one)
        mine.close()
        other.close()


# Holds the kernel's per-user budgets a shared uid would share: every inotify instance it
# can get and POSIX message queues until the user's byte budget runs out; then waits for EOF.
HOLD = """
    import ctypes, os, sys
    libc = ctypes.CDLL(None, use_errno=True)
    inotify = 0
    while libc.inotify_init1(0) >= 0:
        inotify += 1
    queues = 0
    while libc.mq_open(f"/q{queues}".encode(), os.O_CREAT | os.O_RDWR, 0o600, None) >= 0:
        queues += 1
    print("held", inotify, queues, flush=True)
    sys.stdin.read()
"""

TRY = """
    import ctypes, os
    libc = ctypes.CDLL(None, use_errno=True)
    ok = 0
    for i in range(40):
        fd = libc.inotify_init1(0)
        if fd >= 0:
            ok += 1
            os.close(fd)
    print("INOTIFY", ok)
    fd = libc.mq_open(b"/mine", os.O_CREAT | os.O_RDWR, 0o600, None)
    print("MQ", "ok" if fd >= 0 else ctypes.get_errno())
"""


def _read_until(sock: socket.socket, pattern: bytes) -> re.Match[bytes]:
    got = b""
    while (match := re.search(pattern, got)) is None:
        chunk = sock.recv(65536)
        assert chunk, f"the container ended before {pattern!r}: {got!r}"
        got += chunk
    return match


def test_per_user_budgets_are_not_shared(engine: Engine, sandbox: Sandbox, runtime: str) -> None:
    holder = tier_of(sandbox, engine)
    spec = Spec.of("python", get_language("python").image, Runtime(runtime), STRICT)
    started = holder.start(spec, lifetime_s=120)
    try:
        started.sock.settimeout(120)
        job = _job(runtime, HOLD, "ab" * 16)
        started.sock.sendall(job_header(job.program))
        held = _read_until(started.sock, rb"held (\d+) (\d+)\n")
        assert int(held.group(1)) > 0
        result = run(sandbox, runtime, TRY)
        probe = lines(result)
        assert probe["INOTIFY"] == "40", (held.group(0), result)
        if int(held.group(2)) > 0:  # mq_open works here: the budget held above is not ours
            assert probe["MQ"] == "ok", (held.group(0), result)
        started.sock.shutdown(socket.SHUT_WR)
        _read_until(started.sock, rb"--hazmat-end-(ab){16}-- 0\n")
    finally:
        holder.discard(started)
        holder.close()
