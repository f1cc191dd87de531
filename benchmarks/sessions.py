"""A call in a session against a warm single run, under runc and runsc: `print(1)` in Python,
and a call that uses what an earlier one set (a session's reason to exist); medians.

One Sandbox (warm pool for the single runs); the methods alternate call by call.

    .venv/bin/python benchmarks/sessions.py --runs 30 --write
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from datetime import UTC, datetime

from docs_section import write_section

import hazmat

WARMUP = 3


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    args = parser.parse_args()
    with hazmat.Sandbox() as sandbox:
        began = time.perf_counter()
        sessions = {
            runtime: sandbox.session("python", trust=trust, runtime=runtime)
            for runtime, trust in (("runc", "unknown"), ("runsc", "untrusted"))
        }
        opened_ms = (time.perf_counter() - began) * 1000 / len(sessions)
        methods: dict[str, Callable[[], hazmat.ExecutionResult]] = {}
        for runtime, trust in (("runc", "unknown"), ("runsc", "untrusted")):
            session = sessions[runtime]
            session.run("data = list(range(100_000))")
            methods[f"single run, warm pool ({runtime})"] = lambda t=trust, r=runtime: sandbox.run(
                "print(1)", trust=t, runtime=r
            )
            methods[f"session call `print(1)` ({runtime})"] = lambda s=session: s.run("print(1)")
            methods[f"session call using earlier state `len(data)` ({runtime})"] = (
                lambda s=session: s.run("len(data)")
            )
        times: dict[str, list[float]] = {name: [] for name in methods}
        for round_ in range(WARMUP + args.runs):
            for name, call in methods.items():
                began = time.perf_counter()
                result = call()
                elapsed = (time.perf_counter() - began) * 1000
                if result.outcome is not hazmat.Outcome.OK:
                    raise SystemExit(f"{name}: {result.outcome} {result.error}")
                if round_ >= WARMUP:
                    times[name].append(elapsed)
        for session in sessions.values():
            session.close()
    rows = [f"| {name} | {statistics.median(t):.1f} |" for name, t in times.items()]
    text = "\n".join(
        [
            f"`benchmarks/sessions.py --runs {args.runs}`, {datetime.now(UTC):%Y-%m-%d}: from a "
            "Python caller, end to end (assessment and audit included), the methods alternating "
            f"call by call ({WARMUP} warm-up rounds not counted). Opening a session (its "
            f"container started and checked) took {opened_ms:.0f} ms on average.",
            "",
            "| how | median ms |",
            "|---|---:|",
            *rows,
        ]
    )
    print(text)
    if args.write:
        write_section("sessions", "Sessions: a call in a kept container", text)


if __name__ == "__main__":
    main()
