"""What the CLI may trust as the user's own before it sends a key and code there: a socket it
found by convention (the default service socket, a local server's), and the folders it sits in.

A socket is used only if it is a socket of the user's (`lstat`, never following a link), in a
folder of the user's that nobody else may write to, under folders that each belong to the user
or to root and that nobody else may write to either (a sticky folder such as /tmp excepted: in
it, nobody can rename or remove what is the user's). Anything else could be another user's,
or be replaced by theirs between the check and the connection, and is refused with what to do,
before any connection. `private=True` also closes the folder itself to others (mode 0700):
the local server keeps its key there. Standard library only: this runs before every
`hazmat run`.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from hazmat._exceptions import InfraError

__all__ = ["make_own_folder", "own_folder", "own_socket"]

_WRITABLE = stat.S_IWGRP | stat.S_IWOTH


def own_socket(path: Path, what_to_do: str) -> Path | None:
    """`path` if it is a socket of the user's in folders only the user (or root) controls;
    None if nothing is there; `InfraError` naming what is not the user's otherwise (its
    message ends with `what_to_do`)."""
    try:
        seen = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:  # a folder above it closed to the user: another user's
        raise _unreadable(path, exc, what_to_do) from None
    own_folder(path.parent, what_to_do)
    if not stat.S_ISSOCK(seen.st_mode) or seen.st_uid != os.geteuid():
        raise InfraError(
            f"{path} is not a socket of yours (uid {seen.st_uid}): refused; {what_to_do}"
        )
    return path


def make_own_folder(folder: Path, what_to_do: str) -> None:
    """`folder`, made (each missing folder mode 0700) if the folders above it are such that
    no other user can change them, and checked as `own_folder(private=True)`."""
    folder = folder.absolute()
    missing = [path for path in _chain(folder) if not os.path.lexists(path)]
    if missing:
        for above in _chain(missing[0].parent):
            _check_above(above, what_to_do)
        for path in missing:
            try:
                os.mkdir(path, 0o700)
            except FileExistsError:  # another `hazmat run` made it first
                pass
            except OSError as exc:
                raise _unreadable(path, exc, what_to_do) from None
    own_folder(folder, what_to_do, private=True)


def own_folder(folder: Path, what_to_do: str, private: bool = False) -> None:
    """`InfraError` unless `folder` is the user's, closed to others' writes (with `private`:
    mode 0700), under folders none of which another user can change."""
    folder = folder.absolute()
    for above in (*_chain(folder.parent), *_chain(Path(os.path.realpath(folder.parent)))):
        _check_above(above, what_to_do)
    try:
        seen = os.lstat(folder)
    except OSError as exc:
        raise _unreadable(folder, exc, what_to_do) from None
    if not stat.S_ISDIR(seen.st_mode) or seen.st_uid != os.geteuid():
        raise InfraError(
            f"{folder} is not a folder of yours (uid {seen.st_uid}): refused; {what_to_do}"
        )
    if seen.st_mode & (0o077 if private else _WRITABLE):
        mode = stat.S_IMODE(seen.st_mode)
        raise InfraError(
            f"{folder} is open to others (mode {mode:o}): refused; `chmod 700 {folder}`, "
            f"or {what_to_do}"
        )


def _chain(folder: Path) -> list[Path]:
    """`folder` and every folder above it, the root first."""
    return [*reversed(folder.parents), folder]


def _check_above(folder: Path, what_to_do: str) -> None:
    try:
        seen = os.lstat(folder)
    except OSError as exc:
        raise _unreadable(folder, exc, what_to_do) from None
    if seen.st_uid not in (0, os.geteuid()):
        raise InfraError(
            f"{folder} belongs to another user (uid {seen.st_uid}), who could replace what is "
            f"in it: refused; {what_to_do}"
        )
    if stat.S_ISLNK(seen.st_mode):
        return  # only its owner (the user or root) can change it; its target is checked too
    if seen.st_mode & _WRITABLE and not seen.st_mode & stat.S_ISVTX:
        mode = stat.S_IMODE(seen.st_mode)
        raise InfraError(
            f"{folder} can be written by others (mode {mode:o}), who could replace what is "
            f"in it: refused; {what_to_do}"
        )


def _unreadable(path: Path, exc: OSError, what_to_do: str) -> InfraError:
    """A path the user cannot look at or make (a folder above it is another user's, closed to
    this one: `su` keeps the other user's XDG_RUNTIME_DIR): refused, never a traceback."""
    return InfraError(f"cannot use {path}: {exc.strerror or exc}: refused; {what_to_do}")
