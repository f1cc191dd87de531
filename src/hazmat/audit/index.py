"""A cache of subtree hashes: for each block of 1024 records, the hash of its subtree and where
the block ends on disk. With it, a checkpoint's root, an inclusion proof or a consistency proof
needs the block hashes (O(n / 1024) hashing, cheap) and at most a few blocks' records.

    index/blocks   entry b at byte b * 44: subtree hash (32) || segment (u32) || end offset (u64)

The index lives in the log directory, so it is trusted for nothing: every use ends in a
comparison with a signed root, and an entry that is missing, zero or wrong is recomputed from
the records. The writer does not fsync it.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path

__all__ = ["BLOCK", "BlockEntry", "BlockIndex"]

BLOCK = 1024
_ENTRY = struct.Struct(">32sIQ")
_ZERO = b"\x00" * 32


@dataclass(frozen=True)
class BlockEntry:
    hash: bytes
    segment: int  # where the block's last record ends: segment number...
    end: int  # ...and byte offset just past it


class BlockIndex:
    def __init__(self, directory: Path) -> None:
        self.path = directory / "index" / "blocks"
        self._entries: dict[int, BlockEntry | None] | None = None

    def load(self) -> dict[int, BlockEntry | None]:
        if self._entries is None:
            self._entries = {}
            try:
                data = self.path.read_bytes()
            except OSError:
                data = b""
            for b in range(len(data) // _ENTRY.size):
                digest, segment, end = _ENTRY.unpack_from(data, b * _ENTRY.size)
                self._entries[b] = None if digest == _ZERO else BlockEntry(digest, segment, end)
        return self._entries

    def get(self, block: int) -> BlockEntry | None:
        return self.load().get(block)

    def put(self, block: int, entry: BlockEntry, write: bool = True) -> None:
        """Remember an entry, and store it if `write` (best effort: it is a cache)."""
        self.load()[block] = entry
        if not write:
            return
        try:
            self.path.parent.mkdir(exist_ok=True, mode=0o700)
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, 0o600)
            try:
                os.pwrite(
                    fd, _ENTRY.pack(entry.hash, entry.segment, entry.end), block * _ENTRY.size
                )
            finally:
                os.close(fd)
        except OSError:
            pass

    def forget(self) -> None:
        """Drop what was read (after a mismatch, everything is recomputed)."""
        self._entries = {}
