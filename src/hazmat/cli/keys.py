"""`hazmat keys create|list|revoke`: the service's API keys, in the key store (`--keys FILE`,
else the default one). A key is printed once, when it is made; only its hash is kept."""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

from hazmat._exceptions import InputError
from hazmat.cli.common import key_store

__all__ = ["add"]

MiB = 1024 * 1024


def add(sub: Any) -> None:
    keys = sub.add_parser("keys", help="API keys for the service: create, list, revoke")
    commands = keys.add_subparsers(dest="keys_command", required=True, metavar="COMMAND")
    create = _add_create(commands)
    lister = commands.add_parser("list", help="list keys (never the keys themselves)")
    revoke = commands.add_parser("revoke", help="revoke a key by its id")
    revoke.add_argument("id", help="the key's id (hzm_<id>_..., or the id alone)")
    for parser in (create, lister, revoke):
        parser.add_argument("--keys", type=Path, metavar="FILE", help="key store to use")
        parser.add_argument("--json", action="store_true", help="print JSON")
    create.set_defaults(handler=_create)
    lister.set_defaults(handler=_list)
    revoke.set_defaults(handler=_revoke)


def _add_create(commands: Any) -> argparse.ArgumentParser:
    create: argparse.ArgumentParser = commands.add_parser(
        "create", help="create a key (printed once)"
    )
    create.add_argument("--tenant", required=True, metavar="NAME", help="who the key is for")
    create.add_argument(
        "--trust",
        required=True,
        choices=["untrusted", "unknown", "trusted"],
        help="the highest trust level the key's runs get",
    )
    create.add_argument("--concurrent", type=int, default=4, metavar="N", help="runs at once")
    create.add_argument("--per-minute", type=int, default=120, metavar="N", help="runs a minute")
    create.add_argument(
        "--max-request-mb", type=float, default=8, metavar="MB", help="largest request body"
    )
    create.add_argument(
        "--override", action="store_true", help="its runs may override a block, with a reason"
    )
    create.add_argument(
        "--operator",
        action="store_true",
        help="it sees every tenant in the console (/console), not only its own",
    )
    return create


def _create(args: argparse.Namespace) -> int:
    from hazmat.service.quotas import Quotas

    if not math.isfinite(args.max_request_mb * MiB):  # round() of inf or NaN raises
        raise InputError(f"--max-request-mb must be a number of MB, not {args.max_request_mb}")
    quotas = Quotas(args.concurrent, args.per_minute, round(args.max_request_mb * MiB))
    key, secret = key_store(args).create(
        args.tenant, args.trust, quotas, args.override, operator=args.operator
    )
    if args.json:
        print(json.dumps({**key.public(), "key": secret}))
        return 0
    print(secret)
    print(
        f"hazmat: key {key.id} for tenant {key.tenant!r} at trust {key.trust.value}"
        f"{' (operator: sees every tenant in the console)' if key.operator else ''}; "
        "it is shown only now (only its hash is stored)",
        file=sys.stderr,
    )
    return 0


def _list(args: argparse.Namespace) -> int:
    keys = key_store(args).list()
    if args.json:
        print(json.dumps([key.public() for key in keys]))
        return 0
    print(f"{'ID':<13} {'TENANT':<20} {'TRUST':<10} {'QUOTAS':<28} STATE")
    for key in keys:
        q = key.quotas
        quotas = f"{q.concurrent} at once, {q.per_minute}/min"
        state = f"revoked {key.revoked}" if key.revoked else "live"
        state += ", operator" if key.operator else ""
        print(f"{key.id:<13} {key.tenant:<20} {key.trust.value:<10} {quotas:<28} {state}")
    return 0


def _revoke(args: argparse.Namespace) -> int:
    key = key_store(args).revoke(args.id)
    if args.json:
        print(json.dumps(key.public()))
    else:
        print(f"key {key.id} of tenant {key.tenant!r} revoked at {key.revoked}")
    return 0
