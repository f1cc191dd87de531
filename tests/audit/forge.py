"""An attacker's toolkit, independent of hazmat's writer: its own canonical encoder, Merkle
root and note signer (with the log's key, which anyone who can write the directory can read)."""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from hazmat.testing import Invoked, invoke


def canon(obj: Any) -> bytes:
    """RFC 8785 for what these tests write (ASCII strings, integers, objects)."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


def leaf(body: bytes) -> bytes:
    return hashlib.sha256(b"\x00" + body).digest()


def line_of(record: dict[str, Any], body: bytes | None = None) -> bytes:
    body = canon(record) if body is None else body
    return b'{"hash":"' + leaf(body).hex().encode() + b'","record":' + body + b"}\n"


def records_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x)["record"] for x in path.read_bytes().splitlines()]


def rechain(records: list[dict[str, Any]], prev: str = "0" * 64) -> bytes:
    """Lines for `records` with seq and prev recomputed from `prev`."""
    out = []
    for record in records:
        chained = {**record, "prev": prev}
        body = canon(chained)
        out.append(line_of(chained, body))
        prev = leaf(body).hex()
    return b"".join(out)


def mth(leaves: list[bytes]) -> bytes:
    if not leaves:
        return hashlib.sha256(b"").digest()
    if len(leaves) == 1:
        return leaves[0]
    k = 1 << ((len(leaves) - 1).bit_length() - 1)
    return hashlib.sha256(b"\x01" + mth(leaves[:k]) + mth(leaves[k:])).digest()


def all_leaves(log_dir: Path) -> list[bytes]:
    out = []
    for path in sorted((log_dir / "segments").glob("*.jsonl")):
        for raw in path.read_bytes().splitlines():
            body = raw[raw.index(b'"record":') + 9 : -1]
            out.append(leaf(body))
    return out


def sign(log_dir: Path, size: int, root: bytes) -> str:
    """A checkpoint note signed with the log's own key, as the key holder would."""
    key = serialization.load_pem_private_key((log_dir / "key.ed25519").read_bytes(), None)
    assert isinstance(key, Ed25519PrivateKey)
    origin = (log_dir / "origin").read_text().strip()
    public = key.public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw
    )
    key_hash = hashlib.sha256(origin.encode() + b"\n\x01" + public).digest()[:4]
    text = f"{origin}\n{size}\n{base64.b64encode(root).decode()}\n"
    blob = base64.b64encode(key_hash + key.sign(text.encode())).decode()
    return f"{text}\n\u2014 {origin} {blob}\n"


def resign(log_dir: Path) -> None:
    """Make the log's own checkpoint match whatever its records now are."""
    leaves = all_leaves(log_dir)
    (log_dir / "checkpoint").write_text(sign(log_dir, len(leaves), mth(leaves)))


def hazmat(*args: str, env: dict[str, str] | None = None) -> Invoked:
    """`hazmat *args` as a user runs it, in this process (hazmat.testing.invoke)."""
    return invoke(args, env=env)


def verify(log_dir: Path, pubkey: Path, *extra: str) -> dict[str, Any]:
    """`hazmat audit verify --pubkey P ... --json`, as a user runs it."""
    result = hazmat(
        "audit", "verify", "--log", str(log_dir), "--pubkey", str(pubkey), "--json", *extra
    )
    report: dict[str, Any] = json.loads(result.stdout)
    assert result.exit_code == (0 if report["ok"] else 1), result.stderr
    return report
