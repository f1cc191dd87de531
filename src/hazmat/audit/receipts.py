"""Receipts: one record of the log, shown to a third party without the rest of the log.

A receipt holds the record's bytes exactly as stored, its index, its inclusion path to the
root of a signed checkpoint, and that checkpoint (a C2SP signed note). Whoever has the log's
verifier key (`hazmat audit pubkey`, kept apart from the log) checks it alone: the signature
on the checkpoint, then the record's leaf hash (`SHA-256(0x00 || bytes)`) up the path to the
signed root. So a student or a reviewer can see that a `grade.verdict` record (this code's
hash, this task, this verdict) is in the log the operator signed, and nothing else of it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hazmat._exceptions import AuditError, InputError, quoted
from hazmat.audit.checkpoint import CheckpointError, VerifierKey, read_note
from hazmat.audit.layout import CHECKPOINT
from hazmat.audit.merkle import inclusion_path, leaf_hash, verify_inclusion
from hazmat.audit.records import LineError, parse_line_exact
from hazmat.audit.tree import LogTree, TreeError
from hazmat.json_input import loads

__all__ = ["RECEIPT_VERSION", "Receipt", "check_receipt", "make_receipt", "parse_receipt"]

RECEIPT_VERSION = 1
_FIELDS = {"seq": int, "record": str, "path": list, "checkpoint": str}
_PATH_MOST = 64  # an inclusion path in a tree of fewer than 2**64 records
_HASH = re.compile(r"[0-9a-fA-F]{64}")


def make_receipt(directory: Path, key: VerifierKey, seq: int) -> dict[str, Any]:
    """The receipt of record `seq` against the log's latest checkpoint; `AuditError` if the
    checkpoint does not cover it yet, or the record cannot be read or does not verify."""
    try:
        note = read_note(directory / CHECKPOINT)
        checkpoint = key.open(note)
    except (OSError, CheckpointError) as exc:
        raise AuditError(f"no valid checkpoint in {directory}: {exc}") from None
    if not 0 <= seq < checkpoint.size:
        raise AuditError(
            f"record {seq} is not in the latest checkpoint (size {checkpoint.size}): wait for "
            "the next one (the log signs one when it closes, and every checkpoint_seconds)"
        )
    tree = LogTree(directory)
    try:
        body = _record_bytes(tree, seq)
        path = inclusion_path(seq, checkpoint.size, tree.subtree)
    except (OSError, TreeError, LineError) as exc:
        raise AuditError(f"cannot read record {seq}: {exc}") from None
    receipt = {
        "receipt": RECEIPT_VERSION,
        "seq": seq,
        "record": body.decode("utf-8"),
        "path": [h.hex() for h in path],
        "checkpoint": note,
    }
    check_receipt(receipt, key)  # never hand out one that does not verify
    return receipt


@dataclass(frozen=True)
class Receipt:
    """A receipt whose every part has the type and size it must have (`parse_receipt`);
    whether it verifies is `check_receipt`'s question."""

    seq: int
    body: bytes  # the record's bytes, as its leaf hash covers them
    record: dict[str, Any]  # those bytes decoded
    path: tuple[bytes, ...]
    note: str  # the signed checkpoint


def parse_receipt(given: object) -> Receipt:
    """A receipt from its JSON (bytes or text: a file, a pasted form) or from that JSON
    decoded; `InputError` ("not a receipt: ...") naming what is wrong, whatever it holds. The
    JSON and the record inside it are decoded within json_input.py's bounds (depth, number
    lengths, lone surrogates)."""
    try:
        data = loads(given, "its JSON") if isinstance(given, str | bytes) else given
        version = data.get("receipt") if isinstance(data, Mapping) else RECEIPT_VERSION
        if isinstance(version, bool) or version != RECEIPT_VERSION:
            raise InputError(f"version {quoted(version)}, not {RECEIPT_VERSION}")
        fields = _typed(data)
        record = loads(fields["record"], "its record")
    except InputError as exc:
        raise InputError(f"not a receipt: {exc}") from None
    if not isinstance(record, dict):
        raise InputError(f"not a receipt: its record is a {type(record).__name__}, not an object")
    path = tuple(bytes.fromhex(h) for h in fields["path"])
    body = fields["record"].encode("utf-8")
    return Receipt(fields["seq"], body, record, path, fields["checkpoint"])


def _typed(data: object) -> dict[str, Any]:
    """The receipt's fields, each checked for its type: `InputError` naming the first that
    is missing or wrong."""
    if not isinstance(data, Mapping):
        raise InputError(f"a {type(data).__name__}, not an object")
    for name, kind in _FIELDS.items():
        if name not in data:
            raise InputError(f"no {name!r}")
        if isinstance(data[name], bool) or not isinstance(data[name], kind):
            raise InputError(f"{name!r} is a {type(data[name]).__name__}, not a {kind.__name__}")
    if not 0 <= data["seq"] < 2**63:
        raise InputError(f"'seq' {quoted(data['seq'])} is not a record number")
    path = data["path"]
    if len(path) > _PATH_MOST or not all(isinstance(h, str) and _HASH.fullmatch(h) for h in path):
        raise InputError(f"'path' must be at most {_PATH_MOST} SHA-256 hashes in hex")
    return dict(data)


def check_receipt(receipt: object, key: VerifierKey) -> dict[str, Any]:
    """The record a receipt vouches for (`{"seq", "ts", "kind", "data", ...}`) once its
    checkpoint's signature and its inclusion path verify; `AuditError` saying why if not (one
    that is no receipt at all, `parse_receipt`'s InputError, is said as an AuditError too)."""
    if not isinstance(receipt, Receipt):
        try:
            receipt = parse_receipt(receipt)
        except InputError as exc:
            raise AuditError(str(exc)) from None
    try:
        checkpoint = key.open(receipt.note)
    except CheckpointError as exc:
        raise AuditError(f"the receipt's checkpoint does not verify: {exc}") from None
    seq = receipt.seq
    if receipt.record.get("seq") != seq:
        raise AuditError(f"the receipt's record is not record number {seq}")
    if not seq < checkpoint.size or not verify_inclusion(
        seq, checkpoint.size, leaf_hash(receipt.body), list(receipt.path), checkpoint.root
    ):
        raise AuditError("the record is not in the signed log: its inclusion proof fails")
    return receipt.record


def _record_bytes(tree: LogTree, seq: int) -> bytes:
    """Record `seq`'s bytes as stored (what its leaf hash is taken over)."""
    span = tree.span_of(seq)
    if span.expired:
        raise TreeError(f"record {seq}'s contents are gone (retention); only its hash is kept")
    start = tree.start_of(seq)
    fd = os.open(span.path, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        line, at = b"", start.offset
        while not line.endswith(b"\n"):
            chunk = os.pread(fd, 65536, at)
            if not chunk:
                raise TreeError(f"record {seq} has no end")
            cut = chunk.find(b"\n")
            line += chunk if cut < 0 else chunk[: cut + 1]
            at += len(chunk)
    finally:
        os.close(fd)
    record, _, body = parse_line_exact(line)
    if record.seq != seq:
        raise TreeError(f"found record {record.seq} where {seq} should be")
    return body
