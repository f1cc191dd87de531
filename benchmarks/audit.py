"""Audit log figures: durable appends per second (1 and 8 writers), verification speed, and
inclusion / consistency proof size and time at 1,000,000 records.

    .venv/bin/python benchmarks/audit.py --write
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

from hazmat.audit.log import AuditLog
from hazmat.audit.merkle import (
    Frontier,
    consistency_proof,
    inclusion_proof,
    leaf_hash,
    verify_consistency,
    verify_inclusion,
)
from hazmat.audit.verify import verify_log

DOCS = Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md"
BEGIN, END = "<!-- audit:begin -->", "<!-- audit:end -->"
RECORD = {
    "run": "0123456789abcdef",
    "outcome": "ok",
    "exit_code": 0,
    "duration_ms": 12.5,
    "stdout": {"bytes": 2, "sha256": "ab" * 32},
}


def appends_per_second(writers: int, seconds: float) -> float:
    with tempfile.TemporaryDirectory(dir="/var/tmp") as directory:
        log = AuditLog(directory, checkpoint_seconds=1.0)
        stop = time.monotonic() + seconds
        counts = [0] * writers

        def work(i: int) -> None:
            while time.monotonic() < stop:
                log.append("bench.append", RECORD)
                counts[i] += 1

        threads = [threading.Thread(target=work, args=(i,)) for i in range(writers)]
        started = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.monotonic() - started
        log.close()
        return sum(counts) / elapsed


def verify_speed(records: int) -> tuple[float, int]:
    with tempfile.TemporaryDirectory(dir="/var/tmp") as directory:
        log = AuditLog(directory)
        barrier = records // 16
        threads = [
            threading.Thread(
                target=lambda: [log.append("bench.verify", RECORD) for _ in range(barrier)]
            )
            for _ in range(16)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        log.close()
        rates = []
        for _ in range(5):  # the same log, verified five times: the median rate
            started = time.monotonic()
            report = verify_log(Path(directory))
            rates.append(report.records / (time.monotonic() - started))
            assert report.ok, report.problem
        return statistics.median(rates), report.records


def proofs(size: int, samples: int) -> dict[str, float]:
    leaves = [leaf_hash(i.to_bytes(8, "big")) for i in range(size)]
    frontier = Frontier()
    started = time.monotonic()
    for leaf in leaves:
        frontier.append(leaf)
    tree_s = time.monotonic() - started
    top = frontier.root()
    inc_times, con_times = [], []
    for k in range(samples):
        index = (k * 7919 * 104729) % size
        t = time.monotonic()
        path = inclusion_proof(index, leaves)
        inc_times.append(time.monotonic() - t)
        assert verify_inclusion(index, size, leaves[index], path, top)
        old = max(1, index)
        t = time.monotonic()
        proof = consistency_proof(old, leaves)
        con_times.append(time.monotonic() - t)
        old_root = Frontier()
        for leaf in leaves[:old]:
            old_root.append(leaf)
        assert verify_consistency(old, size, old_root.root(), top, proof)
    t = time.monotonic()
    for _ in range(1000):
        verify_inclusion(index, size, leaves[index], path, top)
    verify_us = (time.monotonic() - t) * 1000
    return {
        "tree_s": tree_s,
        "inclusion_hashes": len(path),
        "inclusion_ms": statistics.median(inc_times) * 1000,
        "consistency_hashes": len(proof),
        "consistency_ms": statistics.median(con_times) * 1000,
        "verify_us": verify_us,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--verify-records", type=int, default=100_000)
    parser.add_argument("--proof-size", type=int, default=1_000_000)
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    one = statistics.median(appends_per_second(1, args.seconds) for _ in range(3))
    print(f"1 writer: {one:.0f} durable appends/s", flush=True)
    eight = statistics.median(appends_per_second(8, args.seconds) for _ in range(3))
    print(f"8 writers: {eight:.0f} durable appends/s", flush=True)
    speed, checked = verify_speed(args.verify_records)
    print(f"verify: {speed:.0f} records/s over {checked} records", flush=True)
    p = proofs(args.proof_size, 5)
    print(f"proofs at {args.proof_size}: {p}", flush=True)
    table = "\n".join(
        [
            f"Measured {datetime.now(UTC):%Y-%m-%d} with `benchmarks/audit.py` on /var/tmp (ext4 "
            "here); every append is fsynced before it returns; 8 writers are threads of one "
            "process sharing group commits. Append rates are the median of 3 runs of "
            f"{args.seconds:g} s, verification the median of 5 passes over the same log.",
            "",
            "| figure | value |",
            "|---|---:|",
            f"| durable appends/s, 1 writer | {one:,.0f} |",
            f"| durable appends/s, 8 concurrent writers (group commit) | {eight:,.0f} |",
            f"| verification, records/s ({checked:,} records) | {speed:,.0f} |",
            f"| Merkle tree of {args.proof_size:,} leaves, from leaf hashes "
            f"| {p['tree_s']:.2f} s |",
            f"| inclusion proof at {args.proof_size:,}: size | {p['inclusion_hashes']} hashes "
            f"({p['inclusion_hashes'] * 32} bytes) |",
            f"| inclusion proof: time to build (median of 5) | {p['inclusion_ms']:.0f} ms |",
            f"| inclusion proof: time to verify | {p['verify_us']:.0f} µs |",
            f"| consistency proof at {args.proof_size:,}: size "
            f"| {p['consistency_hashes']} hashes |",
            f"| consistency proof: time to build (median of 5) | {p['consistency_ms']:.0f} ms |",
        ]
    )
    if args.write:
        text = DOCS.read_text()
        if BEGIN not in text:
            text += f"\n## Audit log\n\n{BEGIN}\n{END}\n"
        before, rest = text.split(BEGIN, 1)
        DOCS.write_text(f"{before}{BEGIN}\n{table}\n{END}{rest.split(END, 1)[1]}")
        print(f"written to {DOCS}")


if __name__ == "__main__":
    sys.exit(main())
