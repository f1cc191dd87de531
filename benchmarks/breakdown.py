"""Where the time of one warm run goes: assessment, audit records, the container round trip,
the housekeeping handed back to the pool, and everything else (validation, resolution, result
building), for a Python `print(1)` through a full warm pool (the Docker backend or the OCI tier,
runc or runsc).

Each stage is timed by wrapping the pipeline's own stage on one `Sandbox`; the pool is refilled
(untimed) before each run, so every timed run is a hit. Medians over `--runs`. Results go to
stdout and, with --write, into docs/benchmarks.md between the markers for this benchmark.

    .venv/bin/python benchmarks/breakdown.py --runs 200 --write
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from docs_section import write_section

from hazmat import Policy, Sandbox
from hazmat.backends.docker.driver import DockerBackend
from hazmat.backends.oci.driver import OciBackend
from hazmat.backends.pool.warm import PoolBackend
from hazmat.policy import PoolSettings

STAGES = ("assessment", "audit records", "container", "settle", "everything else")


def wrap(spent: dict[str, float], stage: str, call: Callable[..., Any]) -> Callable[..., Any]:
    def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return call(*args, **kwargs)
        finally:
            spent[stage] += (time.perf_counter() - started) * 1000

    return timed


def measure(runs: int, backend: str = "docker", runtime: str = "runc") -> dict[str, list[float]]:
    leaser = OciBackend() if backend == "oci" else DockerBackend()
    pool = PoolBackend(leaser, PoolSettings(size=2, refill_concurrency=2))
    figures: dict[str, list[float]] = {name: [] for name in (*STAGES, "total")}
    with Sandbox(Policy(), backend=pool) as sandbox:
        spec = sandbox.warm("python", runtime=runtime)
        spent = dict.fromkeys(STAGES, 0.0)
        sandbox._assess = wrap(spent, "assessment", sandbox._assess)  # type: ignore[method-assign]
        recorder = sandbox._recorder
        recorder.started = wrap(spent, "audit records", recorder.started)  # type: ignore[method-assign]
        recorder.finished = wrap(spent, "audit records", recorder.finished)  # type: ignore[method-assign]
        pool.execute = wrap(spent, "container", pool.execute)  # type: ignore[method-assign]
        pool.settle = wrap(spent, "settle", pool.settle)  # type: ignore[method-assign]
        for i in range(runs + 5):
            if not pool.wait_ready(spec, 2, 60):
                raise SystemExit(f"the pool did not refill: {pool.stats.last_error}")
            for stage in STAGES:
                spent[stage] = 0.0
            started = time.perf_counter()
            result = sandbox.run("print(1)", runtime=runtime)
            total = (time.perf_counter() - started) * 1000
            if result.stdout != "1\n" or result.pooled is not True:
                raise SystemExit(f"unexpected result: {result}")
            if i < 5:
                continue  # warming up: page cache, the worker's first requests
            spent["everything else"] = total - sum(spent[s] for s in STAGES[:-1])
            for stage in STAGES:
                figures[stage].append(spent[stage])
            figures["total"].append(total)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--backend", choices=("docker", "oci"), default="docker")
    parser.add_argument("--runtime", choices=("runc", "runsc"), default="runc")
    parser.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    args = parser.parse_args()
    figures = measure(args.runs, args.backend, args.runtime)
    total = statistics.median(figures["total"])
    lines = [
        f"`benchmarks/breakdown.py --runs {args.runs} --backend {args.backend} --runtime "
        f"{args.runtime}`, {datetime.now(UTC):%Y-%m-%d}: Python `print(1)`, every run a pool "
        "hit; medians per stage (they need not add up to the median total):",
        "",
        "| stage | median ms | p95 ms | share of median total |",
        "|---|---:|---:|---:|",
    ]
    for stage in (*STAGES, "total"):
        values = figures[stage]
        median = statistics.median(values)
        p95 = statistics.quantiles(values, n=20)[-1]
        lines.append(f"| {stage} | {median:.2f} | {p95:.2f} | {median / total:.0%} |")
    text = "\n".join(lines)
    print(text)
    if args.write:
        name = (
            "breakdown"
            if (args.backend, args.runtime) == ("docker", "runc")
            else (f"breakdown-{args.backend}-{args.runtime}")
        )
        write_section(name, f"Where a warm run's time goes ({args.backend}, {args.runtime})", text)


if __name__ == "__main__":
    main()
