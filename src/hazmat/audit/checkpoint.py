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

from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

__all__ = [
    "NOT_A_KEY",
    "Checkpoint",
    "CheckpointError",
    "Signer",
    "VerifierKey",
    "load_or_create_key",
    "read_note",
]

_ALG_ED25519 = b"\x01"
_DASH = "\u2014 "
NOT_A_KEY = (
    "not an Ed25519 verifier key (the one line `hazmat audit pubkey` prints: "
    "<name>+<hex key hash>+<base64 key>)"
)
_KEY_FILE_MOST = 64 * 1024  # a verifier key is its name and ~60 characters


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
    def decode(cls, text: str | bytes) -> VerifierKey:
        """The key `encode` wrote; `CheckpointError` saying why for anything else."""
        try:
            if isinstance(text, bytes):
                text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CheckpointError(f"{NOT_A_KEY}: not UTF-8 text (byte {exc.start})") from None
        parts = text.strip().split("+", 2)  # base64 may hold "+"
        if len(parts) != 3:
            raise CheckpointError(f"{NOT_A_KEY}: not three parts joined by '+'")
        name, hash_hex, blob = parts
        try:
            raw = base64.b64decode(blob, validate=True)
        except ValueError:
            raise CheckpointError(f"{NOT_A_KEY}: its key part is not base64") from None
        if raw[:1] != _ALG_ED25519 or len(raw) != 33:
            raise CheckpointError(f"{NOT_A_KEY}: its key part is not 0x01 and 32 bytes")
        key = cls(name, raw[1:])
        if key.key_hash.hex() != hash_hex:
            raise CheckpointError(f"{NOT_A_KEY}: its key hash does not match its key")
        return key

    @classmethod
    def read(cls, path: Path) -> VerifierKey:
        """The key in the file at `path`: `OSError` if it cannot be read, `CheckpointError`
        naming the path if it holds anything else."""
        with open(path, "rb") as f:
            data = f.read(_KEY_FILE_MOST + 1)
        if len(data) > _KEY_FILE_MOST:
            raise CheckpointError(f"{path} is {NOT_A_KEY}: over {_KEY_FILE_MOST} bytes")
        try:
            return cls.decode(data)
        except CheckpointError as exc:
            raise CheckpointError(f"{path} is {exc}") from None

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
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(pem)
                f.flush()
                os.fsync(f.fileno())
        except BaseException:
            path.unlink(missing_ok=True)  # half a key would make the new log look damaged
            raise
        return key, True
    try:
        loaded = serialization.load_pem_private_key(data, password=None)
    except TypeError:  # cryptography's word for a key that needs a password
        raise CheckpointError(f"{path} {_NOT_A_PRIVATE_KEY}: it is encrypted") from None
    except (ValueError, UnsupportedAlgorithm):
        raise CheckpointError(f"{path} {_NOT_A_PRIVATE_KEY}: not a PEM private key") from None
    if not isinstance(loaded, Ed25519PrivateKey):
        kind = type(loaded).__name__.removeprefix("_")
        raise CheckpointError(f"{path} {_NOT_A_PRIVATE_KEY}: it is another kind of key ({kind})")
    return loaded, False


_NOT_A_PRIVATE_KEY = "is not an Ed25519 private key (PEM, PKCS#8, unencrypted)"


def read_note(path: Path) -> str:
    """A signed note's file as text: bytes that are not UTF-8 are replaced (such a note
    never verifies: its signature covers the exact text), never an error of their own."""
    return path.read_bytes().decode("utf-8", "replace")
