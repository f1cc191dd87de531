"""Latency of a `print(1)`-style run through plain `docker run`, hazmat's cold path and its
warm pool, per language and runtime, side by side in one run; throughput with 4 concurrent
callers against the engine's raw create+start rate; host memory per idle pooled container.

The measuring is `hazmat.cli.bench` (also `hazmat bench`). Results go to stdout and, with --write,
into docs/benchmarks.md between the markers for this benchmark.

    .venv/bin/python benchmarks/latency.py --runs 30 --write
"""

from __future__ import annotations

import argparse
import platform
import sys
from datetime import UTC, datetime
from pathlib import Path

from hazmat.backends.container.engine import Engine
from hazmat.cli.bench import markdown, run_bench
from hazmat.cli.bench_common import PRINT_ONE

DOCS = Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md"
BEGIN, END = "<!-- latency:begin -->", "<!-- latency:end -->"


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--throughput-seconds", type=float, default=60.0)
    parser.add_argument("--lang", action="append")
    parser.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    args = parser.parse_args()
    report = run_bench(
        runs=args.runs,
        languages=args.lang or list(PRINT_ONE),
        throughput_s=args.throughput_seconds,
        progress=lambda line: print(line, flush=True),
    )
    info = Engine().info()
    header = (
        f"Measured {datetime.now(UTC):%Y-%m-%d} with `benchmarks/latency.py --runs {args.runs}`: "
        f"{info.resources.cpus} cores, {info.resources.memory_mb // 1024} GiB, Docker "
        f"{info.version}, kernel {info.kernel}, Python {platform.python_version()}. One caller, "
        "one run at a time; milliseconds from the call to the result. hazmat rows are end to end "
        "through `Sandbox.run`: validation, assessment, the run, the settings check and the "
        "audit records. The cold path starts a container per run and waits for its removal; "
        "the warm pool hands out a container started ahead of time (the pool is full before "
        "each timed call) and removes it in the background. `docker run` gets the same "
        "hardening flags and the program on stdin. Policy: `untrusted` (strict preset)."
    )
    text = markdown(report, header)
    print(text)
    if args.write:
        _write(text)
        print(f"written to {DOCS}")


def _write(table: str) -> None:
    text = DOCS.read_text() if DOCS.exists() else f"# Benchmarks\n\n{BEGIN}\n{END}\n"
    if BEGIN not in text:
        text += f"\n{BEGIN}\n{END}\n"
    before, rest = text.split(BEGIN, 1)
    after = rest.split(END, 1)[1]
    DOCS.write_text(f"{before}{BEGIN}\n{table}\n{END}{after}")


if __name__ == "__main__":
    sys.exit(main())
