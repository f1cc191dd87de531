"""Paused sessions, kept on the host's disk until they are resumed or expire.

A pause (sessions/) leaves two things: what the session was (`Paused`: its language, trust,
runtime, image, owner, and which Python variables were saved) and its working directory as a
tar archive made inside the sandbox. The store keeps both, encrypted with AES-GCM under a key
of its own (`key`, made on first use, mode 0600, beside them), each file bound to its session
id and owner, so a file moved to another id or owner, or changed, does not decrypt. Files are
written atomically (a temporary name, then rename) with mode 0600 in a directory of mode 0700.

What this protects: copies of the store without its key (a backup, another tenant's reach
through hazmat's own API, which names a session only within its owner). What it does not: root
on the host, who can read the key. The archive is never unpacked on the host: it goes back,
as it came, into a fresh sandbox of the same owner.

Where the sealed bytes lie is the store's *shelf*: its directory (`DirectoryShelf`, the
default), or the cluster's Redis (cluster/paused.py), so that any service of the cluster can
resume a session another one paused. The key stays in the directory in either case: every
service that is to resume another's sessions is given the same key file (docs/scale.md); a
service with another key is told so, by the key's id kept beside the sealed parts. A resume
first *claims* the id on the shelf, so that two services cannot resume it together.

    store = SessionStore(Path("~/.local/state/hazmat/sessions"), keep_s=7 * 86400)
    store.put(paused, archive)
    with store.claim("s-0123456789abcdef"):
        paused, archive = store.get("s-0123456789abcdef", owner="tenant:acme")
        store.remove("s-0123456789abcdef")
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import secrets
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from hazmat._exceptions import InfraError, SessionNotFound, quoted

__all__ = ["DirectoryShelf", "Paused", "SessionStore", "Shelf", "default_store_dir"]

_ID = re.compile(r"s-[0-9a-f]{16}\Z")


def default_store_dir() -> Path:
    """`$HAZMAT_SESSIONS_DIR`, else `$XDG_STATE_HOME/hazmat/sessions`."""
    explicit = os.environ.get("HAZMAT_SESSIONS_DIR")
    if explicit:
        return Path(explicit)
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "hazmat" / "sessions"


SCANNED = 2000  # the most paused sessions `SessionStore.listing` looks at


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
    # Python's packages installed in it (in /tmp, not kept): installed again on resume
    packages: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        """Its fields as JSON can hold them (`from_dict` reads them back)."""
        return {
            **asdict(self),
            "saved": list(self.saved),
            "lost": dict(self.lost),
            "packages": list(self.packages),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Paused:
        packages = tuple(data.get("packages", ()))  # none in a pause kept before they were
        saved, lost = tuple(data["saved"]), dict(data["lost"])
        return cls(**{**data, "saved": saved, "lost": lost, "packages": packages})

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


class Shelf(Protocol):
    """Where a store's sealed parts lie: "json" (what the session was), "tar" (its files) and
    "key" (the id of the key that sealed them), each under the session's id."""

    def read(self, session_id: str, part: str) -> bytes:
        """The part's bytes; `FileNotFoundError` if it is not there."""
        ...

    def write(self, session_id: str, parts: Mapping[str, bytes], keep_s: float) -> None: ...

    def remove(self, session_id: str) -> None: ...

    def sweep(self, keep_s: float) -> list[str]:
        """Remove what is kept longer than `keep_s`; the ids."""
        ...

    def claim(self, session_id: str) -> contextlib.AbstractContextManager[None]:
        """Held while one resume of the id runs; `SessionBusy` if another holds it."""
        ...

    def ids(self) -> list[str]:
        """The ids of the sessions on it, sorted (the console's list of paused sessions)."""
        ...


