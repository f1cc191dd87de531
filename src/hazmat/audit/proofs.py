"""Proofs over an audit log's directory against its signed checkpoints: that a record is in the
latest checkpoint (inclusion), and that the log extends an older checkpoint (consistency).
Each is tried with the cached index first, then again from the records alone."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from hazmat._exceptions import AuditError
from hazmat.audit.checkpoint import Checkpoint, CheckpointError, VerifierKey, read_note
from hazmat.audit.index import BLOCK
from hazmat.audit.layout import CHECKPOINT
from hazmat.audit.merkle import (
    consistency_path,
    inclusion_path,
    verify_consistency,
    verify_inclusion,
)
from hazmat.audit.tree import LogTree, TreeError

__all__ = ["consistency_proof", "inclusion_proof", "latest_checkpoint"]


def latest_checkpoint(directory: Path, key: VerifierKey) -> Checkpoint:
    """The log's latest checkpoint, opened with `key`; `AuditError` if there is no valid one."""
    try:
        return key.open(read_note(directory / CHECKPOINT))
    except (OSError, CheckpointError) as exc:
        raise AuditError(f"no valid checkpoint in {directory}: {exc}") from None


def inclusion_proof(directory: Path, checkpoint: Checkpoint, seq: int) -> dict[str, Any]:
    """Record `seq`'s leaf hash (from its bytes), its path to the checkpoint's root, and
    whether they verify."""
    tree = LogTree(directory)

    def attempt() -> dict[str, Any]:
        leaf = tree.block_leaves(seq // BLOCK)[seq % BLOCK]  # from the record's bytes
        path = inclusion_path(seq, checkpoint.size, tree.subtree)
        ok = verify_inclusion(seq, checkpoint.size, leaf, path, checkpoint.root)
        return {"leaf_hash": leaf.hex(), "path": [h.hex() for h in path], "verified": ok}

    return _checked(tree, attempt)


def consistency_proof(directory: Path, old: Checkpoint, new: Checkpoint) -> dict[str, Any]:
    """The proof that the tree of `new` extends that of `old` (no larger), and whether it
    verifies."""
    tree = LogTree(directory)

    def attempt() -> dict[str, Any]:
        if old.size == 0:
            return {"proof": [], "verified": True}
        proof = consistency_path(old.size, new.size, tree.subtree)
        ok = verify_consistency(old.size, new.size, old.root, new.root, proof)
        return {"proof": [h.hex() for h in proof], "verified": ok}

    return _checked(tree, attempt)


def _checked(tree: LogTree, attempt: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """Run a proof with the cached index; if it does not verify, again from the records alone
    (a stale index costs time). Records that cannot be read or hashed fail the proof."""
    try:
        result = attempt()
    except TreeError:
        result = {"verified": False}
    if not result["verified"]:
        tree.distrust_index()
        try:
            result = attempt()
        except TreeError as exc:
            result = {"verified": False, "detail": str(exc)}
    return result
