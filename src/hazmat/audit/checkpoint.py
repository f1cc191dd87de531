"""Signed checkpoints in the C2SP signed-note / tlog-checkpoint text format, with Ed25519.

    <origin>
    <tree size>
    <base64 root hash>

    — <key name> <base64(key hash (4 bytes) || signature)>

The key name is the origin; the key hash is the first 4 bytes of
`SHA-256(name || 0x0A || 0x01 || public key)`. A verifier key is written
`<name>+<hex key hash>+<base64(0x01 || public key)>`, as Go's note package does.
"""

from __future__ import annotations

import base64
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

__all__ = ["Checkpoint", "CheckpointError", "Signer", "VerifierKey", "load_or_create_key"]

_ALG_ED25519 = b"\x01"
_DASH = "\u2014 "


class CheckpointError(ValueError):
    """A checkpoint that cannot be parsed or whose signature does not verify."""


@dataclass(frozen=True)
class Checkpoint:
    origin: str
    size: int
    root: bytes

    def text(self) -> str:
        return f"{self.origin}\n{self.size}\n{base64.b64encode(self.root).decode()}\n"


@dataclass(frozen=True)
class VerifierKey:
    name: str
    public: bytes

    @property
    def key_hash(self) -> bytes:
        return hashlib.sha256(self.name.encode() + b"\n" + _ALG_ED25519 + self.public).digest()[:4]

    def encode(self) -> str:
        blob = base64.b64encode(_ALG_ED25519 + self.public).decode()
        return f"{self.name}+{self.key_hash.hex()}+{blob}"

    @classmethod
    def decode(cls, text: str) -> VerifierKey:
        try:
            name, hash_hex, blob = text.strip().split("+", 2)  # base64 may hold "+"
            raw = base64.b64decode(blob, validate=True)
        except ValueError as exc:
            raise CheckpointError(f"not a verifier key: {exc}") from None
        if raw[:1] != _ALG_ED25519 or len(raw) != 33:
            raise CheckpointError("not an Ed25519 verifier key")
        key = cls(name, raw[1:])
        if key.key_hash.hex() != hash_hex:
            raise CheckpointError("verifier key hash does not match its key")
        return key

    def open(self, note: str) -> Checkpoint:
        """Verify a signed note and return its checkpoint."""
        text, sep, sigs = note.partition("\n\n")
        if not sep or not text:
            raise CheckpointError("not a signed note")
        text += "\n"
        for line in sigs.splitlines():
            if not line.startswith(_DASH):
                continue
            name, _, blob = line[len(_DASH) :].rpartition(" ")
            try:
                raw = base64.b64decode(blob, validate=True)
            except ValueError:
                continue
            if name != self.name or raw[:4] != self.key_hash:
                continue
            try:
                Ed25519PublicKey.from_public_bytes(self.public).verify(raw[4:], text.encode())
            except InvalidSignature:
                raise CheckpointError("bad signature") from None
            return _parse_text(text)
        raise CheckpointError(f"no signature by {self.name} ({self.key_hash.hex()})")


def _parse_text(text: str) -> Checkpoint:
    lines = text.split("\n")
    try:
        origin, size_text, root_b64 = lines[0], lines[1], lines[2]
        size = int(size_text)
        root = base64.b64decode(root_b64, validate=True)
    except (IndexError, ValueError) as exc:
        raise CheckpointError(f"malformed checkpoint: {exc}") from None
    if not origin or len(root) != 32 or size < 0 or size_text != str(size):
        raise CheckpointError("malformed checkpoint")
    return Checkpoint(origin, size, root)


class Signer:
    def __init__(self, name: str, key: Ed25519PrivateKey) -> None:
        self.name = name
        self._key = key
        public = key.public_key().public_bytes(
            serialization.Encoding.Raw, serialization.PublicFormat.Raw
        )
        self.verifier = VerifierKey(name, public)

    def sign(self, checkpoint: Checkpoint) -> str:
        text = checkpoint.text()
        signature = self._key.sign(text.encode())
        blob = base64.b64encode(self.verifier.key_hash + signature).decode()
        return f"{text}\n{_DASH}{self.name} {blob}\n"

    def sign_bytes(self, data: bytes) -> str:
        return base64.b64encode(self._key.sign(data)).decode()


def load_or_create_key(path: Path) -> tuple[Ed25519PrivateKey, bool]:
    """The private key at `path`, created with mode 0600 if absent. Returns (key, created)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        key = Ed25519PrivateKey.generate()
        pem = key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(pem)
            f.flush()
            os.fsync(f.fileno())
        return key, True
    loaded = serialization.load_pem_private_key(data, password=None)
    if not isinstance(loaded, Ed25519PrivateKey):
        raise CheckpointError(f"{path} is not an Ed25519 private key")
    return loaded, False
