"""Latency of a `print(1)`-style run, per language and runtime, end to end through Sandbox.run.

Beside it, in the same run, plain `docker run` of the Python image with the same hardening
flags, as the baseline. Results go to stdout and, with --write, into docs/benchmarks.md
between the markers for this benchmark.

    .venv/bin/python benchmarks/latency.py --runs 20 --write
"""

from __future__ import annotations

import argparse
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from hazmat import Outcome, Policy, Sandbox
from hazmat.backends.engine import Engine

PRINT_ONE = {
    "python": "print(1)",
    "javascript": "console.log(1)",
    "typescript": "const one: number = 1;\nconsole.log(one);",
    "go": 'package main\n\nimport "fmt"\n\nfunc main() { fmt.Println(1) }\n',
}
DOCS = Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md"
BEGIN, END = "<!-- latency:begin -->", "<!-- latency:end -->"


def measure(runs: int, call: Callable[[], None]) -> list[float]:
    call()  # warm caches (image layers, page cache) once, untimed
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        call()
        times.append((time.perf_counter() - started) * 1000)
    return times


def hazmat_call(sandbox: Sandbox, language: str, runtime: str) -> Callable[[], None]:
    def call() -> None:
        result = sandbox.run(PRINT_ONE[language], language, runtime=runtime)
        if result.outcome is not Outcome.OK or result.stdout.strip() != "1":
            raise SystemExit(f"{language}/{runtime} failed: {result.outcome} {result.stderr}")

    return call


def docker_run_call(runtime: str) -> Callable[[], None]:
    cmd = [
        "docker",
        "run",
        "--rm",
        "-i",
        f"--runtime={runtime}",
        "--network=none",
        "--read-only",
        "--cap-drop=ALL",
        "--security-opt=no-new-privileges",
        "--user=65534:65534",
        "--init",
        "--memory=256m",
        "--memory-swap=256m",
        "--cpus=0.5",
        "--log-driver=none",
        "--tmpfs=/tmp:rw,size=32m",
        "--tmpfs=/work:rw,size=32m,uid=65534",
        "--workdir=/work",
        "--pids-limit=128",
        "hazmat/python:1",
        "python3",
        "-c",
        "print(1)",
    ]

    def call() -> None:
        out = subprocess.run(cmd, capture_output=True, check=True).stdout
        if out.strip() != b"1":
            raise SystemExit(f"docker run printed {out!r}")

    return call


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1] if len(values) >= 2 else values[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    args = parser.parse_args()
    engine = Engine()
    runtimes = [r for r in ("runc", "runsc") if r in engine.info().runtimes]
    rows: list[tuple[str, str, str, list[float]]] = []
    with Sandbox(Policy()) as sandbox:
        for runtime in runtimes:
            label = "plain `docker run` (CLI)"
            rows.append((label, "python", runtime, measure(args.runs, docker_run_call(runtime))))
            print(_row(rows[-1]), flush=True)
            for language in PRINT_ONE:
                times = measure(args.runs, hazmat_call(sandbox, language, runtime))
                rows.append(("hazmat cold path", language, runtime, times))
                print(_row(rows[-1]), flush=True)
    table = _table(rows, args.runs, engine)
    if args.write:
        _write(table)
        print(f"written to {DOCS}")


def _row(row: tuple[str, str, str, list[float]]) -> str:
    path, language, runtime, times = row
    return (
        f"| {path} | {language} | {runtime} | {statistics.median(times):.0f} | "
        f"{p95(times):.0f} | {min(times):.0f} |"
    )


def _table(rows: list[tuple[str, str, str, list[float]]], runs: int, engine: Engine) -> str:
    info = engine.info()
    head = [
        f"Measured {datetime.now(UTC):%Y-%m-%d} with `benchmarks/latency.py --runs {runs}`: "
        f"{info.resources.cpus} cores, {info.resources.memory_mb // 1024} GiB, Docker "
        f"{info.version}, kernel {info.kernel}, Python {platform.python_version()}. "
        "One caller, one run at a time; milliseconds from the call to the result, "
        "end to end (validation, container create/attach/start, run, wait, inspect, remove). "
        "Policy: `untrusted` (strict preset).",
        "",
        "| path | language | runtime | median ms | p95 ms | min ms |",
        "|---|---|---|---:|---:|---:|",
    ]
    return "\n".join(head + [_row(r) for r in rows])


def _write(table: str) -> None:
    text = DOCS.read_text() if DOCS.exists() else f"# Benchmarks\n\n{BEGIN}\n{END}\n"
    if BEGIN not in text:
        text += f"\n{BEGIN}\n{END}\n"
    before, rest = text.split(BEGIN, 1)
    after = rest.split(END, 1)[1]
    DOCS.write_text(f"{before}{BEGIN}\n{table}\n{END}{after}")


if __name__ == "__main__":
    sys.exit(main())
