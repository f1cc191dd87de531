"""Writing a run's output files under a directory on the host, without following symlinks.

The directory is checked before the run (`prepare`), so a bad `--output-dir` costs nothing.
Each file is then written relative to an open descriptor of that directory: every folder on
the way is opened with `O_NOFOLLOW`, and the file itself is created with `O_NOFOLLOW`, so a
symbolic link planted in the directory (by anyone, at any time) is refused, never followed.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Mapping
from pathlib import Path

from hazmat._exceptions import InputError, quoted
from hazmat.options.checks import check_path

__all__ = ["prepare", "save"]

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC


def prepare(directory: Path, option: str = "--output-dir") -> None:
    """Make sure `directory` is (or can be made) a writable folder; `InputError` otherwise."""
    name = f"{option} {quoted(str(directory))}"
    if directory.is_symlink() and not directory.is_dir():
        raise InputError(f"{name} is a broken symbolic link")
    if directory.exists() and not directory.is_dir():
        raise InputError(f"{name} exists and is not a directory")
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"{name} cannot be created: {exc.strerror or exc}") from None
    if not os.access(directory, os.W_OK | os.X_OK):
        raise InputError(f"{name} is not writable")


def save(directory: Path, files: Mapping[str, bytes]) -> list[str]:
    """Write each file under `directory`; returns one message per file that was not written."""
    problems = []
    for name, data in files.items():
        try:
            _write(directory, check_path(name), data)
        except (OSError, InputError) as exc:
            problems.append(f"output file {quoted(name)} not written: {_reason(exc)}")
    return problems


def _write(directory: Path, name: str, data: bytes) -> None:
    *folders, leaf = name.split("/")
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for folder in folders:
            with contextlib.suppress(FileExistsError):
                os.mkdir(folder, 0o755, dir_fd=fd)
            inner = os.open(folder, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = inner
        # not blocking: a FIFO in the way fails at once (ENXIO) instead of waiting for a reader
        out = os.open(leaf, _FILE_FLAGS | os.O_NONBLOCK, 0o644, dir_fd=fd)
        try:
            if not stat.S_ISREG(os.fstat(out).st_mode):
                raise InputError(_NOT_A_FILE)
            os.set_blocking(out, True)
            view = memoryview(data)
            while view:
                view = view[os.write(out, view) :]
        finally:
            os.close(out)
    finally:
        os.close(fd)


_NOT_A_FILE = "a FIFO, a device or a socket is in the way (hazmat writes only regular files there)"


def _reason(exc: Exception) -> str:
    if isinstance(exc, OSError) and exc.errno == errno.ENXIO:
        return _NOT_A_FILE
    if isinstance(exc, OSError) and exc.errno in (errno.ELOOP, errno.ENOTDIR):
        return "a symbolic link or a non-folder is in the way (hazmat never follows links there)"
    if isinstance(exc, OSError):
        return exc.strerror or str(exc)
    return str(exc)
