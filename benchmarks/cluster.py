"""Cluster throughput: runs per second through `hazmat serve --redis` with 1, 2 and 3 Docker
engines on this machine (a worker per engine; scripts/cluster_lab.py), measured side by side in
one invocation, each configuration in turn, several rounds in a new random order each round.

Each run is `print(1)` (Python, runc) from concurrent clients that submit again after a 429;
runs/s is the number answered divided by the wall time of the round. Needs root (dockerd).

    python benchmarks/cluster.py --runs 200 --rounds 3 --write
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
from cluster_lab import Lab
from docs_section import write_section


def one_round(lab: Lab, runs: int, clients: int) -> tuple[float, int]:
    """(runs per second, 429s) for `runs` runs from `clients` clients."""
    left = [runs]
    refused = [0]
    lock = threading.Lock()

    def client() -> None:
        transport = httpx.HTTPTransport(uds=str(lab.socket))
        headers = {"Authorization": f"Bearer {lab.key}"}
        with httpx.Client(transport=transport, base_url="http://lab", headers=headers) as http:
            while True:
                with lock:
                    if left[0] == 0:
                        return
                    left[0] -= 1
                while True:
                    answer = http.post("/v1/runs", json={"code": "print(1)"}, timeout=120)
                    if answer.status_code != 429:
                        assert answer.json()["outcome"] == "ok", answer.text
                        break
                    with lock:
                        refused[0] += 1
                    time.sleep(0.02)  # back off after a 429, as a client should

    threads = [threading.Thread(target=client) for _ in range(clients)]
    began = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return runs / (time.monotonic() - began), refused[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=200, help="runs per round and engine count")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--clients", type=int, default=12)
    parser.add_argument("--slots", type=int, default=4, help="slots per worker")
    parser.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    args = parser.parse_args()
    rates: dict[int, list[float]] = {1: [], 2: [], 3: []}
    refusals: dict[int, int] = dict.fromkeys(rates, 0)
    with tempfile.TemporaryDirectory(prefix="hazmat-bench-cluster-") as tmp:
        for round_ in range(args.rounds):
            order = list(rates)
            random.shuffle(order)
            for engines in order:
                with Lab(Path(tmp) / f"r{round_}-e{engines}", engines, args.slots) as lab:
                    one_round(lab, args.clients * 2, args.clients)  # warm the pools
                    rate, refused = one_round(lab, args.runs, args.clients)
                rates[engines].append(rate)
                refusals[engines] += refused
                print(f"round {round_ + 1}: {engines} engine(s): {rate:.1f} runs/s", flush=True)
    base = statistics.median(rates[1])
    rows = [
        f"| {n} | {args.slots * n} | {statistics.median(r):.1f} | {min(r):.1f}–{max(r):.1f} "
        f"| {statistics.median(r) / base:.2f}× | {refusals[n]} |"
        for n, r in rates.items()
    ]
    text = "\n".join(
        [
            f"`python benchmarks/cluster.py --runs {args.runs} --rounds {args.rounds}` "
            f"({args.clients} clients, `print(1)` under runc, {args.slots} slots per worker, "
            "one machine of 2 cores: Redis, the service, the workers and every engine share it)",
            "",
            "| engines | slots | runs/s (median) | range | vs 1 engine | 429s |",
            "|---|---|---|---|---|---|",
            *rows,
        ]
    )
    print(text)
    if args.write:
        write_section("cluster", "Cluster throughput: 1, 2 and 3 engines", text)


if __name__ == "__main__":
    main()
