"""`hazmat worker`: take runs for this Docker engine from the cluster (docs/scale.md), until
SIGTERM or SIGINT; then every container it started is removed."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from hazmat._exceptions import InputError, quoted
from hazmat.cli.common import policy

__all__ = ["add"]


def add(sub: Any) -> None:
    worker = sub.add_parser("worker", help="take runs for this Docker engine from the cluster")
    worker.add_argument("--redis", required=True, metavar="URL", help="the cluster's Redis")
    worker.add_argument("--name", metavar="NAME", help="this worker's name (default: hostname)")
    worker.add_argument("--slots", type=int, default=4, metavar="N", help="runs at once (4)")
    worker.add_argument("--policy", type=Path, metavar="FILE", help="policy file (YAML)")
    worker.set_defaults(handler=_worker)


def _worker(args: argparse.Namespace) -> int:
    import signal
    import threading

    from hazmat.cluster.keys import broker
    from hazmat.cluster.worker import ClusterWorker
    from hazmat.sandbox import Sandbox
    from hazmat.server.listening import reaped

    name = _name(args)
    chosen = policy(args)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    broker(args.redis).client.close()  # Redis answers (or a clear error) before anything starts
    with Sandbox(chosen) as sandbox:
        # what a killed worker on this engine left
        reaped(sandbox.backend.reap(), lambda line: print(line, flush=True))
        worker = ClusterWorker(args.redis, name, args.slots, sandbox)
        worker.start()
        print(f"hazmat worker: {name} taking runs ({args.slots} at once)", flush=True)
        stop.wait()
        worker.stop()
    print(f"hazmat worker: {name} stopped; every container removed", flush=True)
    return 0


def _name(args: argparse.Namespace) -> str:
    """The worker's name, checked (with --slots) before anything starts."""
    import socket

    from hazmat.cluster.anchors import WORKER_NAME

    if args.slots < 1:
        raise InputError("--slots must be at least 1")
    name: str = args.name or socket.gethostname()
    if not WORKER_NAME.fullmatch(name):
        raise InputError(
            f"--name {quoted(name)}: a worker's name is 1-63 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )
    return name
