"""`hazmat bench`'s throughput: runs per second through the warm pool with concurrent callers,
against the engine's own rate of creating, starting (and removing) the same containers."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from hazmat.cli.bench_common import Report, hazmat_call, median, wait_full
from hazmat.policy import Policy, PoolSettings, Runtime

if TYPE_CHECKING:
    from hazmat.backends.docker.baseline import RawStarts
    from hazmat.sandbox import Sandbox

__all__ = ["throughput"]


def throughput(
    report: Report,
    seconds: float,
    callers: int,
    progress: Callable[[str], None],
    rounds: int = 3,
) -> None:
    """Runs per second with `callers` threads, fresh container every run, against the engine's
    raw create+start (and create+start+remove) rate with as many threads. The three are
    measured in `rounds` alternating rounds of `seconds / rounds` each, so that the engine's
    drift over minutes hits all three alike; the ratio is given per round and as the median."""
    from hazmat.backends.base import Spec
    from hazmat.backends.container.engine import Engine
    from hazmat.backends.docker.baseline import RawStarts
    from hazmat.backends.docker.driver import DockerBackend
    from hazmat.backends.pool.warm import PoolBackend
    from hazmat.languages import LANGUAGES
    from hazmat.sandbox import Sandbox

    engine = Engine()
    limits = Policy().settings("untrusted").limits
    raw = RawStarts(engine, Spec.of("python", LANGUAGES["python"].image, Runtime.RUNC, limits))
    settings = PoolSettings(size=callers, refill_concurrency=callers, max_containers=2 * callers)
    pool = PoolBackend(DockerBackend(engine), settings)
    share = seconds / rounds
    rates: dict[str, list[float]] = {"raw": [], "full": [], "hazmat": []}
    with Sandbox(Policy(), backend=pool) as sandbox:
        spec_warm = sandbox.warm("python", runtime="runc")
        for i in range(rounds):
            progress(f"throughput round {i + 1}/{rounds}: raw create+start, {share:.0f} s ...")
            rates["raw"].append(_raw(raw, share, callers, remove=False))
            progress(f"throughput round {i + 1}/{rounds}: raw create+start+remove ...")
            rates["full"].append(_raw(raw, share, callers, remove=True))
            wait_full(pool, spec_warm)
            progress(f"throughput round {i + 1}/{rounds}: hazmat through the pool ...")
            rates["hazmat"].append(_hammer(_call(sandbox), share, callers))
            progress(_round_line(i, rates))
        hit_rate = sandbox.metrics().pool_hit_rate
    _record(report, rates, hit_rate)
    report.throughput.update({"seconds": seconds, "callers": callers, "rounds": rounds})
    progress(_summary_line(report))


def _call(sandbox: Sandbox) -> Callable[[], None]:
    return hazmat_call(sandbox, "python", "runc", None)


def _round_line(i: int, rates: dict[str, list[float]]) -> str:
    return (
        f"  round {i + 1}: raw {rates['raw'][-1]:.2f}/s, with remove "
        f"{rates['full'][-1]:.2f}/s, hazmat {rates['hazmat'][-1]:.2f}/s "
        f"({rates['hazmat'][-1] / rates['raw'][-1]:.0%} of raw create+start)"
    )


def _record(report: Report, rates: dict[str, list[float]], hit_rate: float) -> None:
    ratios = [h / r for h, r in zip(rates["hazmat"], rates["raw"], strict=True)]
    ratios_full = [h / f for h, f in zip(rates["hazmat"], rates["full"], strict=True)]
    t = report.throughput
    t["raw create+start per s"] = median(rates["raw"])
    t["raw create+start+remove per s"] = median(rates["full"])
    t["hazmat runs per s"] = median(rates["hazmat"])
    t["pool hit rate"] = hit_rate
    t["ratio to raw create+start"] = median(ratios)
    t["ratio to raw create+start+remove"] = median(ratios_full)
    report.throughput_ratios = ratios


def _summary_line(report: Report) -> str:
    t = report.throughput
    return (
        f"hazmat through the pool: median {t['hazmat runs per s']:.2f}/s, "
        f"{t['ratio to raw create+start']:.0%} of raw create+start "
        f"({', '.join(f'{r:.0%}' for r in report.throughput_ratios)} per round), "
        f"{t['ratio to raw create+start+remove']:.0%} of create+start+remove; "
        f"pool hits {t['pool hit rate']:.0%}"
    )


def _raw(raw: RawStarts, seconds: float, callers: int, remove: bool) -> float:
    """The engine's own rate of create+start (+remove) of hardened containers, no run. The
    containers are removed afterwards, also when interrupted."""
    with raw.calls(remove) as once:
        return _hammer(once, seconds, callers)


def _hammer(call: Callable[[], None], seconds: float, callers: int) -> float:
    """Calls per second from `callers` threads for `seconds`. Ctrl-C stops every thread before
    it is passed on, so the caller's cleanup runs with nothing still starting containers."""
    count = [0] * callers
    stop = threading.Event()
    errors: list[BaseException] = []

    def worker(i: int) -> None:
        try:
            while not stop.is_set():
                call()
                count[i] += 1
        except BaseException as exc:
            errors.append(exc)
            stop.set()

    started = time.monotonic()
    threads: list[threading.Thread] = []
    try:  # from the first thread on: an interrupt while starting them must stop them too
        for i in range(callers):
            threads.append(threading.Thread(target=worker, args=(i,), daemon=True))
            threads[-1].start()
        stop.wait(seconds)
    finally:
        stop.set()
        # An interrupt inside start() can leave a listed thread not started yet: it sees stop
        # set before its first call. One that is making a call has an ident: wait for it.
        for t in threads:
            if t.ident is not None:
                t.join()
    if errors:
        raise SystemExit(f"a caller failed: {errors[0]}")
    return sum(count) / (time.monotonic() - started)
