"""The host's cache of downloaded package files, each under the SHA-256 of its content:
`<dir>/<sha256>/<file name>`. Only the host writes it (a file is checked against its hash before
it is kept, and written whole under a temporary name first); no sandbox ever mounts it, so a
sandbox can neither change a file another session will install nor learn what others asked."""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from pathlib import Path

from hazmat._exceptions import InfraError

__all__ = ["WheelCache", "check_file_name"]

# a wheel's file name (PEP 427): no folder, no hidden name, nothing a shell or tar would read
FILE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+!-]{0,199}\.whl")
SHA256 = re.compile(r"[0-9a-f]{64}")


def check_file_name(name: str) -> bool:
    return FILE_NAME.fullmatch(name) is not None


class WheelCache:
    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def get(self, sha256: str) -> tuple[str, bytes] | None:
        """The file kept under `sha256` (its name and content), if it is there and whole."""
        if not SHA256.fullmatch(sha256):
            return None
        folder = self.directory / sha256
        try:
            names = [p for p in folder.iterdir() if check_file_name(p.name)]
            if len(names) != 1:
                return None
            data = names[0].read_bytes()
        except OSError:
            return None
        if hashlib.sha256(data).hexdigest() != sha256:
            return None  # damaged on disk: fetched again
        return names[0].name, data

    def hashes(self) -> list[str]:
        """Every hash the cache holds a file for."""
        try:
            return sorted(p.name for p in self.directory.iterdir() if SHA256.fullmatch(p.name))
        except OSError:
            return []

    def put(self, name: str, data: bytes) -> str:
        """Keep `data` as `name`; its SHA-256."""
        if not check_file_name(name):
            raise InfraError(f"the package download sent a file named {name!r}: not kept")
        digest = hashlib.sha256(data).hexdigest()
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
