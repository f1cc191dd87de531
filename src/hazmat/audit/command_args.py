"""The arguments of `hazmat audit verify|show|proof|consistency|pubkey`; what they do is in
commands.py, loaded only when one of them runs (so that other commands start quickly)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

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
    verify.set_defaults(handler=_later("verify"))

    show = commands.add_parser("show", help="print records")
    common(show)
    show.add_argument(
        "--since", type=int, default=0, metavar="SEQ", help="start at this record (default 0)"
    )
    show.add_argument("--json", action="store_true", help="one JSON record per line")
    show.set_defaults(handler=_later("show"))

    proof = commands.add_parser("proof", help="inclusion proof of a record in the checkpoint")
    common(proof)
    proof.add_argument("seq", type=int, help="the record's sequence number")
    proof.set_defaults(handler=_later("proof"))

    consistency = commands.add_parser("consistency", help="prove the log extends an old checkpoint")
    common(consistency)
    consistency.add_argument("old_checkpoint", type=Path, help="a checkpoint file saved earlier")
    consistency.set_defaults(handler=_later("consistency"))

    pubkey = commands.add_parser("pubkey", help="print the log's verifier key")
    common(pubkey)
    pubkey.set_defaults(handler=_later("pubkey"))


def _later(name: str) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        from hazmat.audit.commands import HANDLERS

        return HANDLERS[name](args)

    return run
