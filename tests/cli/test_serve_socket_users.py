"""`hazmat serve` on its default socket against another local user (docs/security.md): the
socket's folder is made or checked as the local server's and the CLI's are (cli/owned.py,
through cli/serve.default_socket): in a runtime folder another user owns, or a folder another
user may write to (and has planted a listener in), serve refuses before it makes, unlinks,
binds or connects to anything there. A second uid (nobody) owns or plants what is refused."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from hazmat.cli.serve import default_socket

NOBODY = 65534
PYTHON = "/usr/bin/python3"  # nobody's: the venv's may sit where nobody cannot read
PLANT = """
import socket, sys
listener = socket.socket(socket.AF_UNIX)
listener.bind(sys.argv[1])
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

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="acts as a second uid: needs root")


@pytest.fixture
def runtime() -> Iterator[Path]:
    """An `XDG_RUNTIME_DIR` of its own (in /tmp, where nobody can reach it)."""
    folder = Path(tempfile.mkdtemp(prefix="hz-serve-", dir="/tmp"))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def serve(runtime: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """`hazmat serve` with no --socket: before the fix it bound in the folder and served."""
    env = {**os.environ, "XDG_RUNTIME_DIR": str(runtime), "XDG_STATE_HOME": str(tmp_path)}
    env.pop("HAZMAT_API_KEY", None)
    argv = [sys.executable, "-m", "hazmat", "serve", "--keys", str(tmp_path / "keys.json")]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)


def test_serve_makes_nothing_in_another_users_runtime_folder(runtime: Path, tmp_path: Path) -> None:
    os.chown(runtime, NOBODY, NOBODY)
    done = serve(runtime, tmp_path)
    assert done.returncode == 125, done.stderr
    assert f"{runtime} belongs to another user (uid 65534)" in done.stderr, done.stderr
    assert "--socket PATH" in done.stderr
    assert list(runtime.iterdir()) == []  # no hazmat/ made in it, no socket bound


def test_serve_refuses_a_folder_others_can_write_before_touching_what_is_planted(
    runtime: Path, tmp_path: Path
) -> None:
    folder = runtime / "hazmat"
    folder.mkdir(mode=0o700)
    folder.chmod(0o777)  # so that nobody can plant its listener where serve would bind
    runtime.chmod(0o711)
    planted = subprocess.Popen(
        [PYTHON, "-c", PLANT, str(folder / "hazmat.sock")],
        user=NOBODY,
        group=NOBODY,
        extra_groups=[],
        cwd="/",
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert planted.stdout is not None and planted.stdout.readline().strip() == "planted"
    done = serve(runtime, tmp_path)
    out, _ = planted.communicate(timeout=60)
    assert out.strip() == "connections 0"  # not even probed
    assert done.returncode == 125, done.stderr
    assert f"{folder} is open to others (mode 777)" in done.stderr, done.stderr
    assert (folder / "hazmat.sock").lstat().st_uid == NOBODY  # not unlinked, not replaced


def test_the_default_folder_is_made_the_users_own(
    runtime: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    path = default_socket()
    assert path == runtime / "hazmat" / "hazmat.sock" and not path.exists()
    made = path.parent.lstat()
    assert made.st_uid == os.geteuid() and stat.S_IMODE(made.st_mode) == 0o700


@pytest.mark.skipif(os.geteuid() != 0, reason="acts as a second user: needs root")
def test_a_folder_the_user_cannot_look_into_is_refused_not_a_traceback(tmp_path: Path) -> None:
    """`su` keeps another user's XDG_RUNTIME_DIR (mode 0700, theirs): lstat in it is EACCES,
    which was an unhandled PermissionError (exit 70). Here root's 0700 folder, as nobody."""
    from hazmat._exceptions import InfraError
    from hazmat.cli.owned import make_own_folder, own_socket

    closed = Path(tempfile.mkdtemp(prefix="hz-closed-"))
    try:
        closed.chmod(0o700)
        pid = os.fork()
        if pid == 0:  # the child: nobody, with hazmat already in memory
            status = 1
            try:
                os.setgid(NOBODY)
                os.setuid(NOBODY)
                for call in (
                    lambda: own_socket(closed / "hazmat" / "hazmat.sock", "set HAZMAT_URL"),
                    lambda: make_own_folder(closed / "hazmat", "set HAZMAT_URL"),
                ):
                    try:
                        call()
                    except InfraError as exc:
                        status += 0 if "cannot use" in str(exc) else 10
                    else:
                        status += 10
                status -= 1
            finally:
                os._exit(status)
        _, waited = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(waited) == 0
    finally:
        shutil.rmtree(closed)
