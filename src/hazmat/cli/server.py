"""`hazmat server start|status|stop|console`: the per-user local server that `hazmat run` uses
(cli/local_server.py). `status` and `stop` cover every setup's server of the user's; `start`
this setup's, ahead of the first run (with a policy, if given); `console` puts this setup's
console on a loopback port for a browser (cli/console.py)."""

from __future__ import annotations

import argparse
import http.client
import json
import re
import time
from pathlib import Path
from typing import Any

__all__ = ["add"]


def add(sub: Any) -> None:
    server = sub.add_parser("server", help="the per-user local server `hazmat run` goes through")
    actions = server.add_subparsers(dest="action", required=True, metavar="ACTION")
    start = actions.add_parser("start", help="start it now (it starts on the first run anyway)")
    start.add_argument("--policy", type=Path, metavar="FILE", help="policy file (YAML)")
    start.set_defaults(handler=_start)
    status = actions.add_parser("status", help="whether your local servers run, and their work")
    status.add_argument("--json", action="store_true", help="one JSON object")
    status.set_defaults(handler=_status)
    stop = actions.add_parser("stop", help="stop your local servers (runs in flight finish)")
    stop.set_defaults(handler=_stop)
    console = actions.add_parser(
        "console", help="open its console (your runs, sessions, audit log) on a loopback port"
    )
    console.add_argument(
        "--port", type=int, default=8765, metavar="N", help="loopback port (0: any free one)"
    )
    console.add_argument("--policy", type=Path, metavar="FILE", help="policy file (YAML)")
    console.set_defaults(handler=_console)


def _start(args: argparse.Namespace) -> int:
    from hazmat.cli.local_server import LocalServer

    if args.policy is not None:
        from hazmat.policy.file import load_policy

        load_policy(args.policy)  # a bad policy is this command's error, named here
    server = LocalServer()
    started = server.start(args.policy)
    pid = server.info().get("pid")
    print(f"hazmat: local server {'started' if started else 'already running'} (pid {pid})")
    return 0


def _status(args: argparse.Namespace) -> int:
    from hazmat.cli.local_server import LocalServer, all_servers, root

    mine = LocalServer().folder
    found = [_describe(server, server.folder == mine) for server in all_servers()]
    found = [entry for entry in found if entry["running"] or entry["this_setup"]]
    if args.json:
        listing = {"folder": str(root()), "this_setup": str(mine), "servers": found}
        print(json.dumps(listing, indent=1))
        return 0
    if not any(entry["running"] for entry in found):
        print("hazmat: no local server runs (the next `hazmat run` starts one)")
    for entry in found:
        if entry["running"]:
            print(_line(entry))
    return 0


def _console(args: argparse.Namespace) -> int:
    from hazmat._exceptions import InputError
    from hazmat.cli.console import run

    if not 0 <= args.port <= 65535:
        raise InputError(f"--port must be 0..65535, not {args.port}")
    return run(args)


def _stop(args: argparse.Namespace) -> int:
    from hazmat.cli.local_server import all_servers

    stopped = [server for server in all_servers() if server.stop()]
    print(f"hazmat: stopped {len(stopped)} local server(s)")
    return 0


def _describe(server: Any, this_setup: bool) -> dict[str, Any]:
    """What `status` says of one server. Never raises: a server whose folder is refused, or
    that listens but whose metrics do not answer (starting, stopping, stuck), says so."""
    from hazmat._exceptions import HazmatError

    info = server.info()
    entry: dict[str, Any] = {
        "folder": str(server.folder),
        "this_setup": this_setup,
        "running": False,
        "answering": False,
        "pid": info.get("pid"),
        "started": info.get("started"),
        "policy": info.get("policy"),
    }
    try:
        service = server.running()
    except (HazmatError, OSError) as exc:
        entry["problem"] = str(exc)
        return entry
    if service is None:
        return entry
    entry["running"] = True
    try:
        entry.update(_work(service.get("/metrics").decode("utf-8", "replace")))
    except (HazmatError, OSError, http.client.HTTPException) as exc:
        entry["problem"] = f"not answering yet: {exc}"
    else:
        entry["answering"] = True
    return entry


_SAMPLE = re.compile(r'^(hazmat_runs_total|hazmat_pool_runs_total)\{[^}]*?(outcome|result)="(\w+)"')
_TIER = re.compile(r'^hazmat_backend_info\{tier="(\w+)"\}')


def _work(metrics: str) -> dict[str, Any]:
    """Runs served, pool hits and misses, and the tier that makes the sandboxes, from the
    service's metrics."""
    runs = hits = misses = 0
    tier = next((m[1] for m in map(_TIER.match, metrics.splitlines()) if m), None)
    for line in metrics.splitlines():
        found = _SAMPLE.match(line)
        if not found:
            continue
        try:
            value = int(float(line.rsplit(" ", 1)[1]))
        except (ValueError, OverflowError):
            continue  # not a count (NaN, +Inf): nothing to add
        if found[1] == "hazmat_runs_total":
            runs += value
        elif found[3] == "hit":
            hits += value
        else:
            misses += value
    return {"runs": runs, "pool_hits": hits, "pool_misses": misses, "tier": tier}


def _line(entry: dict[str, Any]) -> str:
    setup = "" if entry["this_setup"] else " (another setup: engine, audit log or hazmat)"
    if not entry["answering"]:
        pid = entry["pid"] if entry["pid"] is not None else "unknown"
        return (
            f"hazmat: local server running (pid {pid}){setup}, {entry['problem']}; "
            f"{entry['folder']}"
        )
    started = entry["started"]
    up = time.time() - started if isinstance(started, int | float) else 0.0
    policy = f", policy {entry['policy']}" if entry["policy"] else ""
    tier = f", tier {entry['tier']}" if entry.get("tier") else ""
    return (
        f"hazmat: local server pid {entry['pid']}{setup}: up {up:.0f} s{tier}, "
        f"{entry['runs']} runs, pool hits {entry['pool_hits']}, misses {entry['pool_misses']}"
        f"{policy}; {entry['folder']}"
    )
