"""`hazmat serve`: the HTTP API on a unix socket (the default) or a TCP port, running here or,
with --redis, on the cluster's workers (docs/scale.md).

Imports only what parsing needs; the service's own modules load when the command runs.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hazmat._exceptions import InputError
from hazmat.cli.common import key_store, policy
from hazmat.server.guard import ConnectionLimits

if TYPE_CHECKING:
    from hazmat.policy import Policy
    from hazmat.server.listening import Front

__all__ = ["add"]


def add(sub: Any) -> None:
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
    _add_connection_limits(serve)
    _add_cluster(serve)
    serve.add_argument(
        "--per-user",
        type=Path,
        metavar="DIR",
        help="be the per-user local server of the folder DIR (`hazmat run` starts it: its "
        "socket and keys are there; it stops after the policy's pool.server_idle_s idle)",
    )
    serve.add_argument("--ready-fd", type=int, help=argparse.SUPPRESS)  # says "ready" there
    serve.set_defaults(handler=_serve)


def _add_connection_limits(serve: argparse.ArgumentParser) -> None:
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


def _add_cluster(serve: argparse.ArgumentParser) -> None:
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


def default_socket() -> Path:
    """The default socket's path (remote.py's `default_socket_path`, where the CLI looks for
    the service), its folder made or checked as the local server's are (owned.py): the user's
    own, mode 0700, under folders no other user can change (in another user's folder, such as
    an `XDG_RUNTIME_DIR` that `sudo` kept, they could replace the socket with theirs)."""
    from hazmat.cli.owned import make_own_folder
    from hazmat.cli.remote import default_socket_path

    path = default_socket_path()
    todo = "pass --socket PATH in a folder of yours, or set XDG_RUNTIME_DIR to one"
    make_own_folder(path.parent, todo)
    return path


def _serve(args: argparse.Namespace) -> int:
    from hazmat.server.listening import bind, serve

    if args.max_running < 1 or (args.grace is not None and args.grace <= 0):
        raise InputError("--max-running must be at least 1 and --grace positive")
    try:
        connections = ConnectionLimits(
            args.max_connections, args.head_timeout, args.body_timeout, args.keep_alive
        )
    except ValueError as exc:
        raise InputError(f"hazmat serve: {exc}") from None
    chosen = policy(args)
    grace = args.grace if args.grace is not None else chosen.longest_run_s() + 10
    if args.per_user is not None:
        _per_user(args)
    store = key_store(args)
    path = args.socket or (None if args.host or args.port is not None else default_socket())
    sock = bind(args.host, args.port, path)
    serve(
        sock,
        chosen,
        store,
        max_running=args.max_running,
        grace_s=grace,
        progress=_progress(args.ready_fd),
        front=_cluster_front(args, chosen, store.path),
        connections=connections,
        idle_stop_s=chosen.pool.server_idle_s if args.per_user is not None else None,
    )
    return 0


def _per_user(args: argparse.Namespace) -> None:
    """The local server's socket and keys are in its folder (cli/local_server.py)."""
    from hazmat.cli.local_server import LocalServer

    if args.socket or args.host or args.port is not None or args.keys or args.redis:
        raise InputError("--per-user sets the socket and the keys itself, and runs here")
    server = LocalServer(args.per_user)
    server.running()  # its folder must be the user's own (and nothing listens there yet)
    args.socket, args.keys = server.socket, server.keys


def _progress(ready_fd: int | None) -> Callable[[str], None]:
    """Print each line; with `ready_fd`, say "ready" there once listening, and close it."""

    def say(line: str) -> None:
        nonlocal ready_fd
        print(line, flush=True)
        if ready_fd is not None and "listening on" in line:
            with contextlib.suppress(OSError):
                os.write(ready_fd, b"ready\n")
                os.close(ready_fd)
            ready_fd = None

    return say


def _cluster_front(args: argparse.Namespace, chosen: Policy, keys: Path) -> Front | None:
    """With --redis, the cluster composed in as the service's front (cluster/front.py)."""
    from hazmat.cluster.front import ClusterOptions, cluster_front

    if not args.redis:
        for given, flag in ((args.anchors, "--anchors"), (args.on_lost != "report", "--on-lost")):
            if given:
                raise InputError(f"{flag} needs --redis (it is about the cluster's workers)")
        return None
    if args.attempts < 1:
        raise InputError("--attempts must be at least 1")
    anchors = args.anchors or keys.parent / "cluster-anchors"
    options = ClusterOptions(args.redis, anchors, args.on_lost, args.attempts)
    return functools.partial(cluster_front, options, chosen)
