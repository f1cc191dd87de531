"""`hazmat bench`: latency of a trivial program through plain `docker run`, hazmat's cold path
and its warm pool, side by side in one run; throughput with concurrent callers against the
engine's raw create+start rate; host memory per idle pooled container.

Latency is end to end through `Sandbox.run` (validation, assessment, the run, the settings
check, the audit records). Figures are medians and p95 over `runs` calls after one untimed
call; the warm path waits (untimed) until the pool is full before each call, so each timed
call is a hit. `benchmarks/latency.py --write` puts the tables into docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import subprocess
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from hazmat._exceptions import InputError
from hazmat.cli.bench_common import PRINT_ONE, Report, hazmat_call, median, p95, wait_full
from hazmat.languages import get_language
from hazmat.policy import Policy, PoolSettings

if TYPE_CHECKING:
    from hazmat.backends.base import Spec

__all__ = ["add", "markdown", "plain_docker_run", "run_bench"]


def add(sub: Any) -> None:
    bench = sub.add_parser(
        "bench", help="latency of docker run vs the cold path vs the warm pool; throughput"
    )
    bench.add_argument("--runs", type=int, default=20, help="timed calls per row (default 20)")
    bench.add_argument(
        "--lang", action="append", help="a language (repeatable; default: every language)"
    )
    bench.add_argument(
        "--runtime",
        action="append",
        choices=["runc", "runsc"],
        help="a runtime (repeatable; default: both, if the engine has them)",
    )
    bench.add_argument(
        "--throughput-seconds",
        type=float,
        default=60.0,
        help="seconds per throughput measurement (default 60; 0 skips it)",
    )
    bench.add_argument(
        "--callers", type=int, default=4, help="concurrent callers for throughput (default 4)"
    )
    bench.add_argument("--markdown", action="store_true", help="print the tables as Markdown")
    bench.set_defaults(handler=_bench)


def _bench(args: argparse.Namespace) -> int:
    if args.runs < 2 or args.callers < 1 or args.throughput_seconds < 0:
        raise InputError("--runs must be at least 2, --callers at least 1, seconds not negative")
    languages = [get_language(name).name for name in args.lang or PRINT_ONE]
    report = run_bench(
        runs=args.runs,
        languages=languages,
        runtimes=args.runtime,
        throughput_s=args.throughput_seconds,
        callers=args.callers,
        progress=lambda line: print(line, flush=True),
    )
    if args.markdown:
        print(markdown(report, f"`hazmat bench --runs {args.runs}`"))
    return 0


def _time(
    runs: int, call: Callable[[], None], before: Callable[[], None] | None = None
) -> list[float]:
    if before:
        before()
    call()  # untimed: page cache, image layers, the first pool fill
    times = []
    for _ in range(runs):
        if before:
            before()
        started = time.perf_counter()
        call()
        times.append((time.perf_counter() - started) * 1000)
    return times


def plain_docker_run(language: str, runtime: str) -> Callable[[], None]:
    """`print(1)` through a plain `docker run` with hazmat's hardening flags, checked."""
    from hazmat.backends.docker.baseline import docker_run_command

    cmd = docker_run_command(language, runtime)
    code = PRINT_ONE[language].encode()

    def call() -> None:
        out = subprocess.run(cmd, input=code, capture_output=True, check=True).stdout
        if out.strip() != b"1":
            raise SystemExit(f"docker run {language}/{runtime} printed {out!r}")

    return call


def latency(
    report: Report,
    languages: Iterable[str],
    runtimes: Iterable[str],
    progress: Callable[[str], None],
) -> None:
    from hazmat.backends.pool.warm import PoolBackend
    from hazmat.sandbox import Sandbox, default_tier

    policy = Policy()
    languages, runtimes = list(languages), list(runtimes)
    # room for two ready containers of every row's kind: the rows before keep theirs, and a
    # pool at its cap would never fill for the next (ten languages on two runtimes are 40)
    most = 2 * len(languages) * len(runtimes)
    settings = PoolSettings(size=2, refill_concurrency=2, max_containers=max(16, most))
    pool = PoolBackend(default_tier(policy), settings)  # the tier a user's Sandbox() gets
    with Sandbox(policy, pool=False) as cold, Sandbox(policy, backend=pool) as warm:
        for runtime in runtimes:
            for language in languages:
                spec = warm.warm(language, runtime=runtime)

                def fill(s: Spec = spec) -> None:
                    wait_full(pool, s)

                rows = [
                    ("plain `docker run`", _time(report.runs, plain_docker_run(language, runtime))),
                    (
                        "hazmat cold path",
                        _time(report.runs, hazmat_call(cold, language, runtime, None)),
                    ),
                    (
                        "hazmat warm pool",
                        _time(report.runs, hazmat_call(warm, language, runtime, True), before=fill),
                    ),
                ]
                for path, times in rows:
                    report.latency.append((path, language, runtime, times))
                    progress(_row(report.latency[-1]))


