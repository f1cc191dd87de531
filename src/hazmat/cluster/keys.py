"""The names hazmat uses in Redis, and the Dramatiq broker both sides build from one URL.

    hazmat:workers                  set of worker names that have announced themselves
    hazmat:worker:<name>            hash: slots, busy, epoch, languages, runtimes, warm, seen,
                                    sessions (open or opening there), placing (sessions
                                    placed there, their opening not yet taken); expires: the
                                    worker's heartbeat
    hazmat:run:<id>.<n>:events      stream: attempt n's output chunks, then its result (a
                                    session's call is a run of one attempt here too)
    hazmat:run:<id>.<n>:taken       the token of the worker process that took attempt n (a
                                    later delivery finds it: the broker gave the run back)
    hazmat:run:<id>.<n>:cancel      set when the caller has gone or cancelled
    hazmat:run:<id>.<n>:answered    set once attempt n has its answer (a result, or "lost"): a
                                    redelivery of an answered attempt is not executed, and an
                                    attempt no worker took in time is never taken after
    hazmat:checkpoints              stream: the workers' signed audit checkpoints, for the
                                    service to anchor (cluster/anchors.py)
    hazmat:audit-key:<name>         a worker's audit verifier key
    hazmat:paused:<id>              hash: a paused session's sealed parts (json, tar, key);
                                    expires with the policy's keep_paused_s (cluster/paused.py)
    hazmat:paused:<id>:claim        held by the service resuming it (a token, expiring)
    hazmat.<name>                   the Dramatiq queue of one worker

Every Redis call of the cluster waits out a short outage (a restart, a partition that heals):
`patiently` retries for `REDIS_GRACE_S` before giving up with `InfraError`. The cluster's Redis
must keep what it is told across a restart (appendonly, docs/scale.md), or queued runs are lost.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from importlib import resources
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from dramatiq.brokers.redis import RedisBroker

__all__ = [
    "ACTOR",
    "CHECKPOINTS",
    "GRADE_ACTOR",
    "HEARTBEAT_MS",
    "REDIS_GRACE_S",
    "RUN_TTL_S",
    "SESSION_ACTOR",
    "attempt_id",
    "audit_key",
    "broker",
    "claim",
    "give_up",
    "lua",
    "lua_source",
    "patiently",
    "paused_key",
    "queue_of",
    "reachable",
    "run_key",
    "take",
    "worker_key",
]

T = TypeVar("T")

ACTOR = "hazmat_run"
GRADE_ACTOR = "hazmat_grade"  # one task of a batch, on the same queue (server/batches.py)
SESSION_ACTOR = "hazmat_session"  # one call of a session placed there (cluster/remote_sessions.py)
# A worker not heard from for this long is dead: the broker gives its unacknowledged runs back
# to its queue, and placement skips it. Measured: redelivery 5.4 s after a SIGKILL at 5000 ms.
HEARTBEAT_MS = 5000
RUN_TTL_S = 3600  # how long a run's stream and counters outlive it
WORKERS = "hazmat:workers"
CHECKPOINTS = "hazmat:checkpoints"
REDIS_GRACE_S = 30.0  # a Redis away for longer than this fails the calls that need it
SOCKET_TIMEOUT_S = 10.0  # a partition shows as a timeout, never as a call blocked for ever


def attempt_id(run_id: str, attempt: int) -> str:
    return f"{run_id}.{attempt}"


def worker_key(name: str) -> str:
    return f"hazmat:worker:{name}"


def run_key(attempt_id: str, part: str) -> str:
    return f"hazmat:run:{attempt_id}:{part}"


def paused_key(session_id: str, part: str = "") -> str:
    return f"hazmat:paused:{session_id}" + (f":{part}" if part else "")


def audit_key(worker: str) -> str:
    return f"hazmat:audit-key:{worker}"


def patiently(call: Callable[[], T], grace_s: float = REDIS_GRACE_S) -> T:
    """`call()`, retried while Redis does not answer (a restart, a partition), for `grace_s`."""
    import redis

    from hazmat._exceptions import InfraError

    deadline = time.monotonic() + grace_s
    while True:
        try:
            return call()
        except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError) as exc:
            if time.monotonic() >= deadline:
                raise InfraError(
                    f"the cluster's Redis has not answered for {grace_s:g} s: {exc}"
                ) from None
            time.sleep(0.25)  # back off: Redis is restarting or out of reach


def lua_source(name: str) -> str:
    """A Lua script of the cluster's, as Redis runs it (cluster/lua/<name>: real files, with
    the keys and arguments each takes said at its top)."""
    return resources.files("hazmat.cluster").joinpath("lua", name).read_text(encoding="utf-8")


_CLAIM = lua_source("claim.lua")


def claim(client: Any, key: str, token: str, *, unless: str | None = None) -> bool:
    """Set `key` to `token` unless it is set (or the key `unless` exists), in one step:
    whether this caller holds it. Safe to retry: a SET that Redis carried out but whose
    answer was lost (a restart, a cut link) is found by its token, not taken for someone
    else's (a worker then kept a run's result to itself, and the service waited for it for an
    hour)."""
    keys = [key] if unless is None else [key, unless]
    return bool(patiently(lambda: lua(client, _CLAIM, keys, [token, RUN_TTL_S])))


_TAKE = lua_source("take.lua")


def take(client: Any, aid: str, token: str) -> str:
    """A worker takes attempt `aid` before it runs it, in one step with the service's
    `give_up`, so that a run is never both given up and executed: `first` (run it),
    `answered` (answered already: skip it), `same` (this process took it already: the broker
    handed it twice; skip it silently) or `again` (a process that died took it: answer it as
    lost). `token` is "<epoch>:<nonce>", the nonce new for each delivery; a retry of this call
    after a lost answer finds its own token and is still `first`."""
    keys = [run_key(aid, "taken"), run_key(aid, "answered")]
    found = patiently(lambda: lua(client, _TAKE, keys, [token, RUN_TTL_S]))
    return found.decode() if isinstance(found, bytes) else str(found)


_SCRIPTS: dict[str, Any] = {}  # source -> redis-py's Script: the SHA, computed once


def lua(client: Any, source: str, keys: list[str], args: list[Any]) -> Any:
    """Run a Lua script the way redis-py does it (`register_script`): by its SHA (EVALSHA),
    the source sent only when Redis does not know it (the first call, or after a restart)."""
    script = _SCRIPTS.get(source)
    if script is None:
        script = _SCRIPTS[source] = client.register_script(source)
    return script(keys, args, client)


def give_up(client: Any, aid: str, mark: str) -> bool:
    """The service marks attempt `aid` answered as lost unless a worker has taken it (its
    message never reached a worker: Redis restarted as a worker's fetch ran, say); whether it
    did. A worker that finds the message later skips it (`take` says `answered`)."""
    return claim(client, run_key(aid, "answered"), mark, unless=run_key(aid, "taken"))


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
    import redis
    from dramatiq.brokers.redis import MAINTENANCE_SCALE, RedisBroker

    from hazmat._exceptions import InputError, quoted

    try:
        client = redis.Redis.from_url(
            url, socket_timeout=SOCKET_TIMEOUT_S, socket_connect_timeout=SOCKET_TIMEOUT_S
        )
        made = RedisBroker(  # type: ignore[no-untyped-call]
            client=client,
            middleware=[],
            heartbeat_timeout=HEARTBEAT_MS,
            maintenance_chance=MAINTENANCE_SCALE,
        )
    except ValueError as exc:  # redis-py's words on a URL it cannot use
        raise InputError(f"--redis {quoted(url)}: {exc}") from None
    return reachable(made, url)
