"""Near-limit verdicts under runc and gVisor: programs within a tenth of their memory and CPU
limits, graded the same way under both runtimes, and the CPU-time factor between them.

    .venv/bin/python benchmarks/near_limits.py --write

The set: C and Python programs that touch 90% and 110% of a 256 MB memory limit, and that
compute for 90% and 110% of a 2 s CPU-time limit; each deserves the verdict its id names.
The CPU work is sized from a calibration run under runc (its CPU time per iteration, as the
grader measures it), so the same programs run under both runtimes. Each program is graded
alone (`Sandbox.map`, one task at a time, trust `unknown`, the runtime asked), and each
runtime's verdicts are compared with what the program deserves. Its CPU time under each
runtime gives the factor gVisor adds: for pure computation, for Python (an interpreter's
start and its allocations), and for touching memory (page faults, which gVisor's Sentry
serves on the ptrace platform).
"""

from __future__ import annotations

import argparse
import statistics
from datetime import UTC, datetime
from typing import Any

from docs_section import write_section

from hazmat import Sandbox

MEMORY_MB = 256
CPU_LIMIT_S = 2.0
TOUCH_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(void) {
    long mib = MIB;
    char *p = malloc((size_t)mib << 20);
    if (p == NULL) return 3;
    memset(p, 1, (size_t)mib << 20);
    long n = 0;
    if (scanf("%ld", &n) != 1) return 2;
    printf("%ld\n", n + p[mib] - 1 + 1);
    return 0;
}
"""
TOUCH_PY = (
    "b = bytearray(MIB << 20)\nfor i in range(0, len(b), 4096):\n    b[i] = 1\n"
    "print(int(input()) + 1)\n"
)
SPIN_C = r"""
#include <stdio.h>
int main(void) {
    volatile unsigned long x = 1;
    for (long i = 0; i < ITERATIONS; i++) x = x * 6364136223846793005UL + 1442695040888963407UL;
    long n = 0;
    if (scanf("%ld", &n) != 1) return 2;
    printf("%ld\n", n + 1 + (long)(x & 0));
    return 0;
}
"""
# small integers throughout, so that an iteration costs the same at any count
SPIN_PY = (
    "x = 0\nfor i in range(ITERATIONS):\n    x = (x * 31 + i) % 1000003\n"
    "print(int(input()) + 1 + x * 0)\n"
)
CALIBRATION = 200_000_000, 10_000_000  # C's and Python's iterations for the calibration


def task(name: str, language: str, code: str, **limits: Any) -> dict[str, Any]:
    tests = [{"stdin": "41\n", "expected_stdout": "42\n"}]
    return {"id": name, "language": language, "code": code, "tests": tests, **limits}


def graded(sb: Sandbox, tasks: list[dict[str, Any]], runtime: str) -> dict[str, Any]:
    """Each task's first test, graded one task at a time under `runtime`."""
    results = sb.map(tasks, jobs=1, runtime=runtime, trust="unknown")
    return {result.id: result.tests[0] for result in results}


def calibrate(sb: Sandbox) -> tuple[float, float]:
    """Seconds of CPU per iteration of the C and the Python loop under runc, the median of
    three runs each (a busy machine's CPU time varies: docs/benchmarks.md, verdicts under load)."""
    c_n, py_n = CALIBRATION
    tasks = [
        task(f"{language}-{i}", language, code.replace("ITERATIONS", str(n)), timeout=10)
        for i in range(3)
        for language, code, n in (("c", SPIN_C, c_n), ("python", SPIN_PY, py_n))
    ]
    tests = graded(sb, tasks, "runc")
    per = {
        language: statistics.median(tests[f"{language}-{i}"].time_ms for i in range(3)) / 1000 / n
        for language, n in (("c", c_n), ("python", py_n))
    }
    return per["c"], per["python"]


def near_limit_set(per_c: float, per_py: float) -> dict[str, tuple[dict[str, Any], str]]:
    """id -> (task, the verdict it deserves)."""
    chosen: dict[str, tuple[dict[str, Any], str]] = {}
    for share, deserved in ((0.9, "accepted"), (1.1, "memory_limit")):
        mib = int(MEMORY_MB * share)
        for language, code in (("c", TOUCH_C), ("python", TOUCH_PY)):
            name = f"memory-{int(share * 100)}%-{language}"
            source = code.replace("MIB", str(mib))
            chosen[name] = (task(name, language, source, memory_mb=MEMORY_MB, timeout=10), deserved)
    for share, deserved in ((0.9, "accepted"), (1.1, "time_limit")):
        for language, code, per in (("c", SPIN_C, per_c), ("python", SPIN_PY, per_py)):
            name = f"cpu-{int(share * 100)}%-{language}"
            source = code.replace("ITERATIONS", str(int(share * CPU_LIMIT_S / per)))
            chosen[name] = (task(name, language, source, timeout=CPU_LIMIT_S), deserved)
    return chosen


def table(chosen: dict[str, tuple[dict[str, Any], str]], runs: dict[str, dict[str, Any]]) -> str:
    rows = [
        "| program | deserves | runc | gVisor | runc: CPU ms / memory MB | gVisor: CPU ms / "
        "memory MB | CPU gVisor ÷ runc |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, (_, deserved) in chosen.items():
        runc, runsc = runs["runc"][name], runs["runsc"][name]
        cells = [_verdict(t.verdict, deserved) for t in (runc, runsc)]
        figures = [_figures(t) for t in (runc, runsc)]
        factor = (
            f"{runsc.time_ms / runc.time_ms:.2f}"
            if runc.time_ms and runsc.time_ms and deserved == "accepted"
            else "-"
        )
        rows.append(
            f"| {name} | {deserved} | {' | '.join(cells)} | {' | '.join(figures)} | {factor} |"
        )
    return "\n".join(rows)


def _verdict(got: str, deserved: str) -> str:
    return got if got == deserved else f"**{got}**"


def _figures(test: Any) -> str:
    cpu = "-" if test.time_ms is None else f"{test.time_ms:.0f}"
    memory = "-" if test.memory_bytes is None else f"{test.memory_bytes / 2**20:.0f}"
    return f"{cpu} / {memory}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="write docs/benchmarks.md")
    args = parser.parse_args()
    with Sandbox() as sb:
        per_c, per_py = calibrate(sb)
        chosen = near_limit_set(per_c, per_py)
        tasks = [t for t, _ in chosen.values()]
        runs = {runtime: graded(sb, tasks, runtime) for runtime in ("runc", "runsc")}
    same = sum(
        runs["runc"][name].verdict == runs["runsc"][name].verdict == deserved
        for name, (_, deserved) in chosen.items()
    )
    day = datetime.now(UTC).strftime("%Y-%m-%d")
    text = (
        f"Measured {day} on 2 cores (`benchmarks/near_limits.py`, one run): each program graded "
        f"alone, trust `unknown`, a {MEMORY_MB} MB memory limit and a {CPU_LIMIT_S:g} s CPU-time "
        "limit; the CPU work sized from a calibration under runc (C "
        f"{per_c * 1e9:.2f} ns, Python {per_py * 1e9:.1f} ns an iteration). Memory is the "
        "program's own peak (under gVisor without gVisor's own memory); a verdict other than "
        f"the deserved one is in bold. {same} of {len(chosen)} judged as deserved under both "
        "runtimes.\n\n" + table(chosen, runs)
    )
    print(text)
    if args.write:
        write_section("near-limits", "Near-limit verdicts under runc and gVisor", text)


if __name__ == "__main__":
    main()
