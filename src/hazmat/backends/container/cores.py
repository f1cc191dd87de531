"""At most one measured program per core: the runs on the CPU clock (a grader's tests).

A measured program holds a core from its start to its end (not its build, not its container's
start: `Cores.hold`), so that however many tasks a batch grades at once (`--jobs`), no more
programs are measured together than the machine has cores, and each one's wall-clock time stays
close to its CPU time. Within a process a semaphore orders the waiters; across the processes of
one user on one machine (a batch graded in its own process beside the local server, two
batches, a worker and a service) one lock file per core in a folder they share, held with
`flock`, which the kernel releases when a process dies. `waiting` is how many runs of this
process wait for a core (the batch's progress display says so).
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

__all__ = ["Cores", "cores_folder"]

log = logging.getLogger(__name__)
_POLL_S = 0.01  # how often a waiter looks for a core another process released
_SAY_AFTER_S = 1.0  # a wait this long is said (a log line naming the holders), once per wait


def cores_folder() -> Path:
    """The folder of this user's core locks: $HAZMAT_CORES_DIR, else one in the temporary
    directory named by the user's id."""
    named = os.environ.get("HAZMAT_CORES_DIR")
    return Path(named) if named else Path(tempfile.gettempdir()) / f"hazmat-cores-{os.getuid()}"


class Cores:
    """`count` cores, shared with this user's other processes through `folder` (None: this
    process only)."""

    def __init__(self, count: int, folder: Path | None = None) -> None:
        self.count = max(1, count)
        self.folder = _usable(folder) if folder is not None else None
        self._free = threading.Semaphore(self.count)
        self._lock = threading.Lock()
        self._waiting = 0

    @property
    def waiting(self) -> int:
        with self._lock:
            return self._waiting

    @contextlib.contextmanager
    def hold(self) -> Iterator[None]:
        """Wait for a core; hold it until the block ends."""
        with self._lock:
            self._waiting += 1
        try:
            self._free.acquire()
            try:
                fd = self._lock_one()
            except BaseException:
                self._free.release()
                raise
        finally:
            with self._lock:
                self._waiting -= 1
        try:
            yield
        finally:
            if fd is not None:
                os.close(fd)  # releases the lock
            self._free.release()

    def _lock_one(self) -> int | None:
        """The lock file of a core no other process holds, open and locked; None without a
        folder."""
        if self.folder is None:
            return None
        wake = threading.Event()
        began = time.monotonic()
        said = False
        while True:
            for number in range(self.count):
                fd = _try_lock(self.folder / f"core-{number}")
                if fd is not None:
                    if said:
                        log.warning("a core is free after %.1f s", time.monotonic() - began)
                    return fd
            if not said and time.monotonic() - began >= _SAY_AFTER_S:
                said = True
                log.warning("%s", _held_by_others(self.folder, self.count))
            wake.wait(_POLL_S)


def _held_by_others(folder: Path, count: int) -> str:
    """Whose core locks a run waits for: the processes holding the `count` in `folder`."""
    holders = sorted({_holder(folder / f"core-{n}") for n in range(count)})
    return (
        f"waiting for a core: the {count} core lock(s) in {folder} are held by this user's "
        f"other hazmat processes ({', '.join(holders)}), which measure their own runs on the "
        "CPU clock; this run starts when one of them ends"
    )


def _try_lock(path: Path) -> int | None:
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        log.warning("cannot open the core lock %s: %s", path, exc)
        raise
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    try:  # who holds it, for a waiter to say (`_held_by_others`)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    except OSError:
        pass
    return fd


def _holder(path: Path) -> str:
    """The process that wrote its id into a core's lock file: `pid 1234 (hazmat serve)`."""
    try:
        pid = int(path.read_text().strip())
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except (OSError, ValueError):
        return "a process that did not say"
    if pid == os.getpid():
        return f"pid {pid} (this process)"
    words = [Path(arg.decode(errors="replace")).name for arg in argv[:3] if arg]
    return f"pid {pid} ({' '.join(words)})"


def _usable(folder: Path) -> Path | None:
    """`folder`, made if missing (mode 0700); None, with a warning, when it cannot be used or
    is not this user's own (then only this process's runs are counted)."""
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = folder.lstat()
    except OSError as exc:
        log.warning("core locks: cannot use %s (%s); counting this process's runs only",
                    folder, exc)  # fmt: skip
        return None
    if not folder.is_dir() or folder.is_symlink() or info.st_uid != os.getuid():
        log.warning("core locks: %s is not this user's own folder; counting this process's "
                    "runs only", folder)  # fmt: skip
        return None
    return folder
