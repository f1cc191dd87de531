"""What the audit log costs as it grows: opening a writer (which checks the log against its
signed checkpoints), and `hazmat audit proof` / `consistency` through the CLI, at 10 and at
1,000,000 records. Wall time (median) and the CLI process's peak memory.

    .venv/bin/python benchmarks/audit_scale.py --write
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from docs_section import write_section

from hazmat.audit.log import AuditLog

RECORD = {"run": "0123456789abcdef", "outcome": "ok", "exit_code": 0, "duration_ms": 12.5}
PEAK = (
    "import resource, subprocess, sys; subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL,"
    " check=True); print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
)


def build(directory: Path, records: int) -> None:
    """Write `records` records through the writer, 1000 to a batch (one fsync each)."""
    import rfc8785

    log = AuditLog(directory)
    canonical = rfc8785.dumps(RECORD)
    written = 1
    started = time.monotonic()
    while written < records:
        n = min(1000, records - written)
        with log._locked():  # the group-commit path, with big batches
            tail = log._sync()
            log._write_records(tail, [("bench.scale", canonical)] * n)
            log._after_write(tail)
        written += n
        if written % 100_000 < 1000:
            print(f"  built {written:,} records ({time.monotonic() - started:.0f} s)", flush=True)
    log.checkpoint()
    log.close()


def open_ms(directory: Path, samples: int) -> float:
    times = []
    for _ in range(samples):
        started = time.perf_counter()
        log = AuditLog(directory)
        times.append((time.perf_counter() - started) * 1000)
        log.close()
    return statistics.median(times)


def cli(directory: Path, *args: str) -> tuple[float, float, dict[str, object]]:
    """Median wall ms of 3 runs, peak RSS MB, and the last output."""
    command = [sys.executable, "-m", "hazmat", "audit", *args, "--log", str(directory)]
    times, peaks = [], []
    for _ in range(3):
        started = time.perf_counter()
        peak = subprocess.run(
            [sys.executable, "-c", PEAK, *command], capture_output=True, text=True, check=True
        )
        times.append((time.perf_counter() - started) * 1000)
        peaks.append(int(peak.stdout.split()[-1]) / 1024)
    out = subprocess.run(command, capture_output=True, text=True)
    return statistics.median(times), max(peaks), json.loads(out.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(dir="/var/tmp") as tmp:
        for size in (10, args.records):
            directory = Path(tmp) / str(size)
            print(f"building a log of {size:,} records", flush=True)
            build(directory, size)
            old = Path(tmp) / f"old-{size}.checkpoint"
            log = AuditLog(directory)
            log.close()
            old.write_text((directory / "checkpoint").read_text())
            opened = open_ms(directory, 5)
            proof_ms, proof_mb, proof = cli(directory, "proof", str(size // 2))
            cons_ms, cons_mb, cons = cli(directory, "consistency", str(old))
            assert proof["verified"] and cons["consistent"], (proof, cons)
            rows.append((size, opened, proof_ms, proof_mb, cons_ms, cons_mb))
            print(
                f"  {size:,}: open {opened:.1f} ms, proof {proof_ms:.0f} ms "
                f"{proof_mb:.0f} MB, consistency {cons_ms:.0f} ms {cons_mb:.0f} MB",
                flush=True,
            )
    table = [
        f"Measured {datetime.now(UTC):%Y-%m-%d} with `benchmarks/audit_scale.py` on /var/tmp. "
        "Open: `AuditLog(dir)` (lock, compare with every signed checkpoint, read the tail), "
        "median of 5. Proof and consistency: the whole `hazmat audit ...` process (Python "
        "start-up included), median of 3, and its peak RSS.",
        "",
        "| records | open ms | proof ms | proof MB | consistency ms | consistency MB |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for size, opened, pm, pmb, cm, cmb in rows:
        table.append(f"| {size:,} | {opened:.1f} | {pm:.0f} | {pmb:.0f} | {cm:.0f} | {cmb:.0f} |")
    text = "\n".join(table)
    print(text)
    if args.write:
        write_section("audit-scale", "Audit log at scale", text)


if __name__ == "__main__":
    main()
