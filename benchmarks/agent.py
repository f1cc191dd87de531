"""The compiled agent of this tree against another agent, side by side in one run (issue 64,
item 4): on the direct OCI tier against the compiled agent of an earlier commit (`--baseline`),
or on the Docker backend against the shell agent (`--tier docker`). Every row is measured with
both agents, in alternating rounds, each round on a fresh warm pool of its own.

Rows, under runc and runsc (the pool full before each timed call, so that a row measures the
agent and not the pool's refill):
  - Python `print(1)`: a runner language, whose runner unpacks the job itself;
  - C with three input files (one in a folder) and two output files: the agent unpacks, builds,
    runs and collects (the path of a grader's submission);
  - Bash with an env variable and two args: the run command gets them from the agent;
and fresh single-use sandboxes per second, Python `print(1)`, 4 callers back to back.

    .venv/bin/python benchmarks/agent.py --baseline 3a0dd27 --runs 15 --seconds 15 --write
    .venv/bin/python benchmarks/agent.py --tier docker --runs 15 --seconds 15 --write
"""

from __future__ import annotations

import argparse
import functools
import statistics
import subprocess
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from docs_section import write_section
from tiers import flat_out

from hazmat import ExecutionResult, Outcome, Sandbox
from hazmat.backends.agent import compiled
from hazmat.backends.agent.single import RELAY_PORT
from hazmat.backends.docker.driver import DockerBackend
from hazmat.backends.inside import fill
from hazmat.backends.oci.driver import OciBackend
from hazmat.backends.pool.warm import PoolBackend
from hazmat.policy import Policy, PoolSettings

ROOT = Path(__file__).resolve().parent.parent
RUNTIMES = ("runc", "runsc")

C_CODE = """#include <stdio.h>
int main(void) {
    char line[64] = "";
    FILE *in = fopen("data/in.txt", "r");
    if (!in || !fgets(line, sizeof line, in)) return 1;
    fclose(in);
    FILE *out = fopen("out.txt", "w");
    fputs(line, out);
    fclose(out);
    out = fopen("twice.txt", "w");
    fprintf(out, "%s%s", line, line);
    fclose(out);
    printf("%s", line);
    return 0;
}
"""
C_FILES: dict[str, str | bytes] = {
    "data/in.txt": "hello\n",
    "notes.txt": "n" * 4000,
    "extra.bin": bytes(range(256)),
}


def _calls(sandbox: Sandbox, runtime: str) -> dict[str, tuple[str, Callable[[], None]]]:
    """Each row's language and call."""

    def python() -> None:
        _expect(sandbox.run("print(1)", runtime=runtime), "1\n")

    def c() -> None:
        result = sandbox.run(
            C_CODE, "c", files=C_FILES, output_files=["out.txt", "twice.txt"], runtime=runtime
        )
        _expect(result, "hello\n")
        if sorted(result.files) != ["out.txt", "twice.txt"]:
            raise SystemExit(f"{runtime}: the C row's files came back as {sorted(result.files)}")

    def bash() -> None:
        result = sandbox.run(
            'echo "$GREETING $1 $2"', "bash", env={"GREETING": "hi"}, args=["a b", "c"],
            runtime=runtime,
        )  # fmt: skip
        _expect(result, "hi a b c\n")

    return {
        "Python `print(1)`": ("python", python),
        "C, 3 files in, 2 out": ("c", c),
        "Bash, env and args": ("bash", bash),
    }


def _expect(result: ExecutionResult, stdout: str) -> None:
    if result.outcome is not Outcome.OK or result.stdout != stdout:
        raise SystemExit(f"unexpected result: {result!r}")


def _use(source: str) -> None:
    """The agent every sandbox started from now on gets: built from `source` (once per source)."""
    compiled.AGENT_SOURCE = source
    compiled._build.cache_clear()


