"""`hazmat audit verify|show|proof|receipt|check-receipt|consistency|pubkey`: verify and read
the tamper-evident audit log. The log's own modules load only when one of them runs (so that
other commands start quickly); the proofs themselves are in audit/proofs.py, receipts in
audit/receipts.py."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hazmat._exceptions import AuditError, InputError

if TYPE_CHECKING:
    from hazmat.audit.checkpoint import VerifierKey
    from hazmat.audit.verify import Report

__all__ = ["add"]

Handler = Callable[[argparse.Namespace], int]


def add(sub: Any) -> None:
    audit = sub.add_parser("audit", help="verify and read the tamper-evident audit log")
    commands = audit.add_subparsers(dest="audit_command", required=True)
    _add_verify(commands)
    show = _add(commands, "show", "print records", _show)
    show.add_argument(
        "--since", type=int, default=0, metavar="SEQ", help="start at this record (default 0)"
    )
    show.add_argument("--json", action="store_true", help="one JSON record per line")
    proof = _add(commands, "proof", "inclusion proof of a record in the checkpoint", _proof)
    proof.add_argument("seq", type=int, help="the record's sequence number")
    receipt = _add(
        commands,
        "receipt",
        "one record with its proof and signed checkpoint, to show a third party",
        _receipt,
    )
    receipt.add_argument("seq", type=int, help="the record's sequence number")
    check = commands.add_parser(
        "check-receipt",
        help="verify a receipt with the log's verifier key alone (no log needed)",
    )
    check.add_argument("receipt", type=Path, help="a receipt file (from `hazmat audit receipt`)")
    check.add_argument(
        "--pubkey",
        type=Path,
        required=True,
        metavar="FILE",
        help="the log's verifier key (from `hazmat audit pubkey`), kept apart from the log",
    )
    check.set_defaults(handler=_check_receipt)
    consistency = _add(
        commands, "consistency", "prove the log extends an old checkpoint", _consistency
    )
    consistency.add_argument("old_checkpoint", type=Path, help="a checkpoint file saved earlier")
    _add(commands, "pubkey", "print the log's verifier key", _pubkey)


def _add(commands: Any, name: str, what: str, handler: Handler) -> argparse.ArgumentParser:
    """A command with the options every audit command has: --log and --pubkey."""
    parser: argparse.ArgumentParser = commands.add_parser(name, help=what)
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
    parser.set_defaults(handler=_io(handler))
    return parser


def _add_verify(commands: Any) -> None:
    verify = _add(commands, "verify", "check every record, seal and checkpoint", _verify)
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


def _io(handler: Handler) -> Handler:
    """An unreadable file is the audit log's error (exit 74), never a traceback."""

    def run(args: argparse.Namespace) -> int:
        try:
            return handler(args)
        except OSError as exc:
            from hazmat.audit.layout import io_message

            where = f" {exc.filename}" if exc.filename else ""
            raise AuditError(f"cannot read the audit log{where}: {io_message(exc)}") from None

    return run


def _dir(args: argparse.Namespace) -> Path:
    from hazmat.audit.layout import ORIGIN
    from hazmat.audit.log import default_audit_dir

    directory: Path = args.log or default_audit_dir()
    if not (directory / ORIGIN).exists():
        raise InputError(f"{directory} is not a hazmat audit log")
    return directory


def _key(args: argparse.Namespace, directory: Path) -> VerifierKey:
    from hazmat.audit.checkpoint import CheckpointError, VerifierKey
    from hazmat.audit.layout import PUBKEY

    path = args.pubkey or directory / PUBKEY
    try:
        return VerifierKey.read(path)
    except OSError as exc:
        raise InputError(f"cannot read verifier key {path}: {exc.strerror or exc}") from None
    except CheckpointError as exc:
        raise InputError(str(exc)) from None


