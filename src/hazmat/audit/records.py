"""Audit records: canonical JSON (RFC 8785), one per line, each with its RFC 9162 leaf hash.

A line is the canonical JSON of `{"hash": <hex leaf hash>, "record": {...}}`. The record holds
`seq` (0-based, the leaf index), `ts` (UTC, RFC 3339 with microseconds), `kind`, `prev` (the
previous record's leaf hash; 64 zeros for the first) and `data`. The leaf hash is
`SHA-256(0x00 || canonical(record))`, so the log is both a hash chain and a Merkle tree.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import rfc8785

from hazmat.audit.merkle import leaf_hash

__all__ = ["GENESIS", "Record", "encode_line", "parse_line", "utc_now"]

GENESIS = "0" * 64


def utc_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(frozen=True)
class Record:
    seq: int
    ts: str
    kind: str
    prev: str
    data: dict[str, Any]

    def as_json(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "ts": self.ts,
            "kind": self.kind,
            "prev": self.prev,
            "data": self.data,
        }

    def canonical(self) -> bytes:
        return rfc8785.dumps(self.as_json())

    def leaf(self) -> bytes:
        return leaf_hash(self.canonical())


def encode_line(record: Record) -> tuple[bytes, bytes]:
    """The line to store (with its newline) and the record's leaf hash."""
    leaf = record.leaf()
    line = rfc8785.dumps({"hash": leaf.hex(), "record": record.as_json()}) + b"\n"
    return line, leaf


class LineError(ValueError):
    """A stored line that is not a well-formed record."""


def parse_line(line: bytes) -> tuple[Record, str]:
    """The record in a stored line and the hash stored beside it (not yet checked)."""
    try:
        outer = json.loads(line)
        inner = outer["record"]
        record = Record(
            seq=int(inner["seq"]),
            ts=str(inner["ts"]),
            kind=str(inner["kind"]),
            prev=str(inner["prev"]),
            data=dict(inner["data"]),
        )
        stored = str(outer["hash"])
    except (ValueError, KeyError, TypeError) as exc:
        raise LineError(f"not a record: {exc}") from None
    if set(outer) != {"hash", "record"} or set(inner) != {"seq", "ts", "kind", "prev", "data"}:
        raise LineError("unexpected fields")
    return record, stored
