"""`hazmat bench`'s throughput: runs per second through the warm pool with concurrent callers,
against the engine's own rate of creating, starting (and removing) the same containers."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from typing import Any

import docker.errors

from hazmat.backends.base import Spec
from hazmat.backends.docker import DockerBackend, container_config
from hazmat.backends.engine import Engine
from hazmat.backends.pool import PoolBackend
from hazmat.backends.uids import UID_BASE
from hazmat.bench import Report, _full, _hazmat, median
from hazmat.languages import LANGUAGES
from hazmat.policy import Policy, PoolSettings, Runtime
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
    engine = Engine()
    backend = DockerBackend(engine)
    limits = Policy().settings("untrusted").limits
    spec = Spec.of("python", LANGUAGES["python"].image, Runtime.RUNC, limits)
    config = container_config(spec, {}, engine.api.api_version, backend.seccomp, UID_BASE)
    config["labels"] = backend._labels(spec, time.time() + 3600, False)
    settings = PoolSettings(size=callers, refill_concurrency=callers, max_containers=2 * callers)
    pool = PoolBackend(DockerBackend(engine), settings)
    share = seconds / rounds
    rates: dict[str, list[float]] = {"raw": [], "full": [], "hazmat": []}
    with Sandbox(Policy(), backend=pool) as sandbox:
        spec_warm = sandbox.warm("python", runtime="runc")
        for i in range(rounds):
            progress(f"throughput round {i + 1}/{rounds}: raw create+start, {share:.0f} s ...")
            rates["raw"].append(_raw(engine, config, share, callers, remove=False))
            progress(f"throughput round {i + 1}/{rounds}: raw create+start+remove ...")
            rates["full"].append(_raw(engine, config, share, callers, remove=True))
            _full(pool, spec_warm)
            progress(f"throughput round {i + 1}/{rounds}: hazmat through the pool ...")
            call = _hazmat(sandbox, "python", "runc", None)
            rates["hazmat"].append(_hammer(call, share, callers))
            progress(
                f"  round {i + 1}: raw {rates['raw'][-1]:.2f}/s, with remove "
                f"{rates['full'][-1]:.2f}/s, hazmat {rates['hazmat'][-1]:.2f}/s "
                f"({rates['hazmat'][-1] / rates['raw'][-1]:.0%} of raw create+start)"
            )
        stats = sandbox.metrics()
    ratios = [h / r for h, r in zip(rates["hazmat"], rates["raw"], strict=True)]
    ratios_full = [h / f for h, f in zip(rates["hazmat"], rates["full"], strict=True)]
    t = report.throughput
    t["raw create+start per s"] = median(rates["raw"])
    t["raw create+start+remove per s"] = median(rates["full"])
    t["hazmat runs per s"] = median(rates["hazmat"])
    t["pool hit rate"] = stats.pool_hit_rate
    t["ratio to raw create+start"] = median(ratios)
    t["ratio to raw create+start+remove"] = median(ratios_full)
    report.throughput_ratios = ratios
    t["seconds"] = seconds
    t["callers"] = callers
    t["rounds"] = rounds
    progress(
        f"hazmat through the pool: median {t['hazmat runs per s']:.2f}/s, "
        f"{t['ratio to raw create+start']:.0%} of raw create+start "
        f"({', '.join(f'{r:.0%}' for r in ratios)} per round), "
        f"{t['ratio to raw create+start+remove']:.0%} of create+start+remove; "
        f"pool hits {stats.pool_hit_rate:.0%}"
    )


def _raw(
    engine: Engine, config: dict[str, Any], seconds: float, callers: int, remove: bool
) -> float:
    """The engine's own rate of create+start (+remove) of hardened containers, no run. The
    containers are removed afterwards, also when interrupted."""
    made: list[str] = []
    lock = threading.Lock()

    def once() -> None:
        cid = engine.api.create_container(**config)["Id"]
        with lock:
            made.append(cid)
        engine.api.start(cid)
        if remove:
            engine.api.remove_container(cid, force=True, v=True)
            with lock:
                made.remove(cid)

    try:
        return _hammer(once, seconds, callers)
    finally:
        for cid in made:
            with contextlib.suppress(docker.errors.APIError):
                engine.api.remove_container(cid, force=True, v=True)


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
        except BaseException as exc:  # noqa: B036 - reported below
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
