"""Verdicts under load: the same near-limit submissions graded by `hazmat batch --local` at
`--jobs 1` and `--jobs 4 x cores`, alone, while another batch of them runs, and while other work
keeps every core busy, under runc and gVisor; the verdicts must not change.

    .venv/bin/python benchmarks/verdicts.py --write

The set (`SET`): twelve Python submissions with a 1.5 s limit, three tests each, answering
their input plus one after a fixed amount of pure-Python work (from 20% to 200% of the limit's
CPU time, some in a child process), or after sleeping (a third of the limit, and past the
backstop), or both. What each deserves is in its id. Every scenario's verdicts are compared
with those; each task's largest `time_ms` (CPU) and `wall_ms` are kept, to show how much CPU
time moves with load (what decides a program right at its limit). The busy load is one
shell busy loop per core (`while :; do :; done`), started before the batch and killed after.
With `--old`, the worst scenarios also run under the old rule (`clock: wall`, at the level's
0.5 CPU) for comparison, in the same run.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from docs_section import write_section

LIMIT_S = 1.5
ITERATIONS_PER_S = 17_500_000  # `x += i * i` in the images' Python 3.13, measured here (57 ns)
WORK = "x = 0\nfor i in range({n}):\n    x += i * i\n"
ANSWER = "print(int(input()) + 1)\n"
# id -> (code, what it deserves)
SET: dict[str, tuple[str, str]] = {}


def _work(share: float) -> str:
    return WORK.format(n=int(share * LIMIT_S * ITERATIONS_PER_S))


def _child(share: float) -> str:
    body = _work(share).replace("\n", "\n    ").rstrip()
    return f"import os\nif os.fork() == 0:\n    {body}\n    os._exit(0)\nos.wait()\n"


for share in (0.2, 0.4, 0.55, 0.65):
    SET[f"work-{int(share * 100)}"] = (_work(share) + ANSWER, "accepted")
for share in (1.4, 2.0):
    SET[f"work-{int(share * 100)}"] = (_work(share) + ANSWER, "time_limit")
SET["child-40"] = (_child(0.4) + ANSWER, "accepted")
SET["child-140"] = (_child(1.4) + ANSWER, "time_limit")
SET["sleep-0.5s"] = ("import time\ntime.sleep(0.5)\n" + ANSWER, "accepted")
SET["sleep-4s"] = ("import time\ntime.sleep(4)\n" + ANSWER, "time_limit")
SET["sleep-1s-work-40"] = ("import time\ntime.sleep(1)\n" + _work(0.4) + ANSWER, "accepted")
SET["read-work-30"] = ("n = int(input())\n" + _work(0.3) + "print(n + 1)\n", "accepted")


def tasks(clock: str) -> list[dict[str, Any]]:
    tests = [{"stdin": f"{n}\n", "expected_stdout": f"{n + 1}\n"} for n in (1, 41, 999)]
    return [
        {"id": name, "language": "python", "code": code, "tests": tests, "timeout": LIMIT_S,
         "clock": clock}
        for name, (code, _) in SET.items()
    ]  # fmt: skip


@contextlib.contextmanager
def busy(cores: int) -> Iterator[None]:
    """One busy loop per core for the block."""
    loops = [
        subprocess.Popen(["sh", "-c", "while :; do :; done"], start_new_session=True)
        for _ in range(cores)
    ]
    try:
        yield
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()


def batch(folder: Path, name: str, clock: str, jobs: int, runtime: str) -> subprocess.Popen[str]:
    source = folder / f"{name}.tasks.jsonl"
    source.write_text("".join(json.dumps(t) + "\n" for t in tasks(clock)))
    out = folder / f"{name}.results.jsonl"
    out.unlink(missing_ok=True)
    command = [
        sys.executable, "-m", "hazmat", "batch", str(source), "-o", str(out), "--local",
        "--no-progress", "--jobs", str(jobs), "--runtime", runtime, "--trust", "unknown",
    ]  # fmt: skip
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def finished(process: subprocess.Popen[str], folder: Path, name: str) -> dict[str, Any]:
    _, err = process.communicate(timeout=3600)
    if process.returncode != 0:
        raise SystemExit(f"{name}: hazmat batch failed ({process.returncode}): {err}")
    lines = (folder / f"{name}.results.jsonl").read_text().splitlines()
    return {r["id"]: r for r in map(json.loads, lines)}


def scenario(
    folder: Path, runtime: str, jobs: int, load: str, clock: str, cores: int
) -> dict[str, Any]:
    name = f"{runtime}-{jobs}-{load}-{clock}"
    began = time.monotonic()
    with busy(cores) if load == "busy" else contextlib.nullcontext():
        other = batch(folder, name + "-other", clock, jobs, runtime) if load == "batch" else None
        graded = finished(batch(folder, name, clock, jobs, runtime), folder, name)
        if other is not None:
            finished(other, folder, name + "-other")
    seconds = time.monotonic() - began
    wrong = {i: r["verdict"] for i, r in graded.items() if r["verdict"] != SET[i][1]}
    return {
        "runtime": runtime,
        "jobs": jobs,
        "load": load,
        "clock": clock,
        "seconds": round(seconds, 1),
        "wrong": wrong,
        "time_ms": {i: r["time_ms"] for i, r in graded.items()},
        "wall_ms": {i: r["wall_ms"] for i, r in graded.items()},
    }


def table(rows: list[dict[str, Any]], cores: int) -> str:
    lines = [
        "| runtime | `--jobs` | beside it | clock | verdicts as deserved | batch time |",
        "|---|---|---|---|---|---|",
    ]
    loads = {
        "alone": "nothing",
        "batch": "another batch of the set",
        "busy": f"{cores} busy loops",
    }
    for row in rows:
        wrong = row["wrong"]
        said = (
            f"{len(SET)} of {len(SET)}"
            if not wrong
            else f"**{len(SET) - len(wrong)} of {len(SET)}** ("
            + ", ".join(f"{i}: {v}" for i, v in sorted(wrong.items()))
            + ")"
        )
        lines.append(
            f"| {row['runtime']} | {row['jobs']} | {loads[row['load']]} | {row['clock']} | "
            f"{said} | {row['seconds']:.0f} s |"
        )
    return "\n".join(lines)


def spread(rows: list[dict[str, Any]]) -> str:
    """Each accepted task's largest test CPU time, lowest and highest over the CPU-clock
    scenarios, per runtime."""
    lines = ["| task | runc: CPU ms, min-max | gVisor: CPU ms, min-max |", "|---|---|---|"]
    for task, (_, deserved) in SET.items():
        if deserved != "accepted":
            continue
        cells = []
        for runtime in ("runc", "runsc"):
            seen = [
                r["time_ms"][task]
                for r in rows
                if r["runtime"] == runtime and r["clock"] == "cpu" and r["time_ms"].get(task)
            ]
            cells.append(f"{min(seen):.0f}-{max(seen):.0f}" if seen else "-")
        lines.append(f"| {task} | {cells[0]} | {cells[1]} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runtimes", default="runc,runsc")
    parser.add_argument("--old", action="store_true", help="the old rule too, where it broke")
    parser.add_argument("--write", action="store_true", help="into docs/benchmarks.md")
    args = parser.parse_args()
    cores = len(os.sched_getaffinity(0))
    rows = []
    with tempfile.TemporaryDirectory(prefix="hazmat-verdicts-") as tmp:
        folder = Path(tmp)
        for runtime in args.runtimes.split(","):
            for jobs in (1, 4 * cores):
                for load in ("alone", "batch", "busy"):
                    rows.append(scenario(folder, runtime, jobs, load, "cpu", cores))
                    print(json.dumps(rows[-1]), flush=True)
            if args.old:
                for jobs, load in ((1, "alone"), (4 * cores, "busy")):
                    rows.append(scenario(folder, runtime, jobs, load, "wall", cores))
                    print(json.dumps(rows[-1]), flush=True)
    when = datetime.now(UTC).strftime("%Y-%m-%d")
    text = (
        f"Measured {when} on {cores} cores (`benchmarks/verdicts.py`, one run): {len(SET)} "
        f"Python submissions, three tests each, a {LIMIT_S:g} s limit, trust `unknown`, graded "
        "by `hazmat batch --local`; each deserves the verdict its id names (see the script). "
        "`cpu` is the default rule (CPU time, a whole CPU each, one measured program per "
        "core, the wall-clock backstop on the program's own time); `wall` the old one (a "
        "wall-clock limit at the level's 0.5 CPU).\n\n"
        + table(rows, cores)
        + "\n\nHow much a program's CPU time moves between those scenarios (its largest test, "
        "the accepted tasks, CPU clock only): what decides a program right at its limit.\n\n"
        + spread(rows)
    )
    print(text)
    if args.write:
        write_section("verdicts", "Verdicts under load", text)


if __name__ == "__main__":
    main()
