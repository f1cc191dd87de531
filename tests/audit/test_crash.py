"""Writers killed with SIGKILL mid-append, and several processes appending at once."""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from hazmat.audit.records import parse_line
from hazmat.audit.verify import verify_log

WRITER = """
import sys
from hazmat.audit.log import AuditLog
log = AuditLog(sys.argv[1], checkpoint_every=7, segment_records=int(sys.argv[3]))
tag, count = sys.argv[2], int(sys.argv[4])
for n in range(count):
    seq = log.append("test.crash", {"tag": tag, "n": n, "pad": "x" * (n % 50) * 40})
    print(seq, n, flush=True)
log.close()
"""


def writer(
    log_dir: Path, tag: str, segment_records: int = 40, count: int = 10**9
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, str(log_dir), tag, str(segment_records), str(count)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def acks(text: str, tag: str) -> list[tuple[int, str, int]]:
    """Complete `seq n` lines only: a line cut short by the kill acknowledges nothing."""
    found = []
    for line in text.splitlines(keepends=True):
        parts = line.split()
        if line.endswith("\n") and len(parts) == 2:
            found.append((int(parts[0]), tag, int(parts[1])))
    return found


def all_records(log_dir: Path) -> dict[int, dict[str, object]]:
    found = {}
    for path in sorted((log_dir / "segments").glob("*.jsonl")):
        for line in path.read_bytes().splitlines():
            record, _ = parse_line(line)
            found[record.seq] = {"kind": record.kind, **record.data}
    return found


def test_kill_9_mid_append_fifty_times_loses_no_acknowledged_record(tmp_path: Path) -> None:
    rng = random.Random(1234)
    acked: list[tuple[int, str, int]] = []
    for round_ in range(50):
        proc = writer(tmp_path, f"w{round_}")
        assert proc.stdout is not None and proc.stderr is not None
        for _ in range(rng.randint(1, 15)):
            line = proc.stdout.readline()
            assert line.endswith("\n"), proc.stderr.read()
            acked += acks(line, f"w{round_}")
        time.sleep(rng.random() * 0.01)
        proc.send_signal(signal.SIGKILL)
        acked += acks(proc.stdout.read(), f"w{round_}")  # acknowledged before the kill landed
        proc.wait()
        proc.stdout.close()
        proc.stderr.close()
    report = verify_log(tmp_path)
    assert report.ok, report.problem
    records = all_records(tmp_path)
    for seq, tag, n in acked:
        assert records[seq]["tag"] == tag and records[seq]["n"] == n
    assert len(acked) >= 50


def test_several_processes_append_at_once(tmp_path: Path) -> None:
    procs = [writer(tmp_path, f"p{i}", segment_records=50, count=150) for i in range(4)]
    outputs = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        outputs.append(out)
    report = verify_log(tmp_path)
    assert report.ok, report.problem
    records = all_records(tmp_path)
    seen = sorted(
        (str(r["tag"]), int(r["n"]))
        for r in records.values()  # type: ignore[call-overload]
        if r["kind"] == "test.crash"
    )
    assert seen == sorted((f"p{i}", n) for i in range(4) for n in range(150))
    acked = [int(line.split()[0]) for out in outputs for line in out.splitlines()]
    assert len(set(acked)) == len(acked) == 600
    assert json.loads((tmp_path / "seals" / "000001.json").read_text())["end_seq"] == 50
