"""Whole-process start-up: `hazmat run -c CODE` as a user types it, against plain `docker run`
with the same hardening flags, interleaved in one run (medians; the machine's noise hits both).

Each round runs, in turn: `docker run` of the program, then `hazmat run` under runc for every
language asked for. hazmat records into a fresh audit directory, so the figures do not depend
on how full the current log segment is (opening the log reads that segment: about 12 us per
record, up to its 10,000 records). Results go to stdout and, with --write, into
docs/benchmarks.md between the markers for this benchmark.

    .venv/bin/python benchmarks/startup.py --runs 15 --write
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime

from docs_section import write_section

from hazmat.cli.bench import plain_docker_run
from hazmat.cli.bench_common import PRINT_ONE

HAZMAT = [sys.executable, "-m", "hazmat"]


def hazmat_run(language: str) -> Callable[[], None]:
    cmd = [*HAZMAT, "run", "-c", PRINT_ONE[language], "--lang", language, "--runtime", "runc"]

    def call() -> None:
        done = subprocess.run(cmd, capture_output=True, check=False)
        if done.returncode != 0 or done.stdout.strip() != b"1":
            raise SystemExit(f"hazmat run {language} failed: {done.stderr.decode()[-500:]}")

    return call


def timed(call: Callable[[], None]) -> float:
    started = time.perf_counter()
    call()
    return (time.perf_counter() - started) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--lang", action="append", help="default: python and javascript")
    parser.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    args = parser.parse_args()
    os.environ["HAZMAT_AUDIT_DIR"] = tempfile.mkdtemp(prefix="hazmat-startup-audit-")
    languages = args.lang or ["python", "javascript"]
    rows: dict[str, Callable[[], None]] = {
        "docker run (python, runc)": plain_docker_run("python", "runc")
    }
    rows.update({f"hazmat run -c ({lang}, runc)": hazmat_run(lang) for lang in languages})
    for call in rows.values():
        call()  # once untimed: page cache, images
    times: dict[str, list[float]] = {name: [] for name in rows}
    for i in range(args.runs):
        for name, call in rows.items():
            times[name].append(timed(call))
        print(f"round {i + 1}/{args.runs}", file=sys.stderr, flush=True)
    base = statistics.median(times["docker run (python, runc)"])
    lines = [
        f"`benchmarks/startup.py --runs {args.runs}`, {datetime.now(UTC):%Y-%m-%d}, interleaved, "
        "a fresh audit log:",
        "",
        "| command | median ms | p95 ms | min ms | vs docker run |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, values in times.items():
        p95 = statistics.quantiles(values, n=20)[-1]
        ratio = statistics.median(values) / base
        lines.append(
            f"| {name} | {statistics.median(values):.0f} | {p95:.0f} | {min(values):.0f} "
            f"| {ratio:.2f}× |"
        )
    text = "\n".join(lines)
    print(text)
    if args.write:
        write_section("startup", "Start-up of a whole process", text)


if __name__ == "__main__":
    main()