def idle_memory(
    report: Report,
    languages: Iterable[str],
    runtimes: Iterable[str],
    count: int,
    progress: Callable[[str], None],
) -> None:
    """Host memory per idle pooled container of the Docker backend: its cgroup's usage plus
    its containerd shim (benchmarks/tiers.py has both tiers')."""
    from hazmat.backends.docker.baseline import footprint
    from hazmat.backends.docker.driver import DockerBackend
    from hazmat.backends.pool.warm import PoolBackend
    from hazmat.sandbox import Sandbox

    for runtime in runtimes:
        for language in languages:
            pool = PoolBackend(DockerBackend(), PoolSettings(size=count, refill_concurrency=2))
            with Sandbox(Policy(), backend=pool) as sandbox:
                spec = sandbox.warm(language, runtime=runtime)
                wait_full(pool, spec)
                time.sleep(1)
                held = [footprint(lease) for lease in pool.ready_leases(spec)]
                cgroup = [memory for memory, _ in held if memory is not None]
                shims = [shim for _, shim in held]
            cg = sum(cgroup) / len(cgroup) / 2**20 if cgroup else float("nan")
            shim = sum(shims) / len(shims) / 2**20 if shims else float("nan")
            report.idle_memory.append((language, runtime, cg, shim))
            progress(f"idle {language}/{runtime}: cgroup {cg:.1f} MiB, shim {shim:.1f} MiB")


def _row(row: tuple[str, str, str, list[float]]) -> str:
    path, language, runtime, times = row
    return (
        f"| {path} | {language} | {runtime} | {median(times):.1f} | {p95(times):.1f} | "
        f"{min(times):.1f} |"
    )


def run_bench(
    runs: int = 20,
    languages: Iterable[str] = tuple(PRINT_ONE),
    runtimes: Iterable[str] | None = None,
    throughput_s: float = 60.0,
    callers: int = 4,
    progress: Callable[[str], None] = print,
) -> Report:
    """Measure everything `hazmat bench` reports."""
    from hazmat.backends.container.engine import Engine

    available = Engine().info().runtimes
    chosen = [r for r in (runtimes or ("runc", "runsc")) if r in available]
    report = Report(runs)
    latency(report, list(languages), chosen, progress)
    if throughput_s > 0:
        from hazmat.cli.bench_throughput import throughput

        throughput(report, throughput_s, callers, progress)
    idle_memory(report, ["python", "javascript"], chosen, 4, progress)
    return report


def markdown(report: Report, header: str) -> str:
    lines = [
        header,
        "",
        "| path | language | runtime | median ms | p95 ms | min ms |",
        "|---|---|---|---:|---:|---:|",
        *(_row(r) for r in report.latency),
        "",
        *_ratios(report),
    ]
    if report.throughput:
        lines += _throughput_lines(report)
    if report.idle_memory:
        lines += [
            "",
            "Host memory per idle pooled container (mean of 4; the container's cgroup, then "
            "the RSS of its containerd shim):",
            "",
            "| language | runtime | cgroup MiB | shim MiB |",
            "|---|---|---:|---:|",
            *(
                f"| {lang} | {rt} | {cg:.1f} | {shim:.1f} |"
                for lang, rt, cg, shim in report.idle_memory
            ),
        ]
    return "\n".join(lines)


def _throughput_lines(report: Report) -> list[str]:
    t = report.throughput
    return [
        "",
        f"Throughput, {t['callers']:.0f} concurrent callers, fresh container every run "
        f"(Python `print(1)`, runc); {t['rounds']:.0f} rounds alternating the three "
        f"measures, {t['seconds'] / t['rounds']:.0f} s each; medians:",
        "",
        "| measure | per second |",
        "|---|---:|",
        f"| raw create+start (engine API, no run) | {t['raw create+start per s']:.2f} |",
        f"| raw create+start+remove | {t['raw create+start+remove per s']:.2f} |",
        f"| hazmat runs through the warm pool | {t['hazmat runs per s']:.2f} |",
        "",
        f"hazmat / raw create+start: **{t['ratio to raw create+start']:.0%}** (per round: "
        f"{', '.join(f'{r:.0%}' for r in report.throughput_ratios)}); hazmat / raw "
        f"create+start+remove: {t['ratio to raw create+start+remove']:.0%}; pool hit rate "
        f"{t['pool hit rate']:.0%}.",
    ]


def _ratios(report: Report) -> list[str]:
    by = {(p, lang, rt): median(t) for p, lang, rt, t in report.latency}
    out = []
    for (path, lang, rt), warm in by.items():
        if path != "hazmat warm pool":
            continue
        plain = by.get(("plain `docker run`", lang, rt))
        cold = by.get(("hazmat cold path", lang, rt))
        if plain and cold:
            out.append(
                f"- {lang}/{rt}: warm pool {warm:.1f} ms; `docker run` ({plain:.0f} ms) takes "
                f"{plain / warm:.1f}× as long, the cold path ({cold:.0f} ms) {cold / warm:.1f}×."
            )
    return out
