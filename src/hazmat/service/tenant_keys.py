"""Tenants and their API keys, for the service.

A key is `hzm_<id>_<secret>`: the id finds the entry, the secret (256 random bits) is checked
against its SHA-256, stored, never the key itself (a key that random needs no slow hash: nothing
can be guessed from its digest). Each key belongs to a tenant and carries the trust level its
runs get at most, and its quotas. The store is one JSON file, mode 0600, rewritten atomically
under a lock; the service reads it again whenever it changes, so a revoked key stops working at
its next request without a restart.

    store = KeyStore(default_keys_path())
    key, secret = store.create("acme", TrustLevel.UNTRUSTED)   # the secret is shown once
    store.check(secret)   # -> the Key; AccessDenied when unknown or revoked
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import hashlib
import hmac
import json
import os
import re
import secrets
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hazmat._exceptions import AccessDenied, InputError, PolicyError, quoted
from hazmat.egress.secrets import CALLER, TENANT_NAME
from hazmat.policy import TrustLevel, parse_trust
from hazmat.service.quotas import Quotas

__all__ = ["Key", "KeyStore", "Quotas", "default_keys_path"]

PREFIX = "hzm_"
_NO_KEY = "0" * 64  # compared with when no key has the presented id: the same work
_KEY = re.compile(r"hzm_([0-9a-f]{12})_([A-Za-z0-9_-]{43})")


@dataclass(frozen=True)
class Key:
    id: str
    tenant: str
    trust: TrustLevel
    digest: str  # SHA-256 of the whole key, hex
    created: str
    quotas: Quotas = field(default_factory=Quotas)
    override: bool = False  # may its runs override a block (with a written reason)
    revoked: str | None = None
    # may it ask for runc at a level that runs under runsc: only the local server's key, which
    # is its user's own (cli/local_server.py), as in-process runs may
    any_runtime: bool = False
    # may it see every tenant's runs, batches, sessions and keys in the console (server/console);
    # its console sign-ins are recorded in the audit log (`console.operator`)
    operator: bool = False

    @property
    def caller(self) -> str:
        """How the audit log names this key's runs."""
        return CALLER.format(tenant=self.tenant, key=self.id)

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["trust"] = self.trust.value
        return data

    def public(self) -> dict[str, Any]:
        """What `keys list` shows: everything but the digest."""
        data = self.to_dict()
        del data["digest"]
        return data


def default_keys_path() -> Path:
    """`$HAZMAT_KEYS`, else `$XDG_STATE_HOME/hazmat/keys.json` (~/.local/state/hazmat/)."""
    explicit = os.environ.get("HAZMAT_KEYS")
    if explicit:
        return Path(explicit).expanduser()
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "hazmat" / "keys.json"


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8", "replace")).hexdigest()  # a key is ASCII


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class KeyStore:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._seen: tuple[int, int, int] | None = None  # (inode, size, mtime_ns) last read
        self._keys: dict[str, Key] = {}

    def create(
        self,
        tenant: str,
        trust: TrustLevel | str,
        quotas: Quotas | None = None,
        override: bool = False,
        any_runtime: bool = False,
        operator: bool = False,
    ) -> tuple[Key, str]:
        """A new key for `tenant`; returns the entry and the key itself (shown only now)."""
        if not isinstance(tenant, str) or not TENANT_NAME.fullmatch(tenant):
            raise InputError(
                f"tenant name {quoted(tenant)}: use 1-64 letters, digits, '.', '_' or '-' "
                "(starting with a letter or digit)"
            )
        key_id = secrets.token_hex(6)
        secret = f"{PREFIX}{key_id}_{secrets.token_urlsafe(32)}"
        entry = Key(
            key_id,
            tenant,
            parse_trust(trust),
            _digest(secret),
            _now(),
            quotas or Quotas(),
            override,
            any_runtime=any_runtime,
            operator=operator,
        )
        with self._locked() as keys:
            keys[key_id] = entry
        return entry, secret

    def revoke(self, key_id: str) -> Key:
        """Revoke a key by its id (the `hzm_<id>` part, or the id alone)."""
        key_id = key_id.removeprefix(PREFIX).split("_")[0]
        with self._locked() as keys:
            entry = keys.get(key_id)
            if entry is None:
                raise InputError(f"no key with id {quoted(key_id)} in {self.path}")
            if entry.revoked is None:
                entry = dataclasses.replace(entry, revoked=_now())
                keys[key_id] = entry
        return entry

    def list(self) -> list[Key]:
        return sorted(self._load().values(), key=lambda k: (k.tenant, k.created, k.id))

    def check(self, presented: str | None) -> Key:
        """The live key `presented` is, or `AccessDenied` (the message never says which part
        was wrong, and the digests are compared in constant time)."""
        match = _KEY.fullmatch(presented or "")
        entry = self._load().get(match.group(1)) if match else None
        digest = _digest(presented or "")  # the same work for an unknown id as a wrong secret
        same = hmac.compare_digest(entry.digest if entry else _NO_KEY, digest)
        if entry is None or not same:
            raise AccessDenied("a valid API key is needed (Authorization: Bearer hzm_...)")
        if entry.revoked is not None:
            raise AccessDenied(f"this API key was revoked at {entry.revoked}")
        return entry

    def _load(self) -> dict[str, Key]:
        """The keys on disk, read again only when the file changed."""
        try:
            st = self.path.stat()
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise PolicyError(f"{self.path}: cannot read the key store: {exc}") from exc
        seen = (st.st_ino, st.st_size, st.st_mtime_ns)
        with self._lock:
            if seen != self._seen:
                self._keys, self._seen = self._read(), seen
            return self._keys

    def _read(self) -> dict[str, Key]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            return {item["id"]: _entry(item) for item in data["keys"]}
        except FileNotFoundError:
            return {}
        except (OSError, ValueError, KeyError, TypeError, RecursionError, InputError) as exc:
            raise PolicyError(f"{self.path}: the key store is damaged: {exc}") from exc

    @contextlib.contextmanager
    def _locked(self) -> Iterator[dict[str, Key]]:
        """The keys, under an exclusive lock, written back atomically (0600) on success."""
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        lock_path = self.path.with_name(self.path.name + ".lock")
        with open(lock_path, "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            keys = self._read()
            yield keys
            body = json.dumps({"keys": [k.to_dict() for k in keys.values()]}, indent=1)
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".keys-")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as out:
                    out.write(body + "\n")
                    out.flush()
                    os.fsync(out.fileno())
                os.replace(tmp, self.path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise


def _entry(item: dict[str, Any]) -> Key:
    quotas = Quotas(**item.get("quotas", {}))
    return Key(
        id=str(item["id"]),
        tenant=str(item["tenant"]),
        trust=parse_trust(item["trust"]),
        digest=str(item["digest"]),
        created=str(item["created"]),
        quotas=quotas,
        override=item.get("override") is True,
        revoked=item.get("revoked"),
        any_runtime=item.get("any_runtime") is True,
        operator=item.get("operator") is True,
    )
