"""The host's cache of downloaded package files, each under the digest of its content:
`<dir>/python/<sha256>/<file name>` for wheels, `<dir>/npm/<sha512>/<file name>` for npm's
tarballs (the digest each index lists: a wheel's link carries its SHA-256, an npm package its
SHA-512 `integrity`). Only the host writes it (a file is checked against its digest before it
is kept, and written whole under a temporary name first); no sandbox ever mounts it, so a
sandbox can neither change a file another session will install nor learn what others asked."""

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

    def get(self, digest: str) -> tuple[str, bytes] | None:
        """The file kept under `digest` (its name and content), if it is there and whole."""
        if not self._digest.fullmatch(digest):
            return None
        try:
            names = [p for p in (self.directory / digest).iterdir() if check_file_name(p.name)]
            if len(names) != 1:
                return None
            data = names[0].read_bytes()
        except OSError:
            return None
        if self.digest(data) != digest:
            return None  # damaged on disk: fetched again
        return names[0].name, data

    def digests(self) -> list[str]:
        """Every digest the cache holds a file for."""
        try:
            names = [p.name for p in self.directory.iterdir()]
        except OSError:
            return []
        return sorted(name for name in names if self._digest.fullmatch(name))

    def put(self, name: str, data: bytes) -> str:
        """Keep `data` as `name`; its digest."""
        if not check_file_name(name):
            raise InfraError(f"the package download sent a file named {name!r}: not kept")
        digest = self.digest(data)
        folder = self.directory / digest
        try:
            folder.mkdir(parents=True, exist_ok=True, mode=0o755)
            if (folder / name).exists():
                return digest
            fd, temporary = tempfile.mkstemp(dir=folder, prefix=".part-")
            with os.fdopen(fd, "wb") as out:
                out.write(data)
            os.chmod(temporary, 0o644)
            os.replace(temporary, folder / name)
        except OSError as exc:
            raise InfraError(f"cannot keep a downloaded package in {folder}: {exc}") from exc
        return digest
