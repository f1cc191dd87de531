"""Every member of a package file checked on the host before anything of it is written
anywhere: a wheel's (a zip that pip unpacks into the session) and an npm tarball's. A member's
path, as the reader will take it, must be relative and plain: no leading `/`, no empty part
(`//`), no `.` or `..` part, no backslash, no NUL or control character; and a member must be a
regular file or a folder (no symbolic or hard link, device or FIFO). A package with one member
that is not is refused whole (`InstallRefused`).

An npm tarball is not unpacked as it came: its members lose their first part (`package/`, as
npm does) on the host, are checked after that, and go into a new tarball of regular files and
folders at those plain paths, which the session unpacks as it is (install_npm.js). GNU tar's
own `--strip-components` leaves `package//work/x` as `/work/x`, an absolute path."""

from __future__ import annotations

import io
import re
import stat
import tarfile
import zipfile
from collections.abc import Iterator

from hazmat._exceptions import InfraError, InstallRefused, quoted

__all__ = ["npm_tree", "unpacked_size"]

_PLAIN = re.compile(r"[^\x00-\x1f\x7f\\]+")


def check_path(path: str, package: str) -> str:
    """`path` if it is a plain relative path; `InstallRefused` naming the package if not."""
    parts = path.split("/")
    if not _PLAIN.fullmatch(path) or any(part in ("", ".", "..") for part in parts):
        raise InstallRefused(
            f"{package}: its member {quoted(path)} is not a plain relative path (absolute, "
            "`..`, `//` or a control character): the package would write outside its place; "
            "not installed"
        )
    return path


def unpacked_size(data: bytes, name: str) -> int:
    """The bytes the package takes unpacked, every member checked first (nothing is read)."""
    try:
        if name.endswith(".tgz"):
            return sum(member.size for _, member, _ in _npm_members(data, name))
        return sum(_wheel_members(data, name))
    except (zipfile.BadZipFile, tarfile.TarError, OSError, EOFError) as exc:
        raise InfraError(f"a downloaded package ({name}) cannot be read: {exc}") from None


def npm_tree(data: bytes, name: str) -> bytes:
    """The npm tarball's files and folders at their plain paths, first part removed, in a new
    gzipped tarball of regular files (0644, or 0755 where any execute bit was set) and
    folders (0755) owned by nobody in particular. Call it after `unpacked_size`."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz", compresslevel=6) as tree:
        for path, member, tarball in _npm_members(data, name):
            info = tarfile.TarInfo(path)
            if member.isdir():
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                tree.addfile(info)
                continue
            info.size, info.mode = member.size, 0o755 if member.mode & 0o111 else 0o644
            tree.addfile(info, tarball.extractfile(member))
    return out.getvalue()


def _npm_members(data: bytes, name: str) -> Iterator[tuple[str, tarfile.TarInfo, tarfile.TarFile]]:
    """Each member's path without its first part, the member and its tarball; the top folder
    itself (`package/`) and anything at the top (npm drops both) are left out."""
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tarball:
        for member in tarball:
            if not (member.isfile() or member.isdir()):
                raise InstallRefused(
                    f"{name}: its member {quoted(member.name)} is a link or a special file: "
                    "not installed (only files and folders are)"
                )
            whole = check_path(member.name.removeprefix("./"), name)
            path = whole.partition("/")[2]
            if path:
                yield check_path(path, name), member, tarball


def _wheel_members(data: bytes, name: str) -> Iterator[int]:
    with zipfile.ZipFile(io.BytesIO(data)) as wheel:
        seen: set[str] = set()
        for info in wheel.infolist():
            kind = stat.S_IFMT(info.external_attr >> 16)
            if kind not in (0, stat.S_IFREG, stat.S_IFDIR):
                raise InstallRefused(
                    f"{name}: its member {quoted(info.filename)} is a link or a special file: "
                    "not installed (only files and folders are)"
                )
            path = check_path(info.filename.removesuffix("/"), name)
            if path in seen:
                raise InstallRefused(f"{name}: its member {quoted(path)} is there twice")
            seen.add(path)
            yield info.file_size
