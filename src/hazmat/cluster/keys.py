"""The names hazmat uses in Redis, and the Dramatiq broker both sides build from one URL.

    hazmat:workers                  set of worker names that have announced themselves
    hazmat:worker:<name>            hash: slots, busy, languages, runtimes, seen (expires)
    hazmat:run:<id>:events          stream: the run's output chunks, then its result
    hazmat:run:<id>:attempts        counter: executions started (a redelivery makes it 2)
    hazmat:run:<id>:cancel          set when the caller has gone or cancelled
    hazmat:run:<id>:answered        set once the run has its answer (a result, or "lost"): a
                                    redelivery of an answered run is not executed
    hazmat.<name>                   the Dramatiq queue of one worker
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dramatiq.brokers.redis import RedisBroker

__all__ = [
    "ACTOR",
    "HEARTBEAT_MS",
    "RUN_TTL_S",
    "broker",
    "queue_of",
    "reachable",
    "run_key",
    "worker_key",
]

ACTOR = "hazmat_run"
# A worker not heard from for this long is dead: the broker gives its unacknowledged runs back
# to its queue, and placement skips it. Measured: redelivery 5.4 s after a SIGKILL at 5000 ms.
HEARTBEAT_MS = 5000
RUN_TTL_S = 3600  # how long a run's stream and counters outlive it
WORKERS = "hazmat:workers"


def worker_key(name: str) -> str:
    return f"hazmat:worker:{name}"


def run_key(run_id: str, part: str) -> str:
    return f"hazmat:run:{run_id}:{part}"


def queue_of(worker: str) -> str:
    return f"hazmat.{worker}"


def reachable(found: RedisBroker, url: str) -> RedisBroker:
    """`found`, once its Redis has answered a ping; `InfraError` naming the URL if not."""
    import redis

    from hazmat._exceptions import InfraError

    try:
        found.client.ping()
    except (redis.exceptions.RedisError, OSError) as exc:
        raise InfraError(f"cannot reach the cluster's Redis at {url}: {exc}") from None
    return found


def broker(url: str) -> RedisBroker:
    """Dramatiq's Redis broker with the heartbeat above and maintenance on every fetch (the
    defaults, 60 s and one fetch in a thousand, left a dead worker's run unseen for minutes),
    and none of Dramatiq's default middleware: no retries on an exception (a run's failures are
    results; a redelivered run is handled by its attempt count), no time limit raised into the
    run's thread (the host enforces the run's own limits), no age limit."""
    from dramatiq.brokers.redis import MAINTENANCE_SCALE, RedisBroker

    from hazmat._exceptions import InputError

    try:
        made = RedisBroker(  # type: ignore[no-untyped-call]
            url=url,
            middleware=[],
            heartbeat_timeout=HEARTBEAT_MS,
            maintenance_chance=MAINTENANCE_SCALE,
        )
    except ValueError as exc:  # redis-py's words on a URL it cannot use
        raise InputError(f"--redis {url!r}: {exc}") from None
    return reachable(made, url)
