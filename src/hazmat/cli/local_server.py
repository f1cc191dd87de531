"""The per-user local server: `hazmat run` goes through a `hazmat serve` of the user's own,
started on first use and kept warm (its pool, its assessor) until it has been idle for the
policy's `pool.server_idle_s` (README, "The per-user local server").

It lives in a folder of the user's (`root()`, then one folder per *setup*: the Python, the
hazmat code and the environment that decides where runs go and are recorded, so that a run
never reaches a server started for another engine, audit log or version of hazmat):

    server.sock     the service's unix socket (mode 0600)
    keys.json, key  its key store, and the one key the CLI uses (trusted, may override: the
                    user runs their own code, as `hazmat run --local` would)
    server.json     its pid, when it started, and with which policy
    server.log      what it printed
    lock            flock(2): one `hazmat run` starts it, the others wait and use it

Nothing is trusted that another user could have made: each folder must be the user's own and
of mode 0700, under folders no other user can change, the socket the user's own (owned.py, the
check of every socket the CLI finds); anything else is refused with what to do about it. A
socket nobody listens on (a server that died) is removed and a new server started.
Standard library only: this runs before every `hazmat run`.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import signal
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from hazmat._exceptions import InfraError
from hazmat._waiting import readable
from hazmat.cli.owned import make_own_folder, own_socket
from hazmat.cli.remote import Service, default_socket_path

__all__ = ["LocalServer", "all_servers", "for_cli", "root", "say", "setup", "wanted"]

START_TIMEOUT_S = 180.0  # the service's start: the reaper, the assessor, a loaded machine
STOP_TIMEOUT_S = 120.0  # a graceful stop waits for runs in flight
# runs at once (and batch tasks): one user's own work, as many as `hazmat batch --jobs` would
# run in its own process; a shared service's default is 8
MAX_RUNNING = 16
# What decides where a run goes and is recorded: a server started with other values of these
# is another setup's, never used for this one.
SETUP_ENV = (
    "DOCKER_HOST",
    "DOCKER_CONTEXT",
    "DOCKER_CERT_PATH",
    "DOCKER_TLS_VERIFY",
    "HAZMAT_AUDIT_DIR",
    "HAZMAT_SESSIONS_DIR",
    "HAZMAT_SECCOMP_BASE",
    "HAZMAT_CACHE_DIR",
    "HAZMAT_OCI_DIR",
    "HAZMAT_OCI_RUN",
    "HAZMAT_RUNC",
    "HAZMAT_RUNSC",
    "HAZMAT_SEMGREP",
    "XDG_STATE_HOME",
    "XDG_CACHE_HOME",
    "HOME",
)


def for_cli(say: Callable[[str], None]) -> Service | None:
    """Where a CLI command's work goes: the service set (HAZMAT_URL, or the default socket with
    HAZMAT_API_KEY), else this setup's local server, started now if need be; None: here
    (HAZMAT_NO_SERVER, or a local server that cannot be used, which `say` is told)."""
    from hazmat.cli.remote import find_service

    service = find_service()
    if service is not None or not wanted():
        return service
    try:
        return LocalServer().ensure(say)
    except InfraError as exc:
        say(f"{exc}; running in this process instead")
        return None


def wanted() -> bool:
    """False when `HAZMAT_NO_SERVER` is set (to anything but 0): every run in its process."""
    return os.environ.get("HAZMAT_NO_SERVER", "0") in ("", "0")


def root() -> Path:
    """The user's local servers' folder: `local/` beside the default service socket."""
    return default_socket_path().parent / "local"


def setup() -> dict[str, Any]:
    """What this process would run with: its Python, hazmat's code (newest source file), and
    the environment of `SETUP_ENV`."""
    from hazmat import __version__

    package = Path(__file__).resolve().parent.parent
    newest = max(
        (entry.stat().st_mtime_ns for entry in _sources(package)),
        default=0,
    )
    env = {name: os.environ.get(name) for name in SETUP_ENV}
    python = [os.path.realpath(sys.executable), sys.prefix]  # python and python3 are one
    return {"python": python, "hazmat": __version__, "code": newest, "env": env}


def _sources(folder: Path) -> Iterator[os.DirEntry[str]]:
    for entry in os.scandir(folder):
        if entry.is_dir(follow_symlinks=False) and entry.name != "__pycache__":
            yield from _sources(Path(entry.path))
        elif entry.name.endswith(".py"):
            yield entry


class LocalServer:
    """One setup's local server (by default this process's)."""

    def __init__(self, folder: Path | None = None) -> None:
        if folder is None:
            digest = hashlib.sha256(json.dumps(setup(), sort_keys=True).encode()).hexdigest()
            folder = root() / digest[:16]
        self.folder = folder
        self.socket = folder / "server.sock"
        self.keys = folder / "keys.json"
        self.key_file = folder / "key"
        self.state = folder / "server.json"
        self.log = folder / "server.log"

    # -- for `hazmat run` ---------------------------------------------------------------
    def ensure(self, say: Callable[[str], None], policy: Path | None = None) -> Service:
        """The running server, else one started now (`say` is told so, once)."""
        with self._locked():
            service = self.running()
            if service is None:
                self._start(policy)
                service = self.running()
                if service is None:
                    raise InfraError(f"the local server started but {self.socket} does not answer")
                say(
                    f"started a local server for your runs (pid {self.info().get('pid')}; it "
                    "stops when idle; `hazmat server status`, `hazmat server stop`)"
                )
            return service

    def running(self) -> Service | None:
        """A service for the server if one listens on the socket (a socket nobody listens on
        is removed); `InfraError` if the folder or the socket is not the user's own."""
        self._check_folder(root())
        self._check_folder(self.folder)
        if own_socket(self.socket, "remove it, or run with --local") is None:
            return None
        if not _answers(self.socket):
            self.socket.unlink(missing_ok=True)  # left by a server that died
            return None
        info = self.info()
        most = info.get("max_running")
        return Service(
            f"unix:{self.socket}",
            self._key(),
            info.get("default_trust"),
            most if isinstance(most, int) else None,
            own=info.get("any_runtime") is True,
        )

    # -- for `hazmat server` --------------------------------------------------------------
    def start(self, policy: Path | None = None) -> bool:
        """Start it unless it runs; whether it was started now."""
        with self._locked():
            if self.running() is not None:
                return False
            self._start(policy)
            return True

    def info(self) -> dict[str, Any]:
        try:
            return dict(json.loads(self.state.read_text()))
        except (OSError, ValueError):
            return {}

    def stop(self) -> bool:
        """SIGTERM the server if it runs, and wait for it to end; whether one was running."""
        pid = self.info().get("pid")
        if not isinstance(pid, int) or not self._is_mine(pid):
            return False
        try:
            handle = os.pidfd_open(pid)  # readable once the process has ended
        except ProcessLookupError:
            return False
        try:
            if not self._is_mine(pid):  # the pid was reused before it was held
                return False
            signal.pidfd_send_signal(handle, signal.SIGTERM)
            if not readable(handle, STOP_TIMEOUT_S):
                raise InfraError(f"the local server (pid {pid}) did not stop within 120 s")
        finally:
            os.close(handle)
        return True

    def _is_mine(self, pid: int) -> bool:
        """Whether `pid` is this folder's server (not a process that reused its pid)."""
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            return False
        return b"--per-user" in argv and str(self.folder).encode() in argv

    # -- inside ---------------------------------------------------------------------------
    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self._check_folder(root())
        self._check_folder(self.folder)
        fd = os.open(self.folder / "lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # a start takes seconds; the others wait for it
            yield
        finally:
            os.close(fd)

    def _start(self, policy: Path | None) -> None:
        if not self.key_file.exists():
            self._make_key()
        read, write = os.pipe()
        argv = [sys.executable, "-m", "hazmat", "serve", "--per-user", str(self.folder)]
        argv += ["--ready-fd", str(write), "--max-running", str(MAX_RUNNING)]
        if policy is not None:
            argv += ["--policy", str(policy.resolve())]
        log = os.open(self.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o600)
        try:
            process = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                pass_fds=(write,),
                start_new_session=True,  # not stopped by the terminal's Ctrl-C of this run
            )
        finally:
            os.close(write)
            os.close(log)
        try:
            said = _read_line(read, START_TIMEOUT_S)
        finally:
            os.close(read)
        if said != b"ready\n":
            if process.poll() is None:
                process.kill()
            process.wait()  # reaped: a server that could not start is no zombie of this run
            raise InfraError(f"the local server did not start: {self._last_words()}")
        state = {
            "pid": process.pid,
            "started": time.time(),
            "policy": policy and str(policy),
            "default_trust": _default_trust(policy),
            "max_running": MAX_RUNNING,
            "any_runtime": True,  # its key may ask for runc at a runsc level (`_make_key`)
        }
        _write_private(self.state, json.dumps({**state, "setup": setup()}, indent=1).encode())

    def _make_key(self) -> None:
        from hazmat.service.quotas import QUOTA_BOUNDS, Quotas
        from hazmat.service.tenant_keys import KeyStore

        most = Quotas(**{name: high for name, (_, high) in QUOTA_BOUNDS.items()})  # the user's
        _, key = KeyStore(self.keys).create(
            "local", "trusted", most, override=True, any_runtime=True
        )
        _write_private(self.key_file, key.encode())

    def _key(self) -> str:
        """The CLI's API key for the server: `InfraError` if it is missing, not a private file
        of the user's, or not a key (a damaged file), never a traceback."""
        try:
            seen = os.lstat(self.key_file)
            if (
                seen.st_uid != os.geteuid()
                or seen.st_mode & 0o077
                or not stat.S_ISREG(seen.st_mode)
            ):
                raise InfraError(f"{self.key_file}: not a private file of yours: refused")
            key = self.key_file.read_bytes().strip()
        except OSError as exc:
            raise InfraError(f"cannot read {self.key_file}: {exc.strerror or exc}") from None
        if not (key.isascii() and key.startswith(b"hzm_")):
            raise InfraError(
                f"{self.key_file} is not an API key (damaged): `hazmat server stop`, then "
                f"remove {self.folder}"
            )
        return key.decode("ascii")

    def _last_words(self) -> str:
        """The server's last line (its error: a package it needs that cannot be imported says
        which, and how to install it), without the "hazmat: error: " the run says itself."""
        try:
            lines = self.log.read_text(errors="replace").strip().splitlines()
        except OSError:
            lines = []
        said = lines[-1].removeprefix("hazmat: error: ") if lines else "it said nothing"
        return f"{said} (see {self.log})"

    @staticmethod
    def _check_folder(folder: Path) -> None:
        """Made 0700 if missing; refused unless a folder of the user's own, closed to others,
        under folders no other user can change (owned.py, as for every socket the CLI finds)."""
        make_own_folder(folder, "remove it, or run with --local")


