"""RFC 9162 Merkle trees: leaf and node hashes, roots, inclusion and consistency proofs.

Leaves are `SHA-256(0x00 || record)`, interior nodes `SHA-256(0x01 || left || right)`, and a
tree of n leaves splits at the largest power of two below n (RFC 9162, section 2.1.1).
`Frontier` keeps the roots of the perfect subtrees of the tree so far, so appending a leaf and
computing the root cost O(log n).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence

__all__ = [
    "EMPTY_ROOT",
    "Frontier",
    "consistency_path",
    "consistency_proof",
    "inclusion_path",
    "inclusion_proof",
    "leaf_hash",
    "node_hash",
    "perfect_root",
    "root",
    "verify_consistency",
    "verify_inclusion",
]

EMPTY_ROOT = hashlib.sha256(b"").digest()


def leaf_hash(data: bytes) -> bytes:
    return hashlib.sha256(b"\x00" + data).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + left + right).digest()


def _split(n: int) -> int:
    """The largest power of two smaller than n (n > 1)."""
    return 1 << ((n - 1).bit_length() - 1)


class Frontier:
    """The roots of the perfect subtrees that make up a tree, largest first."""

    def __init__(self, size: int = 0, hashes: Sequence[bytes] = ()) -> None:
        if len(hashes) != bin(size).count("1"):
            raise ValueError(f"a tree of {size} leaves has {bin(size).count('1')} subtrees")
        self.size = size
        self.hashes = list(hashes)

    def append(self, leaf: bytes) -> None:
        node = leaf
        size = self.size
        while size & 1:  # merge with equal-sized subtrees on the right edge
            node = node_hash(self.hashes.pop(), node)
            size >>= 1
        self.hashes.append(node)
        self.size += 1

    def root(self) -> bytes:
        if not self.hashes:
            return EMPTY_ROOT
        node = self.hashes[-1]
        for left in reversed(self.hashes[:-1]):
            node = node_hash(left, node)
        return node

    def copy(self) -> Frontier:
        return Frontier(self.size, list(self.hashes))


def perfect_root(nodes: Sequence[bytes]) -> bytes:
    """The root of a perfect tree (a power of two) of nodes, without the general split."""
    level = list(nodes)
    while len(level) > 1:
        level = [node_hash(level[i], level[i + 1]) for i in range(0, len(level), 2)]
    return level[0]


def root(leaves: Sequence[bytes]) -> bytes:
    """The Merkle tree hash of a list of leaf hashes."""
    frontier = Frontier()
    for leaf in leaves:
        frontier.append(leaf)
    return frontier.root()


def inclusion_proof(index: int, leaves: Sequence[bytes]) -> list[bytes]:
    """The audit path for leaf `index` in the tree of `leaves` (RFC 9162, 2.1.3.1)."""
    return inclusion_path(index, len(leaves), lambda lo, hi: root(leaves[lo:hi]))


def inclusion_path(index: int, size: int, subtree: Callable[[int, int], bytes]) -> list[bytes]:
    """As `inclusion_proof`, with `subtree(lo, hi)` giving the hash of leaves lo..hi-1 (from a
    cache of subtree hashes, for instance)."""
    if not 0 <= index < size:
        raise ValueError(f"leaf {index} is not in a tree of {size}")
    path: list[bytes] = []
    lo, hi = 0, size
    while hi - lo > 1:
        k = _split(hi - lo)
        if index < lo + k:
            path.append(subtree(lo + k, hi))
            hi = lo + k
        else:
            path.append(subtree(lo, lo + k))
            lo = lo + k
    return path[::-1]


def verify_inclusion(
    index: int, size: int, leaf: bytes, path: Sequence[bytes], expected: bytes
) -> bool:
    """RFC 9162, 2.1.3.2."""
    if index >= size:
        return False
    fn, sn, r = index, size - 1, leaf
    for p in path:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            if not fn & 1:
                while fn and not fn & 1:
                    fn >>= 1
                    sn >>= 1
        else:
            r = node_hash(r, p)
        fn >>= 1
        sn >>= 1
    return sn == 0 and r == expected


def consistency_proof(old_size: int, leaves: Sequence[bytes]) -> list[bytes]:
    """Proof that the tree of the first `old_size` leaves is a prefix (RFC 9162, 2.1.4.1)."""
    return consistency_path(old_size, len(leaves), lambda lo, hi: root(leaves[lo:hi]))


def consistency_path(old_size: int, size: int, subtree: Callable[[int, int], bytes]) -> list[bytes]:
    """As `consistency_proof`, with `subtree(lo, hi)` giving subtree hashes."""
    if not 0 < old_size <= size:
        raise ValueError(f"no consistency proof from {old_size} to {size}")
    return _subproof(old_size, 0, size, True, subtree)


def _subproof(
    m: int, lo: int, hi: int, complete: bool, subtree: Callable[[int, int], bytes]
) -> list[bytes]:
    n = hi - lo
    if m == n:
        return [] if complete else [subtree(lo, hi)]
    k = _split(n)
    if m <= k:
        return [*_subproof(m, lo, lo + k, complete, subtree), subtree(lo + k, hi)]
    return [*_subproof(m - k, lo + k, hi, False, subtree), subtree(lo, lo + k)]


def verify_consistency(
    old_size: int, new_size: int, old_root: bytes, new_root: bytes, proof: Sequence[bytes]
) -> bool:
    """RFC 9162, 2.1.4.2."""
    if old_size == new_size:
        return not proof and old_root == new_root
    if not 0 < old_size < new_size or not proof:
        return False
    path = list(proof)
    if old_size & (old_size - 1) == 0:  # a power of two: the old root is the first node
        path.insert(0, old_root)
    fn, sn = old_size - 1, new_size - 1
    while fn & 1:
        fn >>= 1
        sn >>= 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            fr = node_hash(c, fr)
            sr = node_hash(c, sr)
            if not fn & 1:
                while fn and not fn & 1:
                    fn >>= 1
                    sn >>= 1
        else:
            sr = node_hash(sr, c)
        fn >>= 1
        sn >>= 1
    return fr == old_root and sr == new_root and sn == 0
