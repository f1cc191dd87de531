"""A JavaScript and a TypeScript session call, `console.log(1)`, under runc and runsc: after an
idle second (an assistant thinking between calls: the next call's node is started and waiting)
and back to back (the call waits for the node started when the last one ended, as every call
did before the warm runner); medians, the sessions alternating call by call.

    .venv/bin/python benchmarks/node_sessions.py --runs 10 --write
"""

from __future__ import annotations

import argparse
import statistics
import time
from datetime import UTC, datetime

from docs_section import write_section

import hazmat

PROGRAMS = {"javascript": "console.log(1)", "typescript": "const n: number = 1; console.log(n)"}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--idle", type=float, default=1.0, help="seconds between idle calls")
    parser.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    args = parser.parse_args()
    with hazmat.Sandbox() as sandbox:
        sessions = {
            (language, runtime): sandbox.session(language, trust=trust, runtime=runtime)
            for language in PROGRAMS
            for runtime, trust in (("runc", "unknown"), ("runsc", "untrusted"))
        }
        idle: dict[tuple[str, str], list[float]] = {key: [] for key in sessions}
        busy: dict[tuple[str, str], list[float]] = {key: [] for key in sessions}
        for round_ in range(args.runs + 1):
            for (language, runtime), session in sessions.items():
                time.sleep(args.idle)  # the think time being measured, not a synchronisation
                for times in (idle, busy):  # after the pause, then at once again
                    began = time.perf_counter()
                    result = session.run(PROGRAMS[language])
                    if result.stdout != "1\n":
                        raise SystemExit(f"{language} {runtime}: {result.outcome} {result.stderr}")
                    if round_:
                        times[(language, runtime)].append((time.perf_counter() - began) * 1000)
        for session in sessions.values():
            session.close()
    rows = [
        f"| {language} | {runtime} | {statistics.median(idle[key]):.0f} | "
        f"{statistics.median(busy[key]):.0f} |"
        for key in sessions
        for language, runtime in [key]
    ]
    text = "\n".join(
        [
            f"`benchmarks/node_sessions.py --runs {args.runs}`, {datetime.now(UTC):%Y-%m-%d}: "
            "one session per language and runtime, from a Python caller, end to end (assessed "
            "and recorded; TypeScript built by esbuild each call).",
            "",
            f"| language | runtime | call after {args.idle:g} s idle, ms | call right after "
            "another, ms |",
            "|---|---|---:|---:|",
            *rows,
            "",
            "After an idle moment the call finds node started and waiting (the session's warm "
            "runner); right after another call it waits for that start, which is what every "
            "call cost before.",
        ]
    )
    print(text)
    if args.write:
        write_section("node_sessions", "Sessions: JavaScript and TypeScript calls", text)


if __name__ == "__main__":
    main()
