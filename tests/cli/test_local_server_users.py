"""The per-user local server and its console against another local user (docs/security.md,
"The per-user local server"): a second uid (nobody, through a subprocess that drops to it)
holds connections to the console's port, plants a socket where the CLI looks for one, or holds
the console's port on a loopback address. Root's CLI keeps working, refuses what it did not
make, and the console does not start on a port it cannot hold everywhere."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from server_helpers import wait_exit

NOBODY = 65534
PYTHON = "/usr/bin/python3"  # nobody's: the venv's may sit where nobody cannot read
HELD = 300

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="acts as a second uid: needs root")


def nobody(code: str, *args: str) -> subprocess.Popen[str]:
    """`code` run by uid 65534; it talks over its stdin and stdout (a line at a time)."""
    return subprocess.Popen(
        [PYTHON, "-c", code, *args],
        user=NOBODY,
        group=NOBODY,
        extra_groups=[],
        cwd="/",
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={"PATH": "/usr/bin:/bin"},
    )


def said(process: subprocess.Popen[str]) -> str:
    assert process.stdout is not None
    return process.stdout.readline().strip()


def ended(process: subprocess.Popen[str]) -> str:
    """What `process` says last, once its stdin is closed."""
    out, _ = process.communicate(timeout=60)
    return out.strip()


@pytest.fixture
def env(tmp_path: Path) -> Iterator[dict[str, str]]:
    """A user's environment of its own (as tests/cli/test_local_server.py's): every server started
    in it is stopped after."""
    runtime = Path(tempfile.mkdtemp(prefix="hz-", dir="/tmp"))
    mine = {**os.environ, "XDG_RUNTIME_DIR": str(runtime)}
    mine["HAZMAT_AUDIT_DIR"] = str(tmp_path / "audit")
    mine.pop("HAZMAT_NO_SERVER", None)
    mine.pop("HAZMAT_API_KEY", None)
    mine.pop("HAZMAT_URL", None)
    try:
        yield mine
    finally:
        subprocess.run([sys.executable, "-m", "hazmat", "server", "stop"], env=mine, check=True)
        shutil.rmtree(runtime, ignore_errors=True)


def hazmat(
    env: dict[str, str], *args: str, timeout_s: float = 600
) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "hazmat", *args]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout_s)


def running(env: dict[str, str]) -> list[dict[str, object]]:
    done = hazmat(env, "server", "status", "--json")
    assert done.returncode == 0, done.stderr
    return [s for s in json.loads(done.stdout)["servers"] if s["running"]]


class Console:
    """`hazmat server console --port 0` running, its port and its stderr lines."""

    def __init__(self, env: dict[str, str], *args: str) -> None:
        argv = [sys.executable, "-m", "hazmat", "server", "console", "--port", "0", *args]
        self.process = subprocess.Popen(
            argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        assert self.process.stdout is not None and self.process.stderr is not None
        url = self.process.stdout.readline().split("console of your local server: ", 1)[1]
        self.port = int(url.rsplit(":", 1)[1].split("/", 1)[0])
        key = self.process.stdout.readline().split("the key in ", 1)[1].split(";", 1)[0]
        self.folder = Path(key).parent  # the local server's

    def server_pid(self) -> int:
        return int(json.loads((self.folder / "server.json").read_text())["pid"])

    def wait_for(self, words: str) -> str:
        """The console's next stderr line with `words` in it."""
        assert self.process.stderr is not None
        while line := self.process.stderr.readline():
            if words in line:
                return line
        raise AssertionError(f"the console ended without saying {words!r}")

    def stop(self) -> None:
        self.process.send_signal(signal.SIGINT)
        _, rest = self.process.communicate(timeout=60)
        assert self.process.returncode == 0, rest


HOLD = """
import socket, sys

def connect(port):
    c = socket.create_connection(("127.0.0.1", port))
    try:
        c.sendall(b"GET /console HTTP/1.1\\r\\nHost: x\\r\\n")  # a head never finished
    except OSError:  # refused already
        pass
    return c

def ask(port):
    c = socket.create_connection(("127.0.0.1", port))
    got = b""
    try:
        c.sendall(b"GET /console HTTP/1.1\\r\\nHost: x\\r\\nConnection: close\\r\\n\\r\\n")
        while chunk := c.recv(65536):
            got += chunk
    except OSError:
        pass
    return len(got)

held = [connect({port}) for _ in range({count})]
print("held", len(held), flush=True)
for line in sys.stdin:  # a whole request on a new connection: how much came back
    print("answered", ask({port}), flush=True)
"""


@pytest.mark.docker
@pytest.mark.parametrize("who", ["another user", "the user"])
def test_held_connections_to_the_console_never_block_the_cli(env: dict[str, str], who: str) -> None:
    """300 connections with a request head never finished: another user's are closed when
    accepted; the user's own reach the server at most `MAX_UPSTREAM` at a time. Root's own
    `hazmat run` goes through on the unix socket either way."""
    console = Console(env)
    try:
        if who == "another user":
            holder = nobody(HOLD.format(count=HELD, port=console.port))
            assert said(holder) == f"held {HELD}"
            assert "uid 65534" in console.wait_for("refused a connection")
        else:
            mine = [socket.create_connection(("127.0.0.1", console.port)) for _ in range(HELD)]
            for held in mine:
                held.sendall(b"GET /console HTTP/1.1\r\nHost: x\r\n")
        done = hazmat(env, "run", "-c", "print(6 * 7)")
        assert (done.returncode, done.stdout) == (0, "42\n"), done.stderr
        assert "503" not in done.stderr
    finally:
        if who == "another user":
            ended(holder)
        else:
            for held in mine:
                held.close()
        console.stop()