def _verify(args: argparse.Namespace) -> int:
    from hazmat.audit.verify import verify_log

    directory = _dir(args)
    key = _key(args, directory) if args.pubkey else None
    report = verify_log(directory, key, args.checkpoint, args.anchor)
    if args.json:
        print(json.dumps(report.to_dict()))
    else:
        _print_report(args, directory, report)
    return 0 if report.ok else 1


def _print_report(args: argparse.Namespace, directory: Path, report: Report) -> None:
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


def _show(args: argparse.Namespace) -> int:
    from hazmat.audit.tree import LogTree, TreeError

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
            else:
                print(f"{entry.seq:>8} {record['ts']} {record['kind']:<24} {_summary(record)}")
    except TreeError as exc:
        raise AuditError(f"{directory}: {exc}; run `hazmat audit verify`") from None
    return 0


def _summary(record: dict[str, Any]) -> str:
    data = dict(record["data"])
    if isinstance(data.get("assessment"), dict):
        data["level"] = data["assessment"].get("level")
    keys = ("run", "language", "level", "decision", "outcome", "exit_code", "level_after")
    return " ".join(f"{k}={data[k]}" for k in keys if data.get(k) is not None)


def _proof(args: argparse.Namespace) -> int:
    from hazmat.audit.proofs import inclusion_proof, latest_checkpoint

    directory = _dir(args)
    checkpoint = latest_checkpoint(directory, _key(args, directory))
    if not 0 <= args.seq < checkpoint.size:
        raise InputError(f"seq {args.seq} is not in the checkpoint (size {checkpoint.size})")
    result = {"seq": args.seq, "tree_size": checkpoint.size, "root": checkpoint.root.hex()}
    result.update(inclusion_proof(directory, checkpoint, args.seq))
    print(json.dumps(result))
    return 0 if result["verified"] else 1


def _receipt(args: argparse.Namespace) -> int:
    from hazmat.audit.receipts import make_receipt

    directory = _dir(args)
    print(json.dumps(make_receipt(directory, _key(args, directory), args.seq)))
    return 0


def _check_receipt(args: argparse.Namespace) -> int:
    """Prints `{"verified": true, "record": {...}}`, or false and why (exit 1)."""
    from hazmat.audit.receipts import check_receipt, parse_receipt

    key = _key(args, args.receipt.parent)
    try:
        given = args.receipt.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read receipt {args.receipt}: {exc.strerror or exc}") from None
    try:
        receipt = parse_receipt(given)  # checked whole before use: bad input is exit 2
    except InputError as exc:
        raise InputError(f"{args.receipt}: {exc}") from None
    try:
        record = check_receipt(receipt, key)
    except AuditError as exc:
        print(json.dumps({"verified": False, "detail": str(exc)}))
        return 1
    print(json.dumps({"verified": True, "record": record}))
    return 0


def _consistency(args: argparse.Namespace) -> int:
    from hazmat.audit.checkpoint import CheckpointError, read_note
    from hazmat.audit.proofs import consistency_proof, latest_checkpoint

    directory = _dir(args)
    key = _key(args, directory)
    try:
        old = key.open(read_note(args.old_checkpoint))
    except (OSError, CheckpointError) as exc:
        raise InputError(f"cannot use old checkpoint {args.old_checkpoint}: {exc}") from None
    new = latest_checkpoint(directory, key)
    result: dict[str, Any] = {
        "old_size": old.size,
        "new_size": new.size,
        "old_root": old.root.hex(),
        "new_root": new.root.hex(),
    }
    if old.size > new.size:
        result.update(consistent=False, detail="the log is shorter than the old checkpoint")
    else:
        checked = consistency_proof(directory, old, new)
        result["consistent"] = checked.pop("verified")
        result.update(checked)
    print(json.dumps(result))
    return 0 if result["consistent"] else 1


def _pubkey(args: argparse.Namespace) -> int:
    directory = _dir(args)
    print(_key(args, directory).encode())
    return 0
