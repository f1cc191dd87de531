"""What a call past its time limit costs a session's user, under runc and runsc: now (the call
is interrupted, the session goes on with its variables) against what it cost before (the
session ended: a new one opened and the work that built its state done again). Medians.

The state is a Python session's `data` (a list built by a setup call); the slow call spins past
its 1 s limit; the next call uses `data`. Both ways run side by side in one run, alternating.

    .venv/bin/python benchmarks/session_timeout.py --runs 5 --write
"""

from __future__ import annotations

import argparse
import statistics
import time
from datetime import UTC, datetime

from docs_section import write_section

import hazmat

SETUP = "data = [i * i for i in range(2_000_000)]"  # the state a model built
SLOW = "n = 0\nwhile n >= 0:\n    n += 1"  # endless, though not by its look (runc may run it)
NEXT = "print(len(data))"
LIMIT_S = 1.0


def timed(call: object) -> float:
    began = time.perf_counter()
    call()  # type: ignore[operator]
    return (time.perf_counter() - began) * 1000


def interrupted(session: hazmat.Session) -> tuple[float, float]:
    """The slow call (its result, interrupted), then the next call, in the same session."""
    began = time.perf_counter()
    slow = session.run(SLOW, timeout=LIMIT_S)
    stopped = (time.perf_counter() - began) * 1000
    if slow.outcome is not hazmat.Outcome.TIMEOUT:
        raise SystemExit(f"the slow call: {slow.outcome} {slow.error}")
    after = session.run(NEXT)
    if after.stdout != "2000000\n":
        raise SystemExit(f"the state did not survive: {after.stdout!r} {after.stderr}")
    return stopped, (time.perf_counter() - began) * 1000


def reopened(sandbox: hazmat.Sandbox, runtime: str, trust: str) -> tuple[float, float]:
    """What the model did before: the slow call's session gone, a new one opened, the setup
    done again, then the next call (the slow call's own limit counted as it was)."""
    began = time.perf_counter()
    with sandbox.session("python", trust=trust, runtime=runtime) as session:
        session.run(SETUP)
        after = session.run(NEXT)
    if after.stdout != "2000000\n":
        raise SystemExit(f"the new session: {after.stdout!r} {after.stderr}")
    return LIMIT_S * 1000, LIMIT_S * 1000 + (time.perf_counter() - began) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    args = parser.parse_args()
    rows = []
    with hazmat.Sandbox() as sandbox:
        for runtime, trust in (("runc", "unknown"), ("runsc", "untrusted")):
            now: list[tuple[float, float]] = []
            before: list[tuple[float, float]] = []
            with sandbox.session("python", trust=trust, runtime=runtime) as session:
                session.run(SETUP)
                for _ in range(args.runs):
                    now.append(interrupted(session))
                    before.append(reopened(sandbox, runtime, trust))
            for how, got in (("interrupted, session kept", now), ("session ended, redone", before)):
                stop = statistics.median(t[0] for t in got)
                back = statistics.median(t[1] for t in got)
                rows.append(f"| {runtime} | {how} | {stop:.0f} | {back:.0f} |")
    text = "\n".join(
        [
            f"`benchmarks/session_timeout.py --runs {args.runs}`, {datetime.now(UTC):%Y-%m-%d}: a "
            f"Python session whose state took a call to build (`{SETUP}`), a call that spins past "
            f"its {LIMIT_S:g} s limit, then a call that uses the state; the two ways alternate "
            "in one run. \"Session ended, redone\" is what a model had to do before this stop: "
            "open a new session and build the state again (the slow call's limit counted as it "
            "was spent).",
            "",
            "| runtime | how | the slow call's result, ms | the state in use again, ms |",
            "|---|---|---:|---:|",
            *rows,
        ]
    )
    print(text)
    if args.write:
        write_section("session_timeout", "Sessions: a call past its time limit", text)


if __name__ == "__main__":
    main()
