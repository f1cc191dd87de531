"""`hazmat bench`: latency of a trivial program through plain `docker run`, hazmat's cold path
and its warm pool, side by side in one run; throughput with concurrent callers against the
engine's raw create+start rate; host memory per idle pooled container.

Latency is end to end through `Sandbox.run` (validation, assessment, the run, the settings
check, the audit records). Figures are medians and p95 over `runs` calls after one untimed
call; the warm path waits (untimed) until the pool is full before each call, so each timed
call is a hit. `benchmarks/latency.py --write` puts the tables into docs/benchmarks.md.
"""

from __future__ import annotations

import statistics
import subprocess
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from hazmat.backends.base import Spec
from hazmat.backends.docker import DockerBackend, Started
from hazmat.backends.engine import Engine
from hazmat.backends.pool import PoolBackend
from hazmat.languages import get_language
from hazmat.models import Outcome
from hazmat.policy import Policy, PoolSettings
from hazmat.sandbox import Sandbox

__all__ = ["PRINT_ONE", "Report", "run_bench"]

PRINT_ONE = {
    "python": "print(1)",
    "javascript": "console.log(1)",
    "typescript": "const one: number = 1;\nconsole.log(one);",
    "go": 'package main\n\nimport "fmt"\n\nfunc main() { fmt.Println(1) }\n',
}


@dataclass
class Report:
    """What one bench run measured (milliseconds unless the name says otherwise)."""

    runs: int
    latency: list[tuple[str, str, str, list[float]]] = field(default_factory=list)
    throughput: dict[str, float] = field(default_factory=dict)
    throughput_ratios: list[float] = field(default_factory=list)  # hazmat / raw, per round
    idle_memory: list[tuple[str, str, float, float]] = field(default_factory=list)


def median(values: list[float]) -> float:
    return statistics.median(values)


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1] if len(values) >= 2 else values[0]


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


def _docker_run(language: str, runtime: str) -> Callable[[], None]:
    """`docker run` with the same hardening flags; the program goes in on stdin."""
    lang = get_language(language)
    build = f"({lang.build}) && " if lang.build else ""  # a subshell: a build may `exec`
    prepare = f"(cd /tmp && {lang.prepare}); " if lang.prepare else ""  # as the pool does
    out_dir = "mkdir -p /tmp/.hazmat-build && "
    script = f"cat > {lang.source_name} && {prepare}{out_dir}{build}{lang.run}"
    env = [f"--env={k}={v}" for k, v in lang.env.items()]
    tmp = "exec" if lang.exec_tmp else "noexec"
    cmd = [
        "docker", "run", "--rm", "-i", f"--runtime={runtime}", "--network=none", "--read-only",
        "--cap-drop=ALL", "--security-opt=no-new-privileges", "--user=65534:65534", "--init",
        "--memory=256m", "--memory-swap=256m", "--cpus=0.5", "--log-driver=none",
        f"--tmpfs=/tmp:rw,nosuid,nodev,{tmp},size=32m",
        "--tmpfs=/work:rw,nosuid,nodev,size=32m,uid=65534,gid=65534,mode=0700",
        "--workdir=/work", "--pids-limit=128", "--env=HOME=/tmp", *env,
        lang.image, "/bin/sh", "-c", script,
    ]  # fmt: skip
    code = PRINT_ONE[language].encode()

    def call() -> None:
        out = subprocess.run(cmd, input=code, capture_output=True, check=True).stdout
        if out.strip() != b"1":
            raise SystemExit(f"docker run {language}/{runtime} printed {out!r}")

    return call


def _hazmat(
    sandbox: Sandbox, language: str, runtime: str, pooled: bool | None
) -> Callable[[], None]:
    def call() -> None:
        result = sandbox.run(PRINT_ONE[language], language, runtime=runtime)
        if result.outcome is not Outcome.OK or result.stdout.strip() != "1":
            raise SystemExit(f"{language}/{runtime} failed: {result.outcome} {result.stderr}")
        if pooled is not None and result.pooled is not pooled:
            raise SystemExit(f"{language}/{runtime}: expected pooled={pooled}, got {result.pooled}")

    return call


def latency(
    report: Report,
    languages: Iterable[str],
    runtimes: Iterable[str],
    progress: Callable[[str], None],
) -> None:
    policy = Policy()
    pool = PoolBackend(DockerBackend(), PoolSettings(size=2, refill_concurrency=2))
    with Sandbox(policy, pool=False) as cold, Sandbox(policy, backend=pool) as warm:
        for runtime in runtimes:
            for language in languages:
                spec = warm.warm(language, runtime=runtime)

                def fill(s: Spec = spec) -> None:
                    _full(pool, s)

                rows = [
                    ("plain `docker run`", _time(report.runs, _docker_run(language, runtime))),
                    (
                        "hazmat cold path",
                        _time(report.runs, _hazmat(cold, language, runtime, None)),
                    ),
                    (
                        "hazmat warm pool",
                        _time(report.runs, _hazmat(warm, language, runtime, True), before=fill),
                    ),
                ]
                for path, times in rows:
                    report.latency.append((path, language, runtime, times))
                    progress(_row(report.latency[-1]))


def _full(pool: PoolBackend[Started], spec: Spec) -> None:
    if not pool.wait_ready(spec, pool.settings.size):
        raise SystemExit(f"the pool did not fill: {pool.stats.last_error}")


def idle_memory(
    report: Report,
    languages: Iterable[str],
    runtimes: Iterable[str],
    count: int,
    progress: Callable[[str], None],
) -> None:
    """Host memory per idle pooled container: its cgroup's usage plus its containerd shim."""
    for runtime in runtimes:
        for language in languages:
            pool = PoolBackend(DockerBackend(), PoolSettings(size=count, refill_concurrency=2))
            with Sandbox(Policy(), backend=pool) as sandbox:
                spec = sandbox.warm(language, runtime=runtime)
                _full(pool, spec)
                time.sleep(1)
                held = pool.ready_leases(spec)
                cgroup = [_usage(s.cgroup.memory) for s in held if s.cgroup]
                shims = [_shim_rss(s.cid) for s in held]
            cg = sum(cgroup) / len(cgroup) / 2**20 if cgroup else float("nan")
            shim = sum(shims) / len(shims) / 2**20 if shims else float("nan")
            report.idle_memory.append((language, runtime, cg, shim))
            progress(f"idle {language}/{runtime}: cgroup {cg:.1f} MiB, shim {shim:.1f} MiB")


def _usage(memory: Path) -> int:
    for name in ("memory.usage_in_bytes", "memory.current"):
        path = memory / name
        if path.exists():
            return int(path.read_text())
    return 0


def _shim_rss(cid: str) -> int:
    """RSS of the containerd shim that serves `cid` (one per container on engine 20.10)."""
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes()
            if b"containerd-shim" in cmdline and cid.encode() in cmdline:
                for line in (proc / "status").read_text().splitlines():
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1]) * 1024
        except OSError:
            continue
    return 0


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
    available = Engine().info().runtimes
    chosen = [r for r in (runtimes or ("runc", "runsc")) if r in available]
    report = Report(runs)
    latency(report, list(languages), chosen, progress)
    if throughput_s > 0:
        from hazmat.bench_throughput import throughput

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
    t = report.throughput
    if t:
        lines += [
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
