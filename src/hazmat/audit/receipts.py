"""Receipts: one record of the log, shown to a third party without the rest of the log.

A receipt holds the record's bytes exactly as stored, its index, its inclusion path to the
root of a signed checkpoint, and that checkpoint (a C2SP signed note). Whoever has the log's
verifier key (`hazmat audit pubkey`, kept apart from the log) checks it alone: the signature
on the checkpoint, then the record's leaf hash (`SHA-256(0x00 || bytes)`) up the path to the
signed root. So a student or a reviewer can see that a `grade.verdict` record (this code's
hash, this task, this verdict) is in the log the operator signed, and nothing else of it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from hazmat._exceptions import AuditError
from hazmat.audit.checkpoint import CheckpointError, VerifierKey, read_note
from hazmat.audit.layout import CHECKPOINT
from hazmat.audit.merkle import inclusion_path, leaf_hash, verify_inclusion
from hazmat.audit.records import LineError, parse_line_exact
from hazmat.audit.tree import LogTree, TreeError

__all__ = ["RECEIPT_VERSION", "check_receipt", "make_receipt"]

RECEIPT_VERSION = 1


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


def check_receipt(receipt: Any, key: VerifierKey) -> dict[str, Any]:
    """The record a receipt vouches for (`{"seq", "ts", "kind", "data", ...}`) once its
    checkpoint's signature and its inclusion path verify; `AuditError` saying why if not."""
    try:
        seq, record, note = receipt["seq"], receipt["record"], receipt["checkpoint"]
        path = [bytes.fromhex(h) for h in receipt["path"]]
        if receipt.get("receipt") != RECEIPT_VERSION or not isinstance(seq, int):
            raise ValueError("not a receipt of this version")
        body = record.encode("utf-8")
        inner = json.loads(body)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise AuditError(f"not a receipt: {exc}") from None
    try:
        checkpoint = key.open(note)
    except CheckpointError as exc:
        raise AuditError(f"the receipt's checkpoint does not verify: {exc}") from None
    if not isinstance(inner, dict) or inner.get("seq") != seq:
        raise AuditError(f"the receipt's record is not record number {seq}")
    if not 0 <= seq < checkpoint.size or not verify_inclusion(
        seq, checkpoint.size, leaf_hash(body), path, checkpoint.root
    ):
        raise AuditError("the record is not in the signed log: its inclusion proof fails")
    return inner


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