class SessionStore:
    """Paused sessions, sealed with the key in `directory` (made there on first use) and kept on
    `shelf` (by default in that directory too); see the module's docstring."""

    def __init__(self, directory: Path, keep_s: float, shelf: Shelf | None = None) -> None:
        self.directory = directory.expanduser()
        self.keep_s = keep_s
        self.shelf = shelf or DirectoryShelf(self.directory)

    def on(self, shelf: Shelf) -> SessionStore:
        """The same store (directory, key, keep) with its sessions on another shelf."""
        return SessionStore(self.directory, self.keep_s, shelf)

    def put(self, paused: Paused, archive: bytes) -> None:
        key = self._key()
        aead = AESGCM(key)
        bound = _bound(paused.id, paused.owner)
        meta = json.dumps(paused.as_dict()).encode()
        parts = {
            "tar": _seal(aead, archive, bound + b"tar"),
            "json": _seal(aead, meta, bound + b"json"),
            "key": _key_id(key),
        }
        self.shelf.write(paused.id, parts, self.keep_s)

    def claim(self, session_id: str) -> contextlib.AbstractContextManager[None]:
        """Hold it around `get` and `remove` of a resume (`SessionBusy` while another has it)."""
        return self.shelf.claim(session_id)

    def get(self, session_id: str, owner: str | None) -> tuple[Paused, bytes]:
        """The paused session and its archive; `SessionNotFound` if there is none for this
        owner (another owner's looks the same), or it expired."""
        paused = self.info(session_id, owner)
        try:
            sealed = self.shelf.read(session_id, "tar")
            archive = _open(AESGCM(self._key()), sealed, _bound(session_id, owner) + b"tar")
        except (FileNotFoundError, InvalidTag):
            raise InfraError(
                f"paused session {session_id}: its files in {self.shelf} are missing or "
                "damaged (changed, or not written by this store)"
            ) from None
        return paused, archive

    def info(self, session_id: str, owner: str | None) -> Paused:
        if not _ID.match(session_id):
            raise SessionNotFound(f"no paused session {quoted(session_id)}")
        key = self._key()
        try:
            sealed = self.shelf.read(session_id, "json")
        except FileNotFoundError:
            raise SessionNotFound(f"no paused session {quoted(session_id)}") from None
        try:
            data = json.loads(_open(AESGCM(key), sealed, _bound(session_id, owner) + b"json"))
        except InvalidTag:
            self._check_key(session_id, key)
            raise SessionNotFound(f"no paused session {quoted(session_id)}") from None
        paused = Paused.from_dict(data)
        if paused.paused_at + self.keep_s <= time.time():
            self.remove(session_id)
            raise SessionNotFound(f"paused session {quoted(session_id)} expired") from None
        return paused

    def remove(self, session_id: str) -> None:
        self.shelf.remove(session_id)

    def sweep(self) -> list[str]:
        """Remove the paused sessions kept longer than `keep_s`."""
        return self.shelf.sweep(self.keep_s)

    def listing(self, owners: Iterable[str | None], most: int = 200) -> list[Paused]:
        """The paused sessions of `owners` (at most `most`): each id is opened with each owner
        in turn, since only its own owner opens it; those of another key or damaged are left
        out, as are those no owner given opens. At most `SCANNED` ids are tried."""
        found: list[Paused] = []
        owners = list(owners)
        for session_id in self.shelf.ids()[:SCANNED]:
            for owner in owners:
                with contextlib.suppress(SessionNotFound, InfraError):
                    found.append(self.info(session_id, owner))
                    break
            if len(found) >= most:
                break
        return found

    def _check_key(self, session_id: str, key: bytes) -> None:
        """A part that does not open: another owner's (which must look like nothing), or one
        sealed by a service with another key, which is the operator's to fix."""
        with contextlib.suppress(FileNotFoundError):
            sealed_by = self.shelf.read(session_id, "key")
            if sealed_by != _key_id(key):
                raise InfraError(
                    f"paused session {session_id} was sealed with another key than "
                    f"{self.directory / 'key'} (id {sealed_by.decode(errors='replace')}, this "
                    f"one {_key_id(key).decode()}): give every service that resumes the "
                    "cluster's sessions the same key file (docs/scale.md)"
                )

    def _key(self) -> bytes:
        path = self.directory / "key"
        with contextlib.suppress(FileNotFoundError):
            return _key_from(path.read_bytes(), path)
        _write(self.directory, "key", AESGCM.generate_key(bit_length=256), exclusive=True)
        return _key_from(path.read_bytes(), path)


class DirectoryShelf:
    """Sealed parts as files `<id>.<part>` of mode 0600 in a directory of mode 0700, written
    atomically. A claim is the process's own: one service resumes from one directory."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def __str__(self) -> str:
        return str(self.directory)

    def read(self, session_id: str, part: str) -> bytes:
        return (self.directory / f"{session_id}.{part}").read_bytes()

    def write(self, session_id: str, parts: Mapping[str, bytes], keep_s: float) -> None:
        for part in sorted(parts, key=lambda name: name == "json"):  # what it was, last
            _write(self.directory, f"{session_id}.{part}", parts[part])

    def remove(self, session_id: str) -> None:
        for part in ("json", "tar", "key"):
            with contextlib.suppress(FileNotFoundError):
                (self.directory / f"{session_id}.{part}").unlink()

    def sweep(self, keep_s: float) -> list[str]:
        if not self.directory.is_dir():
            return []
        gone = []
        cutoff = time.time() - keep_s
        for path in self.directory.glob("s-*.json"):
            with contextlib.suppress(FileNotFoundError):
                if path.stat().st_mtime <= cutoff:
                    self.remove(path.stem)
                    gone.append(path.stem)
        return gone

    @contextlib.contextmanager
    def claim(self, session_id: str) -> Iterator[None]:
        yield  # the sandbox resumes one id at a time; no other process uses this directory

    def ids(self) -> list[str]:
        return sorted(path.stem for path in self.directory.glob("s-*.json"))


def _write(directory: Path, name: str, data: bytes, exclusive: bool = False) -> None:
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    final = directory / name
    temporary = directory / f".{name}.{secrets.token_hex(4)}"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
    except BaseException:
        temporary.unlink(missing_ok=True)  # a failed write leaves no temporary file behind
        raise
    if exclusive:  # the key: the first writer's wins, a racing one's is dropped
        with contextlib.suppress(FileExistsError):
            os.link(temporary, final)
        temporary.unlink()
    else:
        os.replace(temporary, final)


def _key_id(key: bytes) -> bytes:
    """Names the key without giving it away: the first 8 bytes of its SHA-256, in hex."""
    return hashlib.sha256(b"hazmat sessions key\n" + key).hexdigest()[:16].encode()


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
