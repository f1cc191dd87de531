"""`hazmat worker`: takes runs for one Docker engine from Redis and runs them through the same
pipeline, with its own warm pool and its own audit log (docs/scale.md).

A run arrives as a Dramatiq message on the worker's own queue (the service chose the worker).
A run already answered (its result written, or the service gave it up as lost when its worker
died) is not executed again. Otherwise the run's attempt counter goes up before the program
starts: a first attempt runs; a later one (the broker gave back the run of a worker that died,
and nobody answered it) is answered as lost, so that no run executes twice. The output goes to
the run's Redis stream as it comes, the result last; a cancel key set by the service stops the
run. The worker says every second, in its catalogue entry, how many slots it has.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from typing import Any

from hazmat.cluster.keys import (
    ACTOR,
    HEARTBEAT_MS,
    RUN_TTL_S,
    WORKERS,
    broker,
    queue_of,
    run_key,
    worker_key,
)
from hazmat.cluster.wire import request_from_wire
from hazmat.languages import LANGUAGES
from hazmat.sandbox import Sandbox
from hazmat.server.sse import result_body
from hazmat.watch import Watch

__all__ = ["ClusterWorker"]

log = logging.getLogger(__name__)

CANCEL_POLL_S = 0.2


class ClusterWorker:
    """One worker: `start()` announces it and starts taking runs, `stop()` ends both."""

    def __init__(self, url: str, name: str, slots: int, sandbox: Sandbox) -> None:
        import dramatiq

        self.name = name
        self.slots = slots
        self.sandbox = sandbox
        self.broker = broker(url)
        self.redis = self.broker.client
        self._stop = threading.Event()
        self.epoch = uuid.uuid4().hex  # this process: only its own placements free its slots
        declare = dramatiq.actor(actor_name=ACTOR, queue_name=queue_of(name), broker=self.broker)
        self.actor = declare(self._run)
        self._worker = dramatiq.Worker(
            self.broker, queues={queue_of(name)}, worker_threads=slots, worker_timeout=200
        )
        self._beat = threading.Thread(target=self._heartbeat, name="hazmat-beat", daemon=True)

    def start(self) -> None:
        self.redis.sadd(WORKERS, self.name)
        self._announce()
        self._beat.start()
        self._worker.start()

    def stop(self) -> None:
        """Stop taking runs; those running finish (their messages are then acknowledged)."""
        self._stop.set()
        self._worker.stop(timeout=600_000)
        self.redis.delete(worker_key(self.name))

    def _heartbeat(self) -> None:
        while not self._stop.wait(1.0):
            try:
                self._announce()
            except Exception:  # Redis away: the next beat tries again
                log.warning("worker %s: heartbeat failed", self.name, exc_info=True)

    def _announce(self) -> None:
        key = worker_key(self.name)
        self.redis.hset(
            key,
            mapping={
                "slots": self.slots,
                "epoch": self.epoch,
                "languages": ",".join(sorted(LANGUAGES)),
                "seen": time.time(),
            },
        )
        self.redis.hsetnx(key, "busy", 0)
        self.redis.pexpire(key, HEARTBEAT_MS)

    def _run(self, run_id: str, request: dict[str, Any], epoch: str) -> None:
        """The actor: one run, its output and result into the run's stream."""
        events = run_key(run_id, "events")
        try:
            if self.redis.exists(run_key(run_id, "answered")):
                log.warning("worker %s: run %s already answered; not run again", self.name, run_id)
                self._send(events, "skipped", {"worker": self.name, "why": "already answered"})
                return
            attempt = int(self.redis.incr(run_key(run_id, "attempts")))
            self.redis.expire(run_key(run_id, "attempts"), RUN_TTL_S)
            if attempt > 1:  # started before, by a worker that died, and nobody answered it
                self.redis.set(run_key(run_id, "answered"), "lost", nx=True, ex=RUN_TTL_S)
                self._send(events, "lost", {"attempt": attempt, "worker": self.name})
                return
            watch = Watch(lambda stream, data: self._send(events, stream, data))
            done = threading.Event()
            poller = threading.Thread(target=self._watch_cancel, args=(run_id, watch, done))
            poller.start()
            try:
                prepared = request_from_wire(request)
                prepared = _with_attempt(prepared, attempt, self.name)
                result = self.sandbox.execute(prepared, on_output=watch)
            finally:
                done.set()
                poller.join()
            self.redis.set(run_key(run_id, "answered"), "result", nx=True, ex=RUN_TTL_S)
            self._send(events, "result", result_body(result, exact=True))
        except Exception as exc:  # the run gets an answer whatever went wrong here
            log.exception("worker %s: run %s failed", self.name, run_id)
            self._send(events, "error", {"type": type(exc).__name__, "message": str(exc)})
        finally:
            self.redis.expire(events, RUN_TTL_S)
            if epoch == self.epoch:  # a run placed on a dead process of this name took no slot
                self.redis.hincrby(worker_key(self.name), "busy", -1)

    def _send(self, events: str, kind: str, data: bytes | dict[str, Any]) -> None:
        body = data if isinstance(data, bytes) else json.dumps(data).encode()
        self.redis.xadd(events, {"kind": kind, "data": body})

    def _watch_cancel(self, run_id: str, watch: Watch, done: threading.Event) -> None:
        while not done.wait(CANCEL_POLL_S):
            if self.redis.exists(run_key(run_id, "cancel")):
                watch.cancel("the caller cancelled it (through the service)")
                return


def _with_attempt(request: Any, attempt: int, worker: str) -> Any:
    """The run's audit records name the worker and the attempt (in the caller field, which
    every record carries)."""
    import dataclasses

    caller = f"{request.caller or 'service'} worker:{worker} attempt:{attempt}"
    return dataclasses.replace(request, caller=caller)
