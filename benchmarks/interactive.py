"""An interactive problem's tests beside a plain one's, under runc and runsc: the time per test
and the tests per second of one task graded at a time (`Sandbox.map`, jobs 1). Medians.

Plain: a Python sum, judged by its output (a kept build: one build, each test a fresh process).
Interactive: the example set's guessing game (examples/grading/judging.jsonl), a Python
bisection against the Python interactor, and against a C++ testlib interactor (each test two
fresh runs, each with its own build). The three alternate in one run.

    .venv/bin/python benchmarks/interactive.py --runs 3 --write
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from datetime import UTC, datetime
from pathlib import Path

from docs_section import write_section

import hazmat

EXAMPLES = Path(__file__).parents[1] / "examples" / "grading" / "judging.jsonl"
TESTLIB = (EXAMPLES.parent / "guess-interactor.cpp").read_text()


def tasks(tests: int) -> dict[str, dict[str, object]]:
    lines = EXAMPLES.read_text().splitlines()
    guess = json.loads(next(line for line in lines if '"guess-python-right"' in line))
    secrets = [1 + (k * 7_919_113) % 1_000_000_000 for k in range(tests)]
    ungrouped = {k: v for k, v in guess.items() if k != "groups"}
    interactive = {**ungrouped, "tests": [{"stdin": f"{n}\n"} for n in secrets]}
    return {
        "plain": {
            "id": "plain",
            "language": "python",
            "code": "a, b = map(int, input().split())\nprint(a + b)\n",
            "timeout": 1,
            "tests": [
                {"stdin": f"{k} {k}\n", "expected_stdout": f"{2 * k}\n"} for k in range(tests)
            ],
        },
        "interactive, Python interactor": {**interactive, "id": "python"},
        "interactive, C++ testlib interactor": {
            **interactive,
            "id": "testlib",
            "interactor": {"language": "cpp", "code": TESTLIB},
            "tests": interactive["tests"][: max(1, tests // 4)],
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--tests", type=int, default=12)
    parser.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    args = parser.parse_args()
    rows = []
    with hazmat.Sandbox() as sandbox:
        for runtime, trust in (("runc", "unknown"), ("runsc", "untrusted")):
            per_test: dict[str, list[float]] = {}
            for _ in range(args.runs):
                for kind, task in tasks(args.tests).items():
                    began = time.perf_counter()
                    (result,) = sandbox.map([task], jobs=1, trust=trust, runtime=runtime)
                    spent = (time.perf_counter() - began) * 1000
                    if result.verdict != "accepted":
                        raise SystemExit(f"{kind}: {result.verdict} {result.message}")
                    per_test.setdefault(kind, []).append(spent / len(result.tests))
            plain = statistics.median(per_test["plain"])
            for kind, times in per_test.items():
                ms = statistics.median(times)
                rows.append(
                    f"| {runtime} | {kind} | {ms:.0f} | {1000 / ms:.1f} | {ms / plain:.1f}x |"
                )
    text = "\n".join(
        [
            f"`benchmarks/interactive.py --runs {args.runs} --tests {args.tests}`, "
            f"{datetime.now(UTC):%Y-%m-%d}: one task at a time through `Sandbox.map`, the "
            "time per test (the task's time over its tests, builds included), medians; the "
            "three kinds alternate in one run. The C++ interactor's task has a quarter of the "
            "tests (each builds it).",
            "",
            "| runtime | task | ms per test | tests/s | against plain |",
            "|---|---|---:|---:|---:|",
            *rows,
        ]
    )
    print(text)
    if args.write:
        write_section("interactive", "Interactive problems", text)


if __name__ == "__main__":
    main()
