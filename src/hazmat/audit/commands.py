"""`hazmat audit verify|show|proof|consistency|pubkey`."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from hazmat._exceptions import AuditError, InputError
from hazmat.audit.checkpoint import Checkpoint, CheckpointError, VerifierKey
from hazmat.audit.log import default_audit_dir
from hazmat.audit.merkle import (
    consistency_proof,
    inclusion_proof,
    verify_consistency,
    verify_inclusion,
)
from hazmat.audit.records import LineError, parse_line
from hazmat.audit.verify import Report, log_key, verify_log

__all__ = ["add_audit_commands"]


def add_audit_commands(sub: Any) -> None:
    audit = sub.add_parser("audit", help="verify and read the tamper-evident audit log")
    commands = audit.add_subparsers(dest="audit_command", required=True)

    def common(parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "--log",
            type=Path,
            metavar="DIR",
            help="the log directory (default: $HAZMAT_AUDIT_DIR, else ~/.local/state/hazmat/audit)",
        )
        parser.add_argument(
            "--pubkey",
            type=Path,
            metavar="FILE",
            help="verifier key kept outside the log (from `hazmat audit pubkey`)",
        )

    verify = commands.add_parser("verify", help="check every record, seal and checkpoint")
    common(verify)
    verify.add_argument(
        "--checkpoint",
        type=Path,
        action="append",
        default=[],
        metavar="FILE",
        help="a checkpoint saved earlier (repeatable)",
    )
    verify.add_argument("--anchor", type=Path, metavar="DIR", help="directory of anchor copies")
    verify.add_argument("--json", action="store_true", help="print the report as JSON")
    verify.set_defaults(handler=_verify)

    show = commands.add_parser("show", help="print records")
    common(show)
    show.add_argument(
        "--since", type=int, default=0, metavar="SEQ", help="start at this record (default 0)"
    )
    show.add_argument("--json", action="store_true", help="one JSON record per line")
    show.set_defaults(handler=_show)

    proof = commands.add_parser("proof", help="inclusion proof of a record in the checkpoint")
    common(proof)
    proof.add_argument("seq", type=int, help="the record's sequence number")
    proof.set_defaults(handler=_proof)

    consistency = commands.add_parser("consistency", help="prove the log extends an old checkpoint")
    common(consistency)
    consistency.add_argument("old_checkpoint", type=Path, help="a checkpoint file saved earlier")
    consistency.set_defaults(handler=_consistency)

    pubkey = commands.add_parser("pubkey", help="print the log's verifier key")
    common(pubkey)
    pubkey.set_defaults(handler=_pubkey)


def _dir(args: argparse.Namespace) -> Path:
    directory: Path = args.log or default_audit_dir()
    if not (directory / "origin").exists():
        raise InputError(f"{directory} is not a hazmat audit log")
    return directory


def _key(args: argparse.Namespace, directory: Path) -> VerifierKey:
    if args.pubkey:
        try:
            return VerifierKey.decode(args.pubkey.read_text())
        except (OSError, CheckpointError) as exc:
            raise InputError(f"cannot use verifier key {args.pubkey}: {exc}") from None
    key = log_key(directory, Report())
    if key is None:
        raise InputError(f"{directory} has no signing key")
    return key


def _verify(args: argparse.Namespace) -> int:
    directory = _dir(args)
    key = _key(args, directory) if args.pubkey else None
    report = verify_log(directory, key, args.checkpoint, args.anchor)
    if args.json:
        print(json.dumps(report.to_dict()))
        return 0 if report.ok else 1
    print(f"audit log {directory}: {'INTACT' if report.ok else 'TAMPERED'}")
    last = report.verified_to - 1
    print(
        f"  verified records {report.verified_from}..{last} "
        f"({report.records} checked); expected 0..{report.expected_to - 1}"
    )
    if report.expired_segments:
        print(f"  expired by retention (seals verified): segments {report.expired_segments}")
    print(f"  checkpoints: {', '.join(report.checkpoints) or 'none'}")
    if not args.pubkey and not args.checkpoint and not args.anchor:
        print(
            "  note: checked against the log's own key and checkpoint only; cutting the tail "
            "or replacing the whole log needs --pubkey and an anchor (--anchor/--checkpoint)"
        )
    if report.problem:
        p = report.problem
        where = f"seq {p.seq}" if p.seq is not None else "checkpoint"
        segment = f", segment {p.segment:06d}" if p.segment else ""
        print(f"  first problem: {p.kind} at {where}{segment}: {p.detail}")
    return 0 if report.ok else 1


def _records(directory: Path) -> list[tuple[int, bytes, dict[str, Any]]]:
    out = []
    for path in sorted((directory / "segments").glob("*.jsonl")):
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise AuditError(f"cannot read {path}: {exc.strerror or exc}") from None
        for line in data.splitlines():
            try:
                record, stored = parse_line(line)
            except LineError as exc:
                raise AuditError(f"{path}: {exc}; run `hazmat audit verify`") from None
            out.append((record.seq, bytes.fromhex(stored), record.as_json()))
    return out


def _show(args: argparse.Namespace) -> int:
    for seq, _, record in _records(_dir(args)):
        if seq < args.since:
            continue
        if args.json:
            print(json.dumps(record, ensure_ascii=False))
            continue
        data = dict(record["data"])
        if isinstance(data.get("assessment"), dict):
            data["level"] = data["assessment"].get("level")
        summary = " ".join(
            f"{k}={data[k]}"
            for k in ("run", "language", "level", "decision", "outcome", "exit_code", "level_after")
            if data.get(k) is not None
        )
        print(f"{seq:>8} {record['ts']} {record['kind']:<24} {summary}")
    return 0


def _leaves(directory: Path) -> list[bytes]:
    records = _records(directory)
    if records and records[0][0] != 0:
        raise AuditError("proofs need every segment; the oldest ones expired by retention")
    return [leaf for _, leaf, _ in records]


def _latest(directory: Path, key: VerifierKey) -> Checkpoint:
    try:
        return key.open((directory / "checkpoint").read_text())
    except (OSError, CheckpointError) as exc:
        raise AuditError(f"no valid checkpoint in {directory}: {exc}") from None


def _proof(args: argparse.Namespace) -> int:
    directory = _dir(args)
    checkpoint = _latest(directory, _key(args, directory))
    leaves = _leaves(directory)[: checkpoint.size]
    if not 0 <= args.seq < checkpoint.size:
        raise InputError(f"seq {args.seq} is not in the checkpoint (size {checkpoint.size})")
    path = inclusion_proof(args.seq, leaves)
    ok = verify_inclusion(args.seq, checkpoint.size, leaves[args.seq], path, checkpoint.root)
    print(
        json.dumps(
            {
                "seq": args.seq,
                "leaf_hash": leaves[args.seq].hex(),
                "tree_size": checkpoint.size,
                "root": checkpoint.root.hex(),
                "path": [h.hex() for h in path],
                "verified": ok,
            }
        )
    )
    return 0 if ok else 1


def _consistency(args: argparse.Namespace) -> int:
    directory = _dir(args)
    key = _key(args, directory)
    try:
        old = key.open(args.old_checkpoint.read_text())
    except (OSError, CheckpointError) as exc:
        raise InputError(f"cannot use old checkpoint {args.old_checkpoint}: {exc}") from None
    new = _latest(directory, key)
    leaves = _leaves(directory)[: new.size]
    if old.size > new.size or old.size > len(leaves):
        print(
            json.dumps(
                {
                    "old_size": old.size,
                    "new_size": new.size,
                    "consistent": False,
                    "detail": "the log is shorter than the old checkpoint",
                }
            )
        )
        return 1
    proof = consistency_proof(old.size, leaves) if old.size else []
    ok = old.size == 0 or verify_consistency(old.size, new.size, old.root, new.root, proof)
    print(
        json.dumps(
            {
                "old_size": old.size,
                "new_size": new.size,
                "old_root": old.root.hex(),
                "new_root": new.root.hex(),
                "proof": [h.hex() for h in proof],
                "consistent": ok,
            }
        )
    )
    return 0 if ok else 1


def _pubkey(args: argparse.Namespace) -> int:
    directory = _dir(args)
    print(_key(args, directory).encode())
    return 0
