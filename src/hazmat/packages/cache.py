"""The host's cache of downloaded package files, each under the digest of its content:
`<dir>/python/<sha256>/<file name>` for wheels, `<dir>/npm/<sha512>/<file name>` for npm's
tarballs (the digest each index lists: a wheel's link carries its SHA-256, an npm package its
SHA-512 `integrity`). Only the host writes it (a file is checked against its digest before it
is kept, and written whole under a temporary name first); no sandbox ever mounts it or is told
what it holds, so a sandbox can neither change a file another session will install nor learn
what others asked. A file is "cached" only when its bytes match its digest as it is read: one
damaged on disk, or gone with its folder left, is fetched again and the folder repaired."""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from pathlib import Path

from hazmat._exceptions import InfraError

__all__ = ["FileCache", "check_file_name"]

# a package file's name: no folder, no hidden name, nothing a shell or tar would read
FILE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+!-]{0,199}\.(?:whl|tgz)")
ALGORITHMS = {"python": "sha256", "npm": "sha512"}


def check_file_name(name: str) -> bool:
    return FILE_NAME.fullmatch(name) is not None


class FileCache:
    def __init__(self, directory: Path, kind: str) -> None:
        self.directory = directory / kind
        self.algorithm = ALGORITHMS[kind]
        self._digest = re.compile(f"[0-9a-f]{{{hashlib.new(self.algorithm).digest_size * 2}}}")

    def digest(self, data: bytes) -> str:
        return hashlib.new(self.algorithm, data).hexdigest()

    def is_digest(self, text: str) -> bool:
        """Whether `text` is a digest in this cache's algorithm (lower-case hex)."""
        return self._digest.fullmatch(text) is not None

    def get(self, digest: str) -> tuple[str, bytes] | None:
        """The file kept under `digest` (its name and content), if one there is whole."""
        if not self.is_digest(digest):
            return None
        try:
            paths = sorted(p for p in (self.directory / digest).iterdir() if p.is_file())
        except OSError:
            return None
        for path in paths:
            if check_file_name(path.name):
                try:
                    data = path.read_bytes()
                except OSError:
                    continue
                if self.digest(data) == digest:
                    return path.name, data
        return None  # missing or damaged: fetched again

    def put(self, name: str, data: bytes) -> str:
        """Keep `data` as `name` (replacing whatever is in its folder); its digest."""
        if not check_file_name(name):
            raise InfraError(f"the package download sent a file named {name!r}: not kept")
        digest = self.digest(data)
        folder = self.directory / digest
        try:
            folder.mkdir(parents=True, exist_ok=True, mode=0o755)
            fd, temporary = tempfile.mkstemp(dir=folder, prefix=".part-")
            with os.fdopen(fd, "wb") as out:
                out.write(data)
            os.chmod(temporary, 0o644)
            os.replace(temporary, folder / name)
            for other in folder.iterdir():  # a damaged copy under another name
                if other.name != name and check_file_name(other.name):
                    other.unlink(missing_ok=True)
        except OSError as exc:
            raise InfraError(f"cannot keep a downloaded package in {folder}: {exc}") from exc
        return digest
