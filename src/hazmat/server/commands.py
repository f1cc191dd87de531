"""`hazmat serve`, `hazmat mcp` and `hazmat keys create|list|revoke`: their arguments and what
they do.

Imports only what parsing needs; the service's own modules load when a command runs.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hazmat._exceptions import InputError
from hazmat.server.guard import ConnectionLimits

if TYPE_CHECKING:
    from hazmat.cluster.front import ClusterOptions

__all__ = ["add_server_commands"]

MiB = 1024 * 1024


def add_server_commands(sub: Any) -> None:
    serve = sub.add_parser("serve", help="serve the HTTP API (a unix socket by default)")
    serve.add_argument("--socket", type=Path, metavar="PATH", help="unix socket to listen on")
    serve.add_argument("--host", metavar="HOST", help="TCP address (127.0.0.1 with --port alone)")
    serve.add_argument("--port", type=int, metavar="PORT", help="TCP port (0: any free one)")
    serve.add_argument("--policy", type=Path, metavar="FILE", help="policy file (YAML)")
    serve.add_argument("--keys", type=Path, metavar="FILE", help="key store (default: see keys)")
    serve.add_argument(
        "--max-running", type=int, default=8, metavar="N", help="runs at once (default 8)"
    )
    serve.add_argument(
        "--grace",
        type=float,
        metavar="S",
        help="on SIGTERM, seconds for requests in flight to be answered "
        "(default: the policy's longest run, compile included, plus 10)",
    )
    limits = ConnectionLimits()
    for flag, kind, default, what in (
        ("--max-connections", int, limits.max_connections, "connections and requests at once"),
        ("--head-timeout", float, limits.head_timeout_s, "seconds for a request's headers"),
        ("--body-timeout", float, limits.body_timeout_s, "seconds for a request's body (408)"),
        ("--keep-alive", int, limits.keep_alive_s, "seconds an idle connection is kept"),
    ):
        serve.add_argument(
            flag, type=kind, default=default, metavar="N", help=f"{what} (default {default:g})"
        )
    serve.add_argument(
        "--redis", metavar="URL", help="run on the cluster's workers (docs/scale.md), not here"
    )
    serve.add_argument(
        "--on-lost",
        choices=("report", "retry"),
        default="report",
        help="with --redis, a run whose worker died: answer 503 saying so (default), or run "
        "it again on another worker (both attempts are in the workers' audit logs)",
    )
    serve.add_argument(
        "--attempts", type=int, default=3, metavar="N", help="with --on-lost retry: at most N (3)"
    )
    serve.add_argument(
        "--anchors",
        type=Path,
        metavar="DIR",
        help="with --redis, where the workers' signed checkpoints are kept "
        "(default: beside the key store, in cluster-anchors/)",
    )
    serve.set_defaults(handler=_serve)

    worker = sub.add_parser("worker", help="take runs for this Docker engine from the cluster")
    worker.add_argument("--redis", required=True, metavar="URL", help="the cluster's Redis")
    worker.add_argument("--name", metavar="NAME", help="this worker's name (default: hostname)")
    worker.add_argument("--slots", type=int, default=4, metavar="N", help="runs at once (4)")
    worker.add_argument("--policy", type=Path, metavar="FILE", help="policy file (YAML)")
    worker.set_defaults(handler=_worker)

    mcp = sub.add_parser(
        "mcp", help="serve MCP tools (run_code, assess_code) over stdio, for HAZMAT_API_KEY"
    )
    mcp.add_argument("--policy", type=Path, metavar="FILE", help="policy file (YAML)")
    mcp.add_argument("--keys", type=Path, metavar="FILE", help="key store (default: see keys)")
    mcp.set_defaults(handler=_mcp)

    keys = sub.add_parser("keys", help="API keys for the service: create, list, revoke")
    commands = keys.add_subparsers(dest="keys_command", required=True, metavar="COMMAND")
    create = commands.add_parser("create", help="create a key (printed once)")
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
    lister = commands.add_parser("list", help="list keys (never the keys themselves)")
    revoke = commands.add_parser("revoke", help="revoke a key by its id")
    revoke.add_argument("id", help="the key's id (hzm_<id>_..., or the id alone)")
    for parser in (create, lister, revoke):
        parser.add_argument("--keys", type=Path, metavar="FILE", help="key store to use")
        parser.add_argument("--json", action="store_true", help="print JSON")
    create.set_defaults(handler=_keys_create)
    lister.set_defaults(handler=_keys_list)
    revoke.set_defaults(handler=_keys_revoke)


def _store(args: argparse.Namespace) -> Any:
    from hazmat.server.keys import KeyStore, default_keys_path

    return KeyStore(args.keys or default_keys_path())


def _serve(args: argparse.Namespace) -> int:
    from hazmat.policy import Policy, load_policy
    from hazmat.server.client import default_socket_path
    from hazmat.server.serve import bind, longest_run_s, serve

    if args.max_running < 1 or (args.grace is not None and args.grace <= 0):
        raise InputError("--max-running must be at least 1 and --grace positive")
    try:
        connections = ConnectionLimits(
            args.max_connections, args.head_timeout, args.body_timeout, args.keep_alive
        )
    except ValueError as exc:
        raise InputError(f"hazmat serve: {exc}") from None
    policy = load_policy(args.policy) if args.policy else Policy()
    grace = args.grace if args.grace is not None else longest_run_s(policy) + 10
    store = _store(args)
    path = args.socket or (None if args.host or args.port is not None else default_socket_path())
    sock = bind(args.host, args.port, path)
    serve(
        sock,
        policy,
        store,
        max_running=args.max_running,
        grace_s=grace,
        progress=lambda line: print(line, flush=True),
        cluster=_cluster_options(args, store.path),
        connections=connections,
    )
    return 0


def _cluster_options(args: argparse.Namespace, keys: Path) -> ClusterOptions | None:
    from hazmat.cluster.front import ClusterOptions

    if not args.redis:
        for given, flag in ((args.anchors, "--anchors"), (args.on_lost != "report", "--on-lost")):
            if given:
                raise InputError(f"{flag} needs --redis (it is about the cluster's workers)")
        return None
    if args.attempts < 1:
        raise InputError("--attempts must be at least 1")
    anchors = args.anchors or keys.parent / "cluster-anchors"
    return ClusterOptions(args.redis, anchors, args.on_lost, args.attempts)


def _worker(args: argparse.Namespace) -> int:
    import signal
    import socket
    import threading

    from hazmat.cluster.anchors import WORKER_NAME
    from hazmat.cluster.keys import broker
    from hazmat.cluster.worker import ClusterWorker
    from hazmat.policy import Policy, load_policy
    from hazmat.sandbox import Sandbox
    from hazmat.server.serve import reap

    if args.slots < 1:
        raise InputError("--slots must be at least 1")
    name = args.name or socket.gethostname()
    if not WORKER_NAME.fullmatch(name):
        raise InputError(
            f"--name {name!r}: a worker's name is 1-63 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )
    policy = load_policy(args.policy) if args.policy else Policy()
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    broker(args.redis).client.close()  # Redis answers (or a clear error) before anything starts
    reap(lambda line: print(line, flush=True))  # what a killed worker on this engine left
    with Sandbox(policy) as sandbox:
        worker = ClusterWorker(args.redis, name, args.slots, sandbox)
        worker.start()
        print(f"hazmat worker: {name} taking runs ({args.slots} at once)", flush=True)
        stop.wait()
        worker.stop()
    print(f"hazmat worker: {name} stopped; every container removed", flush=True)
    return 0


def _mcp(args: argparse.Namespace) -> int:
    from hazmat.policy import Policy, load_policy
    from hazmat.sandbox import Sandbox
    from hazmat.server.mcp import serve_stdio

    policy = load_policy(args.policy) if args.policy else Policy()
    with Sandbox(policy) as sandbox:
        serve_stdio(sandbox, _store(args))
    return 0


def _keys_create(args: argparse.Namespace) -> int:
    from hazmat.server.keys import Quotas

    quotas = Quotas(args.concurrent, args.per_minute, round(args.max_request_mb * MiB))
    key, secret = _store(args).create(args.tenant, args.trust, quotas, args.override)
    if args.json:
        print(json.dumps({**key.public(), "key": secret}))
        return 0
    print(secret)
    print(
        f"hazmat: key {key.id} for tenant {key.tenant!r} at trust {key.trust.value}; "
        "it is shown only now (only its hash is stored)",
        file=sys.stderr,
    )
    return 0


def _keys_list(args: argparse.Namespace) -> int:
    keys = _store(args).list()
    if args.json:
        print(json.dumps([key.public() for key in keys]))
        return 0
    print(f"{'ID':<13} {'TENANT':<20} {'TRUST':<10} {'QUOTAS':<28} STATE")
    for key in keys:
        q = key.quotas
        quotas = f"{q.concurrent} at once, {q.per_minute}/min"
        state = f"revoked {key.revoked}" if key.revoked else "live"
        print(f"{key.id:<13} {key.tenant:<20} {key.trust.value:<10} {quotas:<28} {state}")
    return 0


def _keys_revoke(args: argparse.Namespace) -> int:
    key = _store(args).revoke(args.id)
    if args.json:
        print(json.dumps(key.public()))
    else:
        print(f"key {key.id} of tenant {key.tenant!r} revoked at {key.revoked}")
    return 0