def _source_at(commit: str) -> str:
    text = subprocess.run(
        ["git", "show", f"{commit}:src/hazmat/backends/inside/agent.c"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    return fill(text, RELAY_PORT=str(RELAY_PORT), RELAY_HEX=f"{RELAY_PORT:04X}")


def _times_ms(call: Callable[[], None], runs: int, before: Callable[[], object]) -> list[float]:
    """The ms of `runs` timed calls, after one untimed; `before` each (untimed)."""
    call()
    times = []
    for _ in range(runs):
        before()
        began = time.perf_counter()
        call()
        times.append((time.perf_counter() - began) * 1000)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--tier", choices=("oci", "docker"), default="oci")
    parser.add_argument("--baseline", help="oci: the commit whose agent.c to compare")
    parser.add_argument("--runs", type=int, default=15, help="timed calls per row and round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=15.0, help="per throughput window")
    parser.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    args = parser.parse_args()
    if args.tier == "oci" and not args.baseline:
        parser.error("--baseline is needed on the OCI tier")
    args.before = args.baseline if args.tier == "oci" else "shell agent"
    variants = _variants(args.tier, args.before)
    times: dict[tuple[str, str, str], list[float]] = {}
    rates: dict[tuple[str, str], list[float]] = {}
    for round_ in range(args.rounds):
        for name, backend in variants.items():
            settings = PoolSettings(size=2, max_size=8, refill_concurrency=2, max_containers=32)
            pool = PoolBackend(backend(), settings)
            with Sandbox(Policy(), backend=pool) as sandbox:
                for runtime in RUNTIMES:
                    for row, (language, call) in _calls(sandbox, runtime).items():
                        spec = sandbox.warm(language, runtime=runtime)
                        full = functools.partial(pool.wait_ready, spec, 2)
                        times.setdefault((row, runtime, name), []).extend(
                            _times_ms(call, args.runs, full)
                        )
                    fresh = _calls(sandbox, runtime)["Python `print(1)`"][1]
                    rates.setdefault((runtime, name), []).append(
                        flat_out(fresh, 4, args.seconds)[0]
                    )
            print(f"round {round_ + 1}/{args.rounds}: {name} done", flush=True)
    text = _table(args, times, rates)
    print(text)
    if args.write:
        title = "The compiled agent, before and after"
        if args.tier == "docker":
            title = "The compiled agent on the Docker backend, against the shell agent"
        write_section(f"agent-{args.tier}", title, text)


def _variants(tier: str, before: str) -> dict[str, Callable[[], DockerBackend | OciBackend]]:
    """The two agents, each as a backend that runs it from now on."""
    if tier == "docker":
        return {
            before: lambda: DockerBackend(compiled=False),
            "this tree": lambda: DockerBackend(compiled=True),
        }
    sources = {before: _source_at(before), "this tree": compiled.AGENT_SOURCE}

    def oci(source: str) -> Callable[[], DockerBackend | OciBackend]:
        def make() -> OciBackend:
            _use(source)
            return OciBackend()

        return make

    return {name: oci(source) for name, source in sources.items()}


def _table(
    args: argparse.Namespace,
    times: dict[tuple[str, str, str], list[float]],
    rates: dict[tuple[str, str], list[float]],
) -> str:
    before, after = args.before, "this tree"
    how = f"--baseline {before}" if args.tier == "oci" else "--tier docker"
    what = (
        f"the direct OCI tier, the compiled agent of commit {before} against this tree's"
        if args.tier == "oci"
        else "the Docker backend (a local engine), the shell agent against this tree's compiled one"
    )
    lines = [
        f"Measured {datetime.now(UTC):%Y-%m-%d} with `benchmarks/agent.py {how} "
        f"--runs {args.runs} --rounds {args.rounds} --seconds {args.seconds:g}`: {what}, in "
        "alternating rounds; medians of every timed call (ms, end to end through `Sandbox.run`), "
        "and of the rounds' rates.",
        "",
        f"| row | runtime | {before} | this tree | ratio |",
        "|---|---|--:|--:|--:|",
    ]
    for (row, runtime, name), values in times.items():
        if name != before:
            continue
        old, new = statistics.median(values), statistics.median(times[(row, runtime, after)])
        lines.append(f"| {row} | {runtime} | {old:.1f} ms | {new:.1f} ms | {new / old:.2f} |")
    for runtime in RUNTIMES:
        old, new = (statistics.median(rates[(runtime, n)]) for n in (before, after))
        lines.append(
            f"| fresh sandboxes/s, 4 callers | {runtime} | {old:.2f} | {new:.2f} | "
            f"{new / old:.2f} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
