"""Does the pool keep up with its callers? `print(1)` runs at the default trust level (gVisor)
from 4 and 16 callers through one Sandbox with the built-in policy's pool, which sizes itself
(`pool.max_size` 8), against the same pool held at `pool.size` (max_size 2: the pool before it
sized itself). Pool hits, runs per second and the median run, per configuration.

Two loads: *paced* callers wait `--think` seconds between runs (an assistant or a grader doing
its own work between runs; the load stays under what the engine can start), and *flat-out*
callers run back to back (the engine's rate of starting containers bounds every system: a pool
cannot hold more containers than the engine starts). Each configuration runs `--seconds`, after
a warm-up run per caller; the configurations alternate, and every one starts from an empty pool.

    .venv/bin/python benchmarks/pool_sizing.py --seconds 30 --write
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import threading
import time
from datetime import UTC, datetime

from docs_section import write_section

from hazmat import Sandbox
from hazmat.backends.docker.driver import DockerBackend
from hazmat.backends.pool.warm import PoolBackend
from hazmat.policy import Policy


@dataclasses.dataclass
class Outcome:
    runs: int = 0
    hits: int = 0
    seconds: float = 0.0
    latencies: list[float] = dataclasses.field(default_factory=list)


def measure(max_size: int, callers: int, think_s: float, seconds: float) -> Outcome:
    policy = Policy()
    settings = dataclasses.replace(policy.pool, max_size=max_size)
    backend = PoolBackend(DockerBackend(), settings)
    out = Outcome()
    lock = threading.Lock()
    with Sandbox(dataclasses.replace(policy, pool=settings), backend=backend) as sandbox:
        stop = threading.Event()

        def caller() -> None:
            while not stop.is_set():
                began = time.perf_counter()
                result = sandbox.run("print(1)")
                took = time.perf_counter() - began
                if result.stdout != "1\n":
                    raise SystemExit(f"a run failed: {result.outcome} {result.error}")
                with lock:
                    out.runs += 1
                    out.latencies.append(took * 1000)
                if think_s:
                    stop.wait(think_s)

        threads = [threading.Thread(target=caller) for _ in range(callers)]
        began = time.perf_counter()
        for thread in threads:
            thread.start()
        stop.wait(seconds)
        stop.set()
        for thread in threads:
            thread.join()
        out.seconds = time.perf_counter() - began
        out.hits = backend.stats.hits
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--think", type=float, default=1.0, help="paced callers' pause, s")
    parser.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    args = parser.parse_args()
    rows = []
    for callers in (4, 16):
        for load, think in (("paced", args.think * callers / 4), ("flat-out", 0.0)):
            for label, max_size in (("sizes itself (max 8)", 8), ("fixed at 2", 2)):
                got = measure(max_size, callers, think, args.seconds)
                line = (
                    f"| {callers} | {load} | {label} | {got.hits / got.runs:.0%} "
                    f"| {got.runs / got.seconds:.2f} | {statistics.median(got.latencies):.0f} |"
                )
                print(line, flush=True)
                rows.append(line)
    text = "\n".join(
        [
            f"`benchmarks/pool_sizing.py --seconds {args.seconds:g} --think {args.think:g}`, "
            f"{datetime.now(UTC):%Y-%m-%d}, default trust (runsc), `print(1)`; paced callers "
            f"pause {args.think:g} s × callers / 4 between runs:",
            "",
            "| callers | load | pool | pool hits | runs/s | median run ms |",
            "|---:|---|---|---:|---:|---:|",
            *rows,
        ]
    )
    print(text)
    if args.write:
        write_section("pool_sizing", "The pool sizes itself", text)


if __name__ == "__main__":
    main()