@pytest.mark.docker
def test_another_users_connections_neither_keep_the_server_nor_start_it(
    env: dict[str, str], tmp_path: Path
) -> None:
    console = idle_console(env, tmp_path)
    try:
        holder = nobody(HOLD.format(count=HELD, port=console.port))
        assert said(holder) == f"held {HELD}"
        assert wait_exit(console.server_pid())  # idle, whatever the held connections
        assert holder.stdin is not None
        holder.stdin.write("ask\n")
        holder.stdin.flush()
        assert said(holder) == "answered 0"  # refused: nothing forwarded, nothing started
        assert running(env) == []
        assert "no request for 2 s" in (console.folder / "server.log").read_text()
    finally:
        ended(holder)
        console.stop()


@pytest.mark.docker
def test_the_users_idle_connections_neither_keep_the_server_nor_start_it(
    env: dict[str, str], tmp_path: Path
) -> None:
    """Connections that send nothing reach no server: it stops when idle, and one that opens
    after it stopped and sends nothing is closed after `FIRST_BYTES_S` with no server started."""
    console = idle_console(env, tmp_path)
    mine = [socket.create_connection(("127.0.0.1", console.port)) for _ in range(HELD)]
    try:
        assert wait_exit(console.server_pid())
        with socket.create_connection(("127.0.0.1", console.port), timeout=120) as late:
            assert late.recv(1) == b""  # the forwarder's deadline for first bytes closed it
        assert running(env) == []
    finally:
        for held in mine:
            held.close()
        console.stop()


def idle_console(env: dict[str, str], tmp_path: Path) -> Console:
    """The console of a local server that stops after 2 s without a request."""
    policy = tmp_path / "idle.yaml"
    policy.write_text("pool:\n  server_idle_s: 2\n")
    return Console(env, "--policy", str(policy))


PLANT = """
import os, socket, sys
path = sys.argv[1]
listener = socket.socket(socket.AF_UNIX)
listener.bind(path)
listener.listen(16)
print("planted", flush=True)
sys.stdin.read()
listener.setblocking(False)
came = 0
while True:
    try:
        listener.accept()
    except BlockingIOError:
        break
    came += 1
print("connections", came, flush=True)
"""


def plant(path: Path) -> subprocess.Popen[str]:
    process = nobody(PLANT, str(path))
    if said(process) != "planted":
        process.kill()
        process.communicate()
        raise AssertionError(f"nobody could not plant {path}")
    return process


@pytest.mark.parametrize(
    ("made", "why"),
    [
        ("their runtime folder", "belongs to another user (uid 65534)"),
        ("their socket", "not a socket of yours (uid 65534)"),
        ("an open folder", "open to others (mode 777)"),
    ],
)
def test_a_socket_that_is_not_the_users_never_gets_the_key(
    env: dict[str, str], made: str, why: str
) -> None:
    """With `HAZMAT_API_KEY` set, `hazmat run` looks for the default socket under
    `XDG_RUNTIME_DIR`: one another user made or could replace is refused before any
    connection (the planted listener sees none), as the local server's folders are."""
    runtime = Path(env["XDG_RUNTIME_DIR"])
    folder = runtime / "hazmat"
    folder.mkdir(mode=0o700)
    if made == "their runtime folder":
        os.chown(runtime, NOBODY, NOBODY)
        os.chown(folder, NOBODY, NOBODY)
    else:
        runtime.chmod(0o711)  # not writable by others: nobody may only pass through
        folder.chmod(0o777)  # so that nobody can plant its socket there
    planted = plant(folder / "hazmat.sock")
    if made == "their socket":
        folder.chmod(0o700)
    keyed = {**env, "HAZMAT_API_KEY": "hzm_000000000000_secret"}
    done = hazmat(keyed, "run", "-c", "print(1)", timeout_s=120)
    assert ended(planted) == "connections 0"
    assert done.returncode == 125 and done.stdout == "", done.stderr
    assert why in done.stderr and "refused" in done.stderr, done.stderr
    assert "hzm_000000000000_secret" not in done.stderr


def test_the_local_server_makes_nothing_in_another_users_runtime_folder(
    env: dict[str, str],
) -> None:
    runtime = Path(env["XDG_RUNTIME_DIR"])
    os.chown(runtime, NOBODY, NOBODY)
    done = hazmat(env, "server", "start")
    assert done.returncode == 125, done.stderr
    assert f"{runtime} belongs to another user (uid 65534)" in done.stderr
    assert list(runtime.iterdir()) == []  # no hazmat/local made in it


LISTEN = """
import socket, sys
family = socket.AF_INET6 if ":" in sys.argv[1] else socket.AF_INET
listener = socket.socket(family)
listener.bind((sys.argv[1], 0))
listener.listen(1)
print(listener.getsockname()[1], flush=True)
sys.stdin.read()
"""


@pytest.mark.parametrize("host", ["::1", "127.0.0.1"])
def test_the_console_does_not_start_on_a_port_another_user_holds(
    env: dict[str, str], host: str
) -> None:
    process = nobody(LISTEN, host)
    try:
        port = int(said(process))
        done = hazmat(env, "server", "console", "--port", str(port), timeout_s=120)
    finally:
        ended(process)
    shown = f"[{host}]" if ":" in host else host
    assert done.returncode == 2, done.stderr
    assert f"cannot listen on {shown}:{port}" in done.stderr, done.stderr
    assert "(by uid 65534)" in done.stderr and "choose another --port" in done.stderr
    assert running(env) == []  # refused before a server was started
