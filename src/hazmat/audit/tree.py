"""The Merkle tree of a log on disk, computed without reading the whole log.

`LogTree.subtree(lo, hi)` is the RFC 9162 hash of records lo..hi-1: whole 1024-record blocks
come from the index (`index.py`), the rest from the records themselves, whose leaf hashes are
always recomputed from their bytes (a stored hash is never believed). Every result that matters
is compared with a signed root by the caller; when it does not match, the caller asks again with
`trust_index=False` and the blocks are recomputed from the records, so a stale or forged index
costs time, never a wrong verdict.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hazmat.audit.index import BLOCK, BlockEntry, BlockIndex
from hazmat.audit.layout import Listing, list_log
from hazmat.audit.merkle import Frontier, leaf_hash, node_hash, perfect_root
from hazmat.audit.records import LineError, Record, parse_line_exact

__all__ = ["LogTree", "Position", "TreeError"]

_CHUNK = 256 * 1024
_RECORD_AT = len(b'{"hash":"') + 64 + len(b'","record":')


class TreeError(ValueError):
    """The records on disk are not what the tree needs: missing, out of order or damaged."""


@dataclass(frozen=True)
class Position:
    """Where a record ends: the segment and the byte offset just past its line."""

    segment: int
    offset: int


@dataclass(frozen=True)
class Entry:
    seq: int
    leaf: bytes
    record: Record | None  # None for an expired segment (only its leaf hashes are kept)
    end: Position


@dataclass(frozen=True)
class Span:
    number: int
    first: int  # seq of its first record
    end: int | None  # seq after its last record; None for the open (last) segment
    path: Path
    expired: bool


class LogTree:
    def __init__(self, directory: Path, listing: Listing | None = None) -> None:
        self.dir = directory
        self.listing = listing or list_log(directory)
        self.index = BlockIndex(directory)
        self.trust_index = True
        self.write_index = False
        self.fresh: set[int] = set()  # blocks always recomputed from their records
        self.parse = True  # False: hash records without parsing them (roots are compared)
        self.spans = self._spans()
        self._memo: dict[tuple[int, int], bytes] = {}
        self._leaf_blocks: dict[int, list[bytes]] = {}

    # --- where records are ------------------------------------------------------------------

    def _spans(self) -> list[Span]:
        spans, first = [], 0
        for number in range(1, self.listing.last + 1):
            seal = self.listing.seals.get(number)
            end = None
            if seal is not None:
                meta = _seal_meta(seal)
                first, end = meta["first_seq"], meta["end_seq"]
            if number in self.listing.segments:
                spans.append(Span(number, first, end, self.listing.segments[number], False))
            elif number in self.listing.leaves and end is not None:
                spans.append(Span(number, first, end, self.listing.leaves[number], True))
            if end is not None:
                first = end
        return spans

    def span_of(self, seq: int) -> Span:
        for span in self.spans:
            if span.first <= seq and (span.end is None or seq < span.end):
                return span
        raise TreeError(f"record {seq} is in no segment on disk")

    def start_of(self, seq: int) -> Position:
        """Where record `seq` begins: its block's start (from the index, or found in its
        segment), then at most 1023 records read on."""
        if self.spans and self.spans[-1].end == seq:  # just after the last sealed segment
            last = self.spans[-1]
            return Position(last.number, last.path.stat().st_size)
        lo = seq - seq % BLOCK
        position = self._block_start(lo)
        if lo == seq:
            return position
        for item in self.entries(lo, position):
            if item.seq == seq - 1:
                return item.end
        raise TreeError(f"the log ends before record {seq}")

    def _block_start(self, lo: int) -> Position:
        if lo and self.trust_index:
            entry = self.index.get(lo // BLOCK - 1)
            if entry is not None:
                return Position(entry.segment, entry.end)
        span = self.span_of(lo)
        if span.expired:
            return Position(span.number, (lo - span.first) * 32)
        if lo == span.first:
            return Position(span.number, 0)
        for item in self.entries(span.first, Position(span.number, 0)):
            if item.seq == lo - 1:
                return item.end
        raise TreeError(f"record {lo} is not in segment {span.number:06d}")

    def entries(self, seq: int, start: Position, stop: int | None = None) -> Iterator[Entry]:
        """Records from `seq` (beginning at `start`) to `stop` or the end of the log, each with
        its recomputed leaf hash, checked for sequence, chain and stored hash."""
        numbers = [s.number for s in self.spans]
        if start.segment not in numbers:
            raise TreeError(f"segment {start.segment:06d} is not on disk")
        prev: str | None = None
        for span in self.spans[numbers.index(start.segment) :]:
            offset = start.offset if span.number == start.segment else 0
            if span.first > seq:
                raise TreeError(f"records {seq}..{span.first - 1} are missing")
            if span.expired:
                items = _leaves_from(span, offset)
            else:
                items = _lines_from(span, offset, seq if not self.parse else None)
            for item in items:
                if stop is not None and seq >= stop:
                    return
                if span.end is not None and item.seq >= span.end:
                    raise TreeError(f"segment {span.number:06d} has records past its seal")
                if item.seq != seq:
                    raise TreeError(f"expected record {seq}, found {item.seq} in {span.path.name}")
                if item.record is not None and prev is not None and item.record.prev != prev:
                    raise TreeError(f"record {seq} does not chain to record {seq - 1}")
                prev = item.leaf.hex()
                yield item
                seq += 1
            if span.end is not None and seq < span.end and (stop is None or seq < stop):
                raise TreeError(f"segment {span.number:06d} ends before its seal (seq {seq})")
        if stop is not None and seq < stop:
            raise TreeError(f"the log ends at record {seq}; needed up to {stop}")

    # --- hashes ------------------------------------------------------------------------------

    def block(self, b: int) -> list[Entry]:
        """The records of block `b` (as many as exist, up to 1024)."""
        lo = b * BLOCK
        out = []
        for item in self.entries(lo, self.start_of(lo)):
            out.append(item)
            if len(out) == BLOCK:
                break
        return out

    def block_hash(self, b: int) -> bytes:
        if self.trust_index and b not in self.fresh:
            entry = self.index.get(b)
            if entry is not None:
                return entry.hash
        items = self.block(b)
        if len(items) != BLOCK:
            raise TreeError(f"block {b} is incomplete")
        digest = perfect_root([i.leaf for i in items])
        self.index.put(
            b, BlockEntry(digest, items[-1].end.segment, items[-1].end.offset), self.write_index
        )
        return digest

    def subtree(self, lo: int, hi: int) -> bytes:
        """RFC 9162 MTH of records lo..hi-1."""
        key = (lo, hi)
        if key in self._memo:
            return self._memo[key]
        n = hi - lo
        if n >= BLOCK and n & (n - 1) == 0 and lo % n == 0:
            digest = perfect_root([self.block_hash(b) for b in range(lo // BLOCK, hi // BLOCK)])
        elif n <= BLOCK and lo // BLOCK == (hi - 1) // BLOCK:
            block = lo // BLOCK
            leaves = self.block_leaves(block)
            if len(leaves) < hi - block * BLOCK:
                raise TreeError(f"the log ends before record {hi - 1}")
            digest = _mth(leaves[lo - block * BLOCK : hi - block * BLOCK])
        else:
            k = 1 << ((n - 1).bit_length() - 1)
            digest = node_hash(self.subtree(lo, lo + k), self.subtree(lo + k, hi))
        self._memo[key] = digest
        return digest

    def block_leaves(self, b: int) -> list[bytes]:
        cached = self._leaf_blocks.get(b)
        if cached is None:
            cached = self._leaf_blocks[b] = [i.leaf for i in self.block(b)]
        return cached

    def frontier(self, size: int) -> Frontier:
        """The frontier (perfect subtrees) of the first `size` records."""
        hashes, lo = [], 0
        for bit in reversed(range(size.bit_length())):
            if size >> bit & 1:
                hashes.append(self.subtree(lo, lo + (1 << bit)))
                lo += 1 << bit
        return Frontier(size, hashes)

    def root(self, size: int) -> bytes:
        return self.frontier(size).root()

    def distrust_index(self) -> None:
        """Recompute everything from the records from now on (and repair the cache)."""
        self.trust_index = False
        self._memo.clear()
        self._leaf_blocks.clear()
        self.index.forget()


def _seal_meta(path: Path) -> dict[str, Any]:
    try:
        seal = json.loads(path.read_bytes())
        first, end = seal["first_seq"], seal["end_seq"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise TreeError(f"seal {path.name} is unreadable: {exc}") from None
    if type(first) is not int or type(end) is not int or not 0 <= first <= end:
        raise TreeError(f"seal {path.name} has no valid range")
    return dict(seal)


def _lines_from(span: Span, offset: int, count_from: int | None = None) -> Iterator[Entry]:
    """Complete lines of a segment from `offset`. A final line without its newline (a crash
    tail) is not a record and is not yielded. With `count_from`, records are only hashed, not
    parsed: seqs are counted from it (cheap, for hashes that are compared with a signed root)."""
    fd = os.open(span.path, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        buffer, at = b"", offset
        while True:
            chunk = os.pread(fd, _CHUNK, at + len(buffer))
            if not chunk:
                return
            buffer += chunk
            start = 0
            while (nl := buffer.find(b"\n", start)) >= 0:
                line = buffer[start:nl]
                if count_from is not None:
                    body, stored = line[_RECORD_AT:-1], line[9:73].decode("ascii", "replace")
                    leaf = leaf_hash(body)
                    if not line.startswith(b'{"hash":"') or stored != leaf.hex():
                        raise TreeError(f"record {count_from} does not hash to its stored hash")
                    yield Entry(count_from, leaf, None, Position(span.number, at + nl + 1))
                    count_from += 1
                    start = nl + 1
                    continue
                try:
                    record, stored, body = parse_line_exact(line)
                except LineError as exc:
                    raise TreeError(f"{span.path.name} at byte {at + start}: {exc}") from None
                leaf = leaf_hash(body)
                if stored != leaf.hex():
                    raise TreeError(f"record {record.seq} does not hash to its stored hash")
                yield Entry(record.seq, leaf, record, Position(span.number, at + nl + 1))
                start = nl + 1
            at += start
            buffer = buffer[start:]
    finally:
        os.close(fd)


def _leaves_from(span: Span, offset: int) -> Iterator[Entry]:
    data = span.path.read_bytes()
    assert span.end is not None
    if len(data) != (span.end - span.first) * 32:
        raise TreeError(f"{span.path.name} does not hold {span.end - span.first} leaf hashes")
    for at in range(offset, len(data), 32):
        yield Entry(span.first + at // 32, data[at : at + 32], None, Position(span.number, at + 32))


def _mth(leaves: list[bytes]) -> bytes:
    frontier = Frontier()
    for leaf in leaves:
        frontier.append(leaf)
    return frontier.root()
