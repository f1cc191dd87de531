"""Paused sessions, kept on the host's disk until they are resumed or expire.

A pause (sessions.py) leaves two things: what the session was (`Paused`: its language, trust,
runtime, image, owner, and which Python variables were saved) and its working directory as a
tar archive made inside the sandbox. The store keeps both, encrypted with AES-GCM under a key
of its own (`key`, made on first use, mode 0600, beside them), each file bound to its session
id and owner, so a file moved to another id or owner, or changed, does not decrypt. Files are
written atomically (a temporary name, then rename) with mode 0600 in a directory of mode 0700.

What this protects: copies of the store without its key (a backup, another tenant's reach
through hazmat's own API, which names a session only within its owner). What it does not: root
on the host, who can read the key. The archive is never unpacked on the host: it goes back,
as it came, into a fresh sandbox of the same owner.

    store = SessionStore(Path("~/.local/state/hazmat/sessions"), keep_s=7 * 86400)
    store.put(paused, archive)
    paused, archive = store.get("s-0123456789abcdef", owner="tenant:acme")
    store.remove("s-0123456789abcdef")
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from hazmat._exceptions import InfraError, SessionNotFound

__all__ = ["Paused", "SessionStore", "default_store_dir"]

_ID = re.compile(r"s-[0-9a-f]{16}\Z")


def default_store_dir() -> Path:
    """`$HAZMAT_SESSIONS_DIR`, else `$XDG_STATE_HOME/hazmat/sessions`."""
    explicit = os.environ.get("HAZMAT_SESSIONS_DIR")
    if explicit:
        return Path(explicit)
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "hazmat" / "sessions"


@dataclass(frozen=True)
class Paused:
    """A paused session: what it was, and what of it was kept."""

    id: str
    language: str
    trust: str
    runtime: str
    image: str | None  # as the session was asked for (None: the level's default)
    caller: str | None
    owner: str | None  # the tenant whose key paused it (None: the Python API)
    paused_at: float
    archive_bytes: int
    saved: tuple[str, ...] = ()  # Python's variables saved with the files
    lost: Mapping[str, str] = field(default_factory=dict)  # the others, and why

    def info(self, keep_s: float) -> dict[str, Any]:
        """What a front-end shows about it."""
        return {
            "id": self.id,
            "state": "paused",
            "language": self.language,
            "trust": self.trust,
            "runtime": self.runtime,
            "image": self.image,
            "paused_at": round(self.paused_at, 3),
            "expires_at": round(self.paused_at + keep_s, 3),
            "archive_bytes": self.archive_bytes,
            "variables": {"saved": list(self.saved), "lost": dict(self.lost)},
        }


class SessionStore:
    """Paused sessions in a directory (created on first use); see the module's docstring."""

    def __init__(self, directory: Path, keep_s: float) -> None:
        self.directory = directory.expanduser()
        self.keep_s = keep_s

    def put(self, paused: Paused, archive: bytes) -> None:
        aead = AESGCM(self._key())
        bound = _bound(paused.id, paused.owner)
        meta = json.dumps({**asdict(paused), "lost": dict(paused.lost)}).encode()
        self._write(f"{paused.id}.tar", _seal(aead, archive, bound + b"tar"))
        self._write(f"{paused.id}.json", _seal(aead, meta, bound + b"json"))

    def get(self, session_id: str, owner: str | None) -> tuple[Paused, bytes]:
        """The paused session and its archive; `SessionNotFound` if there is none for this
        owner (another owner's looks the same), or it expired."""
        paused = self.info(session_id, owner)
        try:
            sealed = self._read(f"{session_id}.tar")
            archive = _open(AESGCM(self._key()), sealed, _bound(session_id, owner) + b"tar")
        except (FileNotFoundError, InvalidTag):
            raise InfraError(
                f"paused session {session_id}: its files in {self.directory} are missing or "
                "damaged (changed, or not written by this store)"
            ) from None
        return paused, archive

    def info(self, session_id: str, owner: str | None) -> Paused:
        if not _ID.match(session_id):
            raise SessionNotFound(f"no paused session {session_id!r}")
        try:
            sealed = self._read(f"{session_id}.json")
            data = json.loads(
                _open(AESGCM(self._key()), sealed, _bound(session_id, owner) + b"json")
            )
        except (FileNotFoundError, InvalidTag):
            raise SessionNotFound(f"no paused session {session_id!r}") from None
        paused = Paused(**{**data, "saved": tuple(data["saved"])})
        if paused.paused_at + self.keep_s <= time.time():
            self.remove(session_id)
            raise SessionNotFound(f"paused session {session_id!r} expired") from None
        return paused

    def remove(self, session_id: str) -> None:
        for suffix in (".json", ".tar"):
            with contextlib.suppress(FileNotFoundError):
                (self.directory / f"{session_id}{suffix}").unlink()

    def sweep(self) -> list[str]:
        """Remove the paused sessions kept longer than `keep_s` (by their files' age)."""
        if not self.directory.is_dir():
            return []
        gone = []
        cutoff = time.time() - self.keep_s
        for path in self.directory.glob("s-*.json"):
            with contextlib.suppress(FileNotFoundError):
                if path.stat().st_mtime <= cutoff:
                    self.remove(path.stem)
                    gone.append(path.stem)
        return gone

    def _key(self) -> bytes:
        path = self.directory / "key"
        with contextlib.suppress(FileNotFoundError):
            return _key_from(path.read_bytes(), path)
        self._write("key", AESGCM.generate_key(bit_length=256), exclusive=True)
        return _key_from(path.read_bytes(), path)

    def _read(self, name: str) -> bytes:
        return (self.directory / name).read_bytes()

    def _write(self, name: str, data: bytes, exclusive: bool = False) -> None:
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        final = self.directory / name
        temporary = self.directory / f".{name}.{secrets.token_hex(4)}"
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        if exclusive:  # the key: the first writer's wins, a racing one's is dropped
            with contextlib.suppress(FileExistsError):
                os.link(temporary, final)
            temporary.unlink()
        else:
            os.replace(temporary, final)


def _key_from(data: bytes, path: Path) -> bytes:
    if len(data) != 32:
        raise InfraError(f"the paused sessions' key {path} is damaged ({len(data)} bytes, not 32)")
    return data


def _bound(session_id: str, owner: str | None) -> bytes:
    return f"hazmat paused session\n{session_id}\n{owner or ''}\n".encode()


def _seal(aead: AESGCM, data: bytes, bound: bytes) -> bytes:
    nonce = secrets.token_bytes(12)
    return nonce + aead.encrypt(nonce, data, bound)


def _open(aead: AESGCM, sealed: bytes, bound: bytes) -> bytes:
    return aead.decrypt(sealed[:12], sealed[12:], bound)