def say(line: str) -> None:
    """A remark of hazmat's, on stderr."""
    print(f"hazmat: {line}", file=sys.stderr, flush=True)


def _default_trust(policy: Path | None) -> str:
    """What a run without --trust gets from the server's policy (the key allows more)."""
    if policy is None:
        from hazmat.policy import Policy

        return Policy().default_trust.value
    from hazmat.policy.file import load_policy

    return load_policy(policy).default_trust.value


def all_servers() -> list[LocalServer]:
    """Every setup's local server folder of the user's."""
    base = root()
    if not base.is_dir():
        return []
    return [LocalServer(path) for path in sorted(base.iterdir()) if path.is_dir()]


def _answers(path: Path) -> bool:
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(5)
    try:
        probe.connect(str(path))
    except OSError as exc:
        if exc.errno in (errno.ECONNREFUSED, errno.ENOENT):
            return False
        raise InfraError(f"cannot reach the local server at {path}: {exc}") from None
    finally:
        probe.close()
    return True


def _read_line(fd: int, timeout_s: float) -> bytes:
    """One line from `fd` (less at its end or at the timeout)."""
    deadline = time.monotonic() + timeout_s
    got = b""
    while not got.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0 or not readable(fd, left):
            break
        chunk = os.read(fd, 64)
        if not chunk:
            break
        got += chunk
    return got


def _write_private(path: Path, data: bytes) -> None:
    temporary = path.with_name(f".{path.name}.{os.getpid()}")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
