"""A session's calls with the compiled session agent against the shell one (session.sh), side by
side in one run, on the Docker backend with a local engine (issue 64, item 4): the two agents
alternate round by round, each round opening its own sessions.

Rows, under runc and runsc, each a call in a session opened before the round:
  - Python `print(1)`: the kept interpreter unpacks the call's job itself;
  - JavaScript `console.log(1)`: node, started ahead of the call (the warm runner);
  - Bash `echo` with an env variable: the kept shell, which unpacks with session_unpack.sh;
  - C with an input file and an output file: the agent unpacks, builds, runs and collects (the
    compiled agent itself; the shell agent by session_unpack.sh and stage.sh);
and the time to open a Python session (its container started and the agent ready).

    .venv/bin/python benchmarks/session_agent.py --runs 15 --write
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from datetime import UTC, datetime

from docs_section import write_section

from hazmat import ExecutionResult, Outcome, Sandbox
from hazmat.backends.docker.driver import DockerBackend
from hazmat.sessions import Session
from hazmat.testing import as_asked

RUNTIMES = ("runc", "runsc")
AGENTS = {"shell agent": False, "compiled agent": True}
C_CODE = """#include <stdio.h>
int main(void) {
    char line[64] = "";
    FILE *in = fopen("in.txt", "r");
    if (!in || !fgets(line, sizeof line, in)) return 1;
    FILE *out = fopen("out.txt", "w");
    fputs(line, out);
    fclose(out);
    printf("%s", line);
    return 0;
}
"""


def _rows(open_session: Callable[[str], Session]) -> dict[str, Callable[[], None]]:
    """Each row's call, in a session of its language opened now."""
    python, node, bash, c = (open_session(lang) for lang in ("python", "javascript", "bash", "c"))

    def in_c() -> None:
        done = c.run(C_CODE, files={"in.txt": "hello\n"}, output_files=["out.txt"])
        _expect(done, "hello\n")
        if done.files.get("out.txt") != b"hello\n":
            raise SystemExit(f"the C row's file came back as {dict(done.files)!r}")

    return {
        "Python `print(1)`": lambda: _expect(python.run("print(1)"), "1\n"),
        "JavaScript `console.log(1)`": lambda: _expect(node.run("console.log(1)"), "1\n"),
        "Bash `echo` with env": lambda: _expect(
            bash.run('echo "$GREETING"', env={"GREETING": "hi"}), "hi\n"
        ),
        "C, built, 1 file in, 1 out": in_c,
    }


def _expect(result: ExecutionResult, stdout: str) -> None:
    if result.outcome is not Outcome.OK or result.stdout != stdout:
        raise SystemExit(f"unexpected result: {result!r}")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="timed calls per row and round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    args = parser.parse_args()
    times: dict[tuple[str, str, str], list[float]] = {}
    for round_ in range(args.rounds):
        for agent, compiled in AGENTS.items():
            backend = DockerBackend(compiled=compiled)
            with Sandbox(as_asked(), backend=backend) as sandbox:
                for runtime in RUNTIMES:
                    opened: list[Session] = []

                    def open_session(
                        lang: str, runtime: str = runtime, agent: str = agent,
                        opened: list[Session] = opened,
                    ) -> Session:  # fmt: skip
                        began = time.perf_counter()
                        session = sandbox.session(lang, runtime=runtime)
                        if lang == "python":
                            row = ("open a Python session", runtime, agent)
                            times.setdefault(row, []).append((time.perf_counter() - began) * 1000)
                        opened.append(session)
                        return session

                    for row, call in _rows(open_session).items():
                        call()  # one untimed
                        for _ in range(args.runs):
                            began = time.perf_counter()
                            call()
                            elapsed = (time.perf_counter() - began) * 1000
                            times.setdefault((row, runtime, agent), []).append(elapsed)
                    for session in opened:
                        session.close()
            print(f"round {round_ + 1}/{args.rounds}: {agent} done", flush=True)
    text = _table(args, times)
    print(text)
    if args.write:
        write_section("session-agent", "The compiled session agent, against the shell one", text)


def _table(args: argparse.Namespace, times: dict[tuple[str, str, str], list[float]]) -> str:
    before, after = AGENTS
    lines = [
        f"Measured {datetime.now(UTC):%Y-%m-%d} with `benchmarks/session_agent.py --runs "
        f"{args.runs} --rounds {args.rounds}`: the Docker backend (a local engine), a session's "
        "calls with session.sh against the compiled agent's session mode, the two alternating "
        "round by round; end to end from a Python caller (assessment and audit included); "
        "medians in ms.",
        "",
        f"| row | runtime | {before} | {after} | {after} / {before} |",
        "|---|---|---:|---:|---:|",
    ]
    rows = dict.fromkeys(row for row, _, _ in times)
    for row in rows:
        for runtime in RUNTIMES:
            was = statistics.median(times[(row, runtime, before)])
            now = statistics.median(times[(row, runtime, after)])
            lines.append(f"| {row} | {runtime} | {was:.1f} | {now:.1f} | {now / was:.2f} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
