"""What `hazmat audit verify|show|proof|consistency|pubkey` do (their arguments are in
command_args.py, which loads this module only when one of them runs)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from hazmat._exceptions import AuditError, InputError
from hazmat.audit.checkpoint import Checkpoint, CheckpointError, VerifierKey
from hazmat.audit.index import BLOCK
from hazmat.audit.layout import io_message
from hazmat.audit.log import default_audit_dir
from hazmat.audit.merkle import (
    consistency_path,
    inclusion_path,
    verify_consistency,
    verify_inclusion,
)
from hazmat.audit.tree import LogTree, TreeError
from hazmat.audit.verify import verify_log

__all__ = ["HANDLERS"]


def _io(handler: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """An unreadable file is the audit log's error (exit 74), never a traceback."""

    def run(args: argparse.Namespace) -> int:
        try:
            return handler(args)
        except OSError as exc:
            where = f" {exc.filename}" if exc.filename else ""
            raise AuditError(f"cannot read the audit log{where}: {io_message(exc)}") from None

    return run


def _dir(args: argparse.Namespace) -> Path:
    directory: Path = args.log or default_audit_dir()
    if not (directory / "origin").exists():
        raise InputError(f"{directory} is not a hazmat audit log")
    return directory


def _key(args: argparse.Namespace, directory: Path) -> VerifierKey:
    path = args.pubkey or directory / "pubkey"
    try:
        return VerifierKey.decode(path.read_text())
    except (OSError, CheckpointError) as exc:
        raise InputError(f"cannot use verifier key {path}: {exc}") from None


def _verify(args: argparse.Namespace) -> int:
    directory = _dir(args)
    key = _key(args, directory) if args.pubkey else None
    report = verify_log(directory, key, args.checkpoint, args.anchor)
    if args.json:
        print(json.dumps(report.to_dict()))
        return 0 if report.ok else 1
    verdict = {"intact": "INTACT", "crash": "INTACT (crash tail)", "tampered": "TAMPERED"}
    print(f"audit log {directory}: {verdict[report.verdict]}")
    last = report.verified_to - 1
    print(
        f"  verified records {report.verified_from}..{last} "
        f"({report.records} checked); expected 0..{report.expected_to - 1}"
    )
    if report.expired_segments:
        print(f"  expired by retention (leaf hashes kept): segments {report.expired_segments}")
    print(
        f"  checkpoints: {len(report.checkpoints)} given or found, "
        f"{report.checkpoints_verified} compared with the records"
    )
    if report.crash:
        c = report.crash
        print(
            f"  crash: {c['bytes']} bytes after record {c['after_seq']} in segment "
            f"{c['segment']:06d} are a torn write (never acknowledged); the next writer cuts "
            "and records them"
        )
    if not args.pubkey or (not args.checkpoint and not args.anchor):
        print(
            "  note: without --pubkey (a key kept elsewhere) and --anchor/--checkpoint, a cut "
            "tail or a replaced log re-signed with the log's own key goes unnoticed"
        )
    if report.problem:
        p = report.problem
        where = f"seq {p.seq}" if p.seq is not None else "checkpoint"
        segment = f", segment {p.segment:06d}" if p.segment else ""
        print(f"  first problem: {p.kind} at {where}{segment}: {p.detail}")
    return 0 if report.ok else 1


def _show(args: argparse.Namespace) -> int:
    directory = _dir(args)
    tree = LogTree(directory)
    if tree.listing.unexpected:
        names = ", ".join(p.name for p in tree.listing.unexpected)
        raise AuditError(f"{directory}: not part of the log: {names}; run `hazmat audit verify`")
    if not tree.spans:
        return 0
    first = max(args.since, tree.spans[0].first)
    try:
        for entry in tree.entries(first, tree.start_of(first)):
            if entry.record is None:
                continue  # expired: only its leaf hash is kept
            record = entry.record.as_json()
            if args.json:
                print(json.dumps(record, ensure_ascii=True))  # no raw control characters
                continue
            data = dict(record["data"])
            if isinstance(data.get("assessment"), dict):
                data["level"] = data["assessment"].get("level")
            keys = ("run", "language", "level", "decision", "outcome", "exit_code", "level_after")
            summary = " ".join(f"{k}={data[k]}" for k in keys if data.get(k) is not None)
            print(f"{entry.seq:>8} {record['ts']} {record['kind']:<24} {summary}")
    except TreeError as exc:
        raise AuditError(f"{directory}: {exc}; run `hazmat audit verify`") from None
    return 0


def _latest(directory: Path, key: VerifierKey) -> Checkpoint:
    try:
        return key.open((directory / "checkpoint").read_text())
    except (OSError, CheckpointError) as exc:
        raise AuditError(f"no valid checkpoint in {directory}: {exc}") from None


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


def _proof(args: argparse.Namespace) -> int:
    directory = _dir(args)
    checkpoint = _latest(directory, _key(args, directory))
    if not 0 <= args.seq < checkpoint.size:
        raise InputError(f"seq {args.seq} is not in the checkpoint (size {checkpoint.size})")
    tree = LogTree(directory)

    def attempt() -> dict[str, Any]:
        leaf = tree.block_leaves(args.seq // BLOCK)[args.seq % BLOCK]  # from the record's bytes
        path = inclusion_path(args.seq, checkpoint.size, tree.subtree)
        ok = verify_inclusion(args.seq, checkpoint.size, leaf, path, checkpoint.root)
        return {"leaf_hash": leaf.hex(), "path": [h.hex() for h in path], "verified": ok}

    result = {"seq": args.seq, "tree_size": checkpoint.size, "root": checkpoint.root.hex()}
    result.update(_checked(tree, attempt))
    print(json.dumps(result))
    return 0 if result["verified"] else 1


def _consistency(args: argparse.Namespace) -> int:
    directory = _dir(args)
    key = _key(args, directory)
    try:
        old = key.open(args.old_checkpoint.read_text())
    except (OSError, CheckpointError) as exc:
        raise InputError(f"cannot use old checkpoint {args.old_checkpoint}: {exc}") from None
    new = _latest(directory, key)
    result: dict[str, Any] = {
        "old_size": old.size,
        "new_size": new.size,
        "old_root": old.root.hex(),
        "new_root": new.root.hex(),
    }
    if old.size > new.size:
        result.update(consistent=False, detail="the log is shorter than the old checkpoint")
        print(json.dumps(result))
        return 1
    tree = LogTree(directory)

    def attempt() -> dict[str, Any]:
        if old.size == 0:
            return {"proof": [], "verified": True}
        proof = consistency_path(old.size, new.size, tree.subtree)
        ok = verify_consistency(old.size, new.size, old.root, new.root, proof)
        return {"proof": [h.hex() for h in proof], "verified": ok}

    checked = _checked(tree, attempt)
    result["consistent"] = checked.pop("verified")
    result.update(checked)
    print(json.dumps(result))
    return 0 if result["consistent"] else 1


def _pubkey(args: argparse.Namespace) -> int:
    directory = _dir(args)
    print(_key(args, directory).encode())
    return 0


HANDLERS: Mapping[str, Callable[[argparse.Namespace], int]] = MappingProxyType(
    {
        "verify": _io(_verify),
        "show": _io(_show),
        "proof": _io(_proof),
        "consistency": _io(_consistency),
        "pubkey": _io(_pubkey),
    }
)
