"""Audit records: canonical JSON (RFC 8785), one per line, each with its RFC 9162 leaf hash.

A line is the canonical JSON of `{"hash": <hex leaf hash>, "record": {...}}`. The record holds
`seq` (0-based, the leaf index), `ts` (UTC, RFC 3339 with microseconds), `kind`, `prev` (the
previous record's leaf hash; 64 zeros for the first) and `data`. The leaf hash is
`SHA-256(0x00 || canonical(record))`, so the log is both a hash chain and a Merkle tree.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import rfc8785

from hazmat.audit.merkle import leaf_hash

__all__ = ["GENESIS", "Record", "encode_line", "parse_line", "parse_line_exact", "utc_now"]

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

    def canonical(self, data: bytes | None = None) -> bytes:
        """RFC 8785 bytes of the record. `data` may be the canonical bytes of `self.data`,
        already computed (by the appending thread, outside the writer's critical path); the
        keys' canonical order is data, kind, prev, seq, ts."""
        if data is None:
            data = rfc8785.dumps(self.data)
        return b"".join(
            [
                b'{"data":',
                data,
                b',"kind":',
                rfc8785.dumps(self.kind),
                b',"prev":',
                rfc8785.dumps(self.prev),
                b',"seq":',
                str(self.seq).encode(),
                b',"ts":',
                rfc8785.dumps(self.ts),
                b"}",
            ]
        )

    def leaf(self) -> bytes:
        return leaf_hash(self.canonical())


_PREFIX = b'{"hash":"'
_MIDDLE = b'","record":'
_RECORD_AT = len(_PREFIX) + 64 + len(_MIDDLE)
_KEYS = frozenset({"seq", "ts", "kind", "prev", "data"})
_HEX64 = re.compile(rb"[0-9a-f]{64}")


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        raise LineError("duplicate keys")
    return out


# records are UTF-8 (no encoding detection); a repeated key is an error, not "last wins"
_DECODE = json.JSONDecoder(object_pairs_hook=_no_duplicates).decode


def encode_line(record: Record, data: bytes | None = None) -> tuple[bytes, bytes]:
    """The line to store (with its newline) and the record's leaf hash.

    The line is the canonical JSON of {"hash", "record"}: with those two keys in that order it
    is exactly `{"hash":"<hex>","record":<canonical record>}`, so the record is serialized once.
    """
    body = record.canonical(data)
    leaf = leaf_hash(body)
    return _PREFIX + leaf.hex().encode() + _MIDDLE + body + b"}\n", leaf


class LineError(ValueError):
    """A stored line that is not a well-formed record."""


def parse_line(line: bytes) -> tuple[Record, str]:
    """The record in a stored line and the hash stored beside it (not yet checked)."""
    record, stored, _ = parse_line_exact(line)
    return record, stored


def parse_line_exact(line: bytes) -> tuple[Record, str, bytes]:
    """As `parse_line`, plus the record's bytes exactly as stored: its leaf hash is
    `SHA-256(0x00 || those bytes)`, checked without serializing the record again."""
    line = line.rstrip(b"\n")
    if (
        not line.startswith(_PREFIX)
        or line[_RECORD_AT - len(_MIDDLE) : _RECORD_AT] != _MIDDLE
        or not line.endswith(b"}")
    ):
        raise LineError("not a record line")
    body = line[_RECORD_AT:-1]
    if not _HEX64.fullmatch(line[len(_PREFIX) : len(_PREFIX) + 64]):
        raise LineError("the stored hash is not 64 lowercase hex digits")
    stored = line[len(_PREFIX) : len(_PREFIX) + 64].decode("ascii")
    try:
        inner = _DECODE(body.decode("utf-8"))
        if not isinstance(inner, dict) or inner.keys() != _KEYS:
            raise LineError("unexpected fields")
        record = Record(
            seq=inner["seq"],
            ts=inner["ts"],
            kind=inner["kind"],
            prev=inner["prev"],
            data=inner["data"],
        )
    except (ValueError, TypeError) as exc:
        raise LineError(f"not a record: {exc}") from None
    if (
        type(record.seq) is not int
        or not isinstance(record.data, dict)
        or not all(isinstance(x, str) for x in (record.ts, record.kind, record.prev))
    ):
        raise LineError("not a record: wrong types")
    try:
        canonical = rfc8785.dumps(inner)
    except (ValueError, TypeError) as exc:
        raise LineError(f"not a record: {exc}") from None
    if canonical != body:
        raise LineError("the record is not canonical JSON (RFC 8785)")
    return record, stored, body
