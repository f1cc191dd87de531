"""The files of an audit log directory: their exact names, safe writes, the lock.

    origin                  the log's name, also the checkpoint signing key's name
    key.ed25519             the signing key (PEM, mode 0600)
    pubkey                  the verifier key (public): verifying needs no private key
    lock                    flock(2) target: one writer at a time, across processes
    segments/NNNNNN.jsonl   records, one canonical JSON line each
    segments/NNNNNN.leaves  an expired segment: its records' leaf hashes (32 bytes each)
    seals/NNNNNN.json       a sealed segment: signed checkpoint, final hash and frontier
    index/blocks            cached subtree hashes (a cache: rebuilt from the records if wrong)
    checkpoint              the latest signed checkpoint (C2SP signed note)

Names are exact: six digits from 000001. Anything else in `segments/` or `seals/` is not part
of the log and the verifier reports it (a `001.jsonl` must never shadow `000001.jsonl`).
"""

from __future__ import annotations

import errno
import fcntl
import logging
import os
import re
import stat
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

from hazmat._exceptions import AuditError

__all__ = [
    "CHECKPOINT",
    "ORIGIN",
    "PUBKEY",
    "Listing",
    "check_directory",
    "flocked",
    "fsync_dir",
    "io_message",
    "list_log",
    "published",
    "segment_name",
    "write_atomic",
    "write_fully",
]

_log = logging.getLogger(__name__)

CHECKPOINT = "checkpoint"  # the latest signed checkpoint, in a log's directory or an anchor's
ORIGIN = "origin"  # the log's name: a directory without it is no hazmat audit log
PUBKEY = "pubkey"  # the verifier key


def published(directory: Path) -> tuple[str, str] | None:
    """A log's latest signed checkpoint and its verifier key, as written; None before the
    first checkpoint."""
    try:
        note = (directory / CHECKPOINT).read_bytes()
        pubkey = (directory / PUBKEY).read_bytes()
    except FileNotFoundError:
        return None
    # damaged files are passed on as they are (replaced bytes never verify), never an error here
    return note.decode("utf-8", "replace"), pubkey.decode("utf-8", "replace").strip()


_SEGMENT = re.compile(r"([0-9]{6})\.(jsonl|leaves)")
_SEAL = re.compile(r"([0-9]{6})\.json")
_TEMP = re.compile(r"\.[^/]*\.tmp")  # our own mkstemp leftovers (a crash mid-write)


def segment_name(number: int) -> str:
    return f"{number:06d}"


@dataclass
class Listing:
    """What the directory holds, by exact name."""

    segments: dict[int, Path] = field(default_factory=dict)  # NNNNNN.jsonl
    leaves: dict[int, Path] = field(default_factory=dict)  # NNNNNN.leaves (expired)
    seals: dict[int, Path] = field(default_factory=dict)
    unexpected: list[Path] = field(default_factory=list)

    @property
    def last(self) -> int:
        return max([*self.segments, *self.leaves, *self.seals], default=0)


def list_log(directory: Path) -> Listing:
    listing = Listing()
    for sub, pattern in (("segments", _SEGMENT), ("seals", _SEAL)):
        try:
            names = sorted(os.listdir(directory / sub))
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise AuditError(f"cannot list {directory / sub}: {io_message(exc)}") from None
        for name in names:
            path = directory / sub / name
            match = pattern.fullmatch(name)
            if match is None or int(match.group(1)) == 0:
                if not _TEMP.fullmatch(name):
                    listing.unexpected.append(path)
                continue
            number = int(match.group(1))
            if sub == "seals":
                listing.seals[number] = path
            elif match.group(2) == "jsonl":
                listing.segments[number] = path
            else:
                listing.leaves[number] = path
    return listing


def io_message(exc: OSError) -> str:
    """An OSError as a person reads it: "disk full (ENOSPC)", naming the errno."""
    code = exc.errno
    if code == errno.ENOSPC:
        return "disk full (ENOSPC)"
    if code == errno.EDQUOT:
        return "disk quota exceeded (EDQUOT)"
    name = errno.errorcode.get(code or 0, "")
    text = exc.strerror or str(exc)
    return f"{text} ({name})" if name else text


def check_directory(path: Path) -> None:
    """The log directory must belong to us and be closed to everyone else (mode 0700): a
    directory others can write lets them swap files under the writer, so it is refused; one
    others can only read (records hold code) is closed to them."""
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError as exc:
        raise AuditError(f"cannot use audit log directory {path}: {io_message(exc)}") from None
    if not stat.S_ISDIR(st.st_mode):
        raise AuditError(f"the audit log {path} is not a directory (a symlink is not accepted)")
    if st.st_uid != os.geteuid():
        raise AuditError(
            f"the audit log {path} belongs to uid {st.st_uid}, not to this process "
            f"(uid {os.geteuid()}); run hazmat as its owner or give it its own directory"
        )
    if st.st_mode & 0o022:
        raise AuditError(
            f"the audit log {path} is writable by other users (mode {st.st_mode & 0o777:o}), "
            f"so its files may have been swapped; check them, then run `chmod 700 {path}`"
        )
    if st.st_mode & 0o077:  # ours and only readable by others: close it (records hold code)
        os.chmod(path, 0o700)
        _log.warning("audit log %s was readable by other users; its mode is now 0700", path)


def write_fully(fd: int, data: bytes) -> None:
    """Write all of `data`: a short write is continued, and an error raised, never ignored."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        if written <= 0:  # pragma: no cover - os.write raises rather than returning 0
            raise OSError(errno.EIO, "write returned 0")
        view = view[written:]


def write_atomic(path: Path, data: bytes) -> None:
    """Replace `path` with `data`: a temp file of an unpredictable name, created exclusively
    (a planted symlink cannot redirect it), synced, renamed, and the directory synced."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        try:
            write_fully(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        with suppress(OSError):
            os.unlink(tmp)
        raise
    fsync_dir(path.parent)


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextmanager
def flocked(fd: int, path: Path, timeout: float, shared: bool = False) -> Iterator[None]:
    """Hold flock(2) on `fd`, waiting at most `timeout` seconds for another process."""
    mode = fcntl.LOCK_SH if shared else fcntl.LOCK_EX
    deadline = time.monotonic() + timeout
    delay = 0.001
    while True:
        try:
            fcntl.flock(fd, mode | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise AuditError(
                    f"another process has held the audit log lock {path} for {timeout:g} s; "
                    f"find it with `fuser -v {path}`"
                ) from None
            time.sleep(delay)  # polling the lock: flock(2) itself has no timeout
            delay = min(delay * 2, 0.005)
    try:
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
