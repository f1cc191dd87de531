"""Where a grading batch's time goes: benchmarks/batch.py's generated set graded one task at a
time on `Sandbox()` (the default tier, trust `unknown`), so that nothing competes. Per language,
a test's own time (its clock: the CPU time from its go to its end, what its limit is checked
against) and its share of its task's wall time once the build is done; and the set's time
split into tasks that ran into their time limits, builds, and everything else. Results go to
stdout and, with --write, into docs/benchmarks.md between the markers for this benchmark.

    .venv/bin/python benchmarks/grading_split.py --tasks 60 --write
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import defaultdict
from datetime import UTC, datetime

import batch as grading_set
from docs_section import write_section

from hazmat import Sandbox
from hazmat.grade.grader import Grader


def split(tasks: int, runtime: str) -> tuple[dict[str, tuple[float, float, int]], dict[str, float]]:
    """Per language (test clock median ms, wall per test median ms, accepted tests); and the
    set's seconds in time-limited tasks, builds and the rest."""
    rows: dict[str, list[tuple[float, float]]] = defaultdict(list)
    spent = {"time limits": 0.0, "builds": 0.0, "the rest": 0.0}
    graded_set = grading_set.generated(tasks)
    with Sandbox() as sandbox:
        for language in sorted({t.language for t in graded_set}):
            sandbox.warm(language, trust="unknown", runtime=runtime)
        grader = Grader(sandbox, trust="unknown", runtime=runtime)
        for number, task in enumerate(graded_set, 1):
            began = time.perf_counter()
            result = grader.grade(task)
            wall_s = time.perf_counter() - began
            print(f"[{number}/{len(graded_set)}] {task.language} {result.verdict}", flush=True)
            if result.verdict == "time_limit":
                spent["time limits"] += wall_s
                continue
            build_s = (result.compile_ms or 0.0) / 1000
            spent["builds"] += build_s
            spent["the rest"] += wall_s - build_s
            if result.verdict == "accepted":
                each_ms = (wall_s - build_s) * 1000 / len(result.tests)
                rows[task.language] += [(t.time_ms or 0.0, each_ms) for t in result.tests]
    medians = {
        language: (
            statistics.median(clock for clock, _ in found),
            statistics.median(each for _, each in found),
            len(found),
        )
        for language, found in sorted(rows.items())
    }
    return medians, spent


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--tasks", type=int, default=60)
    parser.add_argument("--runtime", default="runc")
    parser.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    args = parser.parse_args()
    medians, spent = split(args.tasks, args.runtime)
    total = sum(spent.values())
    lines = [
        f"`benchmarks/grading_split.py --tasks {args.tasks}`, "
        f"{datetime.now(UTC):%Y-%m-%d}, {args.runtime}, trust `unknown`, one task at a time: "
        f"the set's {total:.0f} s went "
        + ", ".join(f"{s:.1f} s ({s / total:.0%}) to {what}" for what, s in spent.items())
        + ".",
        "",
        "| language | accepted tests | a test's own time (CPU, median ms) "
        "| its task's wall time per test after the build (median ms) |",
        "|---|---:|---:|---:|",
        *(
            f"| {language} | {count} | {clock:.1f} | {each:.1f} |"
            for language, (clock, each, count) in medians.items()
        ),
    ]
    text = "\n".join(lines)
    print(text)
    if args.write:
        write_section("grading_split", "Where a grading batch's time goes", text)


if __name__ == "__main__":
    main()
