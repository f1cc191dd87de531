"""Whole-process start-up: `hazmat run -c CODE` as a user types it, against plain `docker run`
with the same hardening flags, interleaved in one run (medians; the machine's noise hits both).

Each round runs, in turn: `docker run` under runc and under runsc, then `hazmat run` (the
console script beside this Python, as a user types it) through the per-user local server
(cli/local_server.py) at the default trust level (gVisor), at `trusted` (runc) and with
`--runtime runc` at the default level, then `hazmat run --local` (everything in its own
process, as before the local server) under the default runtime. The local server is started
once, before the rounds; the run that starts it is timed on its own. hazmat records into a
fresh audit directory, and the local server lives in a runtime folder of the benchmark's own,
stopped at the end. Results go to stdout and, with --write, into docs/benchmarks.md between
the markers for this benchmark.

    .venv/bin/python benchmarks/startup.py --runs 15 --write
"""

from __future__ import annotations

import argparse
import compileall
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from docs_section import write_section

import hazmat
from hazmat.cli.bench import plain_docker_run
from hazmat.cli.bench_common import PRINT_ONE
from hazmat.policy import Policy

# the `hazmat` command as a user types it: the console script pip put beside this Python
SCRIPT = Path(sys.executable).parent / "hazmat"
HAZMAT = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "hazmat"]


def hazmat_run(*extra: str) -> Callable[[], None]:
    cmd = [*HAZMAT, "run", "-c", PRINT_ONE["python"], *extra]

    def call() -> None:
        done = subprocess.run(cmd, capture_output=True, check=False)
        if done.returncode != 0 or done.stdout.strip() != b"1":
            raise SystemExit(f"hazmat run {extra} failed: {done.stderr.decode()[-500:]}")

    return call


def as_a_user() -> None:
    """This process's environment as a user's shell: a fresh audit log and a runtime folder of
    the benchmark's own (its local server, `stop_server` at the end), bytecode kept."""
    os.environ["HAZMAT_AUDIT_DIR"] = tempfile.mkdtemp(prefix="hazmat-startup-audit-")
    os.environ["XDG_RUNTIME_DIR"] = tempfile.mkdtemp(prefix="hz-", dir="/tmp")
    os.environ.pop("HAZMAT_NO_SERVER", None)
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # as a user's Python: bytecode kept
    compileall.compile_dir(Path(hazmat.__file__).parent, quiet=1)


def stop_server() -> None:
    subprocess.run([*HAZMAT, "server", "stop"], check=False, capture_output=True)


def command(*argv: str) -> Callable[[], None]:
    """A call that runs `argv` and fails unless it exits 0."""

    def call() -> None:
        done = subprocess.run(argv, capture_output=True, check=False)
        if done.returncode != 0:
            raise SystemExit(f"{argv} failed: {done.stderr.decode()[-500:]}")

    return call


def timed(call: Callable[[], None]) -> float:
    started = time.perf_counter()
    call()
    return (time.perf_counter() - started) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    args = parser.parse_args()
    as_a_user()
    default = Policy().settings(Policy().default_trust).runtime.value
    rows: dict[str, Callable[[], None]] = {
        "docker run --rm (runc)": plain_docker_run("python", "runc"),
        "docker run --rm (runsc)": plain_docker_run("python", "runsc"),
        f"hazmat run -c, local server ({default}, the default)": hazmat_run(),
        "hazmat run -c --trust trusted, local server (runc)": hazmat_run("--trust", "trusted"),
        f"hazmat run -c --runtime runc, local server (runc at the {default} level)": hazmat_run(
            "--runtime", "runc"
        ),
        f"hazmat run --local -c ({default}, in its own process)": hazmat_run("--local"),
    }
    try:
        first = timed(hazmat_run())  # starts the local server
        for call in rows.values():
            call()  # once untimed: page cache, images, the pools' kinds
        times: dict[str, list[float]] = {name: [] for name in rows}
        for i in range(args.runs):
            for name, call in rows.items():
                times[name].append(timed(call))
            print(f"round {i + 1}/{args.runs}", file=sys.stderr, flush=True)
    finally:
        stop_server()
    text = report(args.runs, first, times)
    print(text)
    if args.write:
        write_section("startup", "Start-up of a whole process", text)


def report(runs: int, first: float, times: dict[str, list[float]]) -> str:
    base = statistics.median(times["docker run --rm (runc)"])
    lines = [
        f"`benchmarks/startup.py --runs {runs}`, {datetime.now(UTC):%Y-%m-%d}, interleaved, "
        "python `print(1)`, a fresh audit log:",
        "",
        "| command | median ms | p95 ms | min ms | vs docker run (runc) |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, values in times.items():
        p95 = statistics.quantiles(values, n=20)[-1]
        ratio = statistics.median(values) / base
        lines.append(
            f"| {name} | {statistics.median(values):.0f} | {p95:.0f} | {min(values):.0f} "
            f"| {ratio:.2f}× |"
        )
    lines += ["", f"The first `hazmat run`, which started the local server: {first:.0f} ms."]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
