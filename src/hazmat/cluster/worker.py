"""`hazmat worker`: takes runs for one Docker engine from Redis and runs them through the same
pipeline, with its own warm pool and its own audit log (docs/scale.md).

A run arrives as a Dramatiq message on the worker's own queue (the service chose the worker),
naming the run and the service's attempt at it. An attempt already answered (its result
written, or the service gave it up as lost: its worker died, or no worker took it in time) is
not executed. Otherwise the worker takes it, in one step that the service's giving up cannot
interleave with, before the program starts: the first taker runs it; a later delivery (the
broker gave back the run of a worker that died, and nobody answered it) is answered as lost,
so that the broker never makes a run execute twice. The output goes to the
attempt's Redis stream as it comes, the result last; a cancel key set by the service stops the
run. Every audit record of the run names the run, the worker and the attempt.

Every second the worker says in its catalogue entry how many slots it has (none while its
Docker engine does not answer), which runtimes, which warm containers and how many sessions
are open on it, and publishes its audit log's newest signed checkpoint for the service to
anchor. The sessions a service places here get their calls as messages too
(worker_sessions.py); each call holds a slot while it runs, like a run.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from hazmat._exceptions import HazmatError
from hazmat.audit.layout import published
from hazmat.cluster.keys import (
    ACTOR,
    CHECKPOINTS,
    GRADE_ACTOR,
    HEARTBEAT_MS,
    RUN_TTL_S,
    SESSION_ACTOR,
    WORKERS,
    attempt_id,
    audit_key,
    broker,
    claim,
    patiently,
    queue_of,
    run_key,
    take,
    worker_key,
)
from hazmat.cluster.paused import RedisShelf
from hazmat.cluster.worker_sessions import SessionCalls
from hazmat.grade.grader import Grader
from hazmat.grade.tasks import parse_task
from hazmat.languages import LANGUAGES
from hazmat.models import ExecutionResult, Outcome
from hazmat.sandbox import Sandbox
from hazmat.service.wire import request_from_wire, result_to_wire
from hazmat.watch import Watch

__all__ = ["ClusterWorker"]

log = logging.getLogger(__name__)

T = TypeVar("T")
CANCEL_POLL_S = 0.2
CHECKPOINTS_KEPT = 100_000  # entries of the checkpoint stream (the service copies them out)


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
        self._lock = threading.Lock()
        self._running = 0  # runs this process is executing (its busy count after a Redis loss)
        self._published: str | None = None
        self._down_seen: float | None = None  # when the engine was last seen not answering
        self.epoch = uuid.uuid4().hex  # this process: only its own placements free its slots
        # paused sessions on the cluster's shelf, as the services keep theirs: any worker (or
        # service) of the cluster resumes them
        sandbox.session_store = sandbox.session_store.on(RedisShelf(self.redis))
        self.sessions = SessionCalls(sandbox)
        declare = dramatiq.actor(actor_name=ACTOR, queue_name=queue_of(name), broker=self.broker)
        self.actor = declare(self._run)
        grading = dramatiq.actor(
            actor_name=GRADE_ACTOR, queue_name=queue_of(name), broker=self.broker
        )
        self.grading = grading(self._grade)
        session_calls = dramatiq.actor(
            actor_name=SESSION_ACTOR, queue_name=queue_of(name), broker=self.broker
        )
        self.session_calls = session_calls(self._session_call)
        self._worker = dramatiq.Worker(
            self.broker, queues={queue_of(name)}, worker_threads=slots, worker_timeout=200
        )
        self._beat = threading.Thread(target=self._heartbeat, name="hazmat-beat", daemon=True)

    def start(self) -> None:
        self._announce(first=True)
        self._beat.start()
        self._worker.start()

    def stop(self) -> None:
        """Stop taking runs; those running finish (their messages are then acknowledged)."""
        self._stop.set()
        self._worker.stop(timeout=600_000)
        self.sandbox.audit.checkpoint()  # the log's last state, signed, for the service
        self._publish_checkpoint()
        self.redis.delete(worker_key(self.name))

    def _heartbeat(self) -> None:
        while not self._stop.wait(1.0):
            try:
                self._announce()
                self._publish_checkpoint()
            except Exception:  # Redis away: the next beat tries again
                log.warning("worker %s: heartbeat failed", self.name, exc_info=True)

    def _announce(self, first: bool = False) -> None:
        """The catalogue entry. The `first` of a process starts its counts afresh: a process
        of this name killed moments ago (its entry not yet expired) left its busy slots and
        placed sessions there, and nothing of it will give them back."""
        runtimes = self._runtimes()  # empty while the engine does not answer
        warm = self.sandbox.backend.ready_kinds()
        key = worker_key(self.name)
        with self._lock:
            running = self._running
        with self.sessions.counted() as sessions:
            pipe = self.redis.pipeline()
            pipe.sadd(WORKERS, self.name)
            pipe.hset(
                key,
                mapping={
                    "slots": self.slots if runtimes else 0,
                    "epoch": self.epoch,
                    "languages": ",".join(sorted(LANGUAGES)),
                    "runtimes": ",".join(sorted(runtimes)),
                    "warm": ",".join(sorted(f"{lang}/{rt}" for lang, rt in warm)),
                    "engine": "ok" if runtimes else "down",
                    "sessions": sessions,
                    "seen": time.time(),
                },
            )
            if first:
                pipe.hset(key, mapping={"busy": 0, "placing": 0})
            else:
                pipe.hsetnx(key, "busy", running)  # the entry expired (Redis was away)
            pipe.pexpire(key, HEARTBEAT_MS)
            pipe.execute()

    def _runtimes(self) -> set[str]:
        found = self.sandbox.backend.runtimes()
        if not found:
            self._down_seen = time.time()
        elif self._down_seen is not None:
            # back: remove this process's containers that died with the engine (the pool could
            # not remove them meanwhile); only those made before it was last seen down
            removed = self.sandbox.backend.remove_leftovers(self._down_seen)
            log.warning(
                "worker %s: its engine is back; %d dead container(s) removed", self.name, removed
            )
            self._down_seen = None
        return found

    def _publish_checkpoint(self) -> None:
        """The audit log's newest signed checkpoint, once, into the cluster's stream."""
        found = published(Path(self.sandbox.audit.dir))
        if found is None:
            return  # no checkpoint yet
        note, pubkey = found
        if note == self._published:
            return
        pipe = self.redis.pipeline()
        pipe.set(audit_key(self.name), pubkey)
        pipe.xadd(CHECKPOINTS, {"worker": self.name, "note": note}, maxlen=CHECKPOINTS_KEPT)
        pipe.execute()
        self._published = note

    def _run(self, run_id: str, attempt: int, request: dict[str, Any], epoch: str) -> None:
        """The actor: one attempt at a run, its output and result into the attempt's stream."""
        self._answer(
            run_id, attempt, epoch, lambda aid: self._attempt(run_id, attempt, aid, request)
        )

    def _grade(self, run_id: str, attempt: int, body: dict[str, Any], epoch: str) -> None:
        """The grading actor: one attempt at one task of a batch (server/batches.py), graded
        here as `hazmat batch` grades it; its result line into the attempt's stream."""

        def grade(aid: str) -> None:
            token = self._take(aid)
            if token is None:
                return
            task = parse_task(body.get("task"), "task")
            options = {
                **body.get("options", {}),
                "origin": {"run": run_id, "worker": self.name, "attempt": attempt},
            }
            line = Grader(self.sandbox, **options).grade(task).to_dict()
            self._deliver(aid, token, {**line, "worker": self.name})

        self._answer(run_id, attempt, epoch, grade)

    def _session_call(self, call_id: str, attempt: int, body: dict[str, Any], epoch: str) -> None:
        """The session actor: one call of a session placed here (worker_sessions.py); output
        into the call's stream as it comes, its answer last."""

        def call(aid: str) -> None:
            token = self._take(aid)
            if token is None:
                return
            with self.sessions.opening(body, self._opening_taken):
                answer = self._watched(aid, lambda watch: self.sessions.answer(body, watch))
            self._deliver(aid, token, answer)

        self._answer(call_id, attempt, epoch, call)

    def _opening_taken(self) -> None:
        """A session placed here is opening now: one fewer placed, one more open or opening
        (the heartbeat then says the count; placement counts both)."""
        pipe = self.redis.pipeline()  # MULTI: both or neither
        pipe.hincrby(worker_key(self.name), "placing", -1)
        pipe.hincrby(worker_key(self.name), "sessions", 1)
        patiently(pipe.execute)

    def _answer(self, run_id: str, attempt: int, epoch: str, work: Callable[[str], None]) -> None:
        """One attempt of either actor: `work(aid)` answers it; an error is its answer
        otherwise, and the worker's slot is given back whatever happens."""
        aid = attempt_id(run_id, attempt)
        events = run_key(aid, "events")
        with self._lock:
            self._running += 1
        try:
            work(aid)
        except Exception as exc:  # the run gets an answer whatever went wrong here
            if isinstance(exc, HazmatError):  # refused or failed as hazmat says: no traceback
                log.warning("worker %s: run %s: %s", self.name, aid, exc)
            else:
                log.exception("worker %s: run %s failed", self.name, aid)
            self._send(events, "error", {"type": type(exc).__name__, "message": str(exc)})
        finally:
            patiently(lambda: self.redis.expire(events, RUN_TTL_S))
            if epoch == self.epoch:  # a run placed on a dead process of this name took no slot
                patiently(lambda: self.redis.hincrby(worker_key(self.name), "busy", -1))
            with self._lock:
                self._running -= 1

    def _take(self, aid: str) -> str | None:
        """This delivery's token if the attempt is to be executed here; None (its answer sent,
        if it needs one) if it was answered already, taken by this process already, or taken
        before by a process that died."""
        events = run_key(aid, "events")
        token = f"{self.epoch}:{uuid.uuid4().hex}"
        found = take(self.redis, aid, token)
        if found == "first":
            return token
        if found == "answered":
            log.warning("worker %s: run %s already answered; not run", self.name, aid)
            self._send(events, "skipped", {"worker": self.name, "why": "already answered"})
        elif found == "same":  # the broker handed this process the message twice
            log.warning("worker %s: run %s delivered twice; run once", self.name, aid)
        else:  # taken before by a process that died, and nobody answered it
            claim(self.redis, run_key(aid, "answered"), f"lost:{self.epoch}")
            self._send(events, "lost", {"worker": self.name, "why": "taken by a process that died"})
        return None

    def _deliver(self, aid: str, token: str, result: dict[str, Any]) -> None:
        """The attempt's result, unless the service gave it up meanwhile (audit only then)."""
        answered = run_key(aid, "answered")
        if claim(self.redis, answered, f"result:{token}"):
            self._send(run_key(aid, "events"), "result", result)
        else:  # the service gave it up meanwhile (this worker was out of reach): audit only
            log.warning("worker %s: run %s was answered as lost meanwhile", self.name, aid)

    def _watched(self, aid: str, work: Callable[[Watch], T]) -> T:
        """`work(watch)`, its output into the attempt's stream as it comes, cancelled when the
        service sets the attempt's cancel key."""
        events = run_key(aid, "events")
        watch = Watch(lambda stream, data: self._send(events, stream, data))
        done = threading.Event()
        poller = threading.Thread(target=self._watch_cancel, args=(aid, watch, done))
        poller.start()
        try:
            return work(watch)
        finally:
            watch.flush()  # every chunk in the stream before the answer
            done.set()
            poller.join()

    def _attempt(self, run_id: str, attempt: int, aid: str, request: dict[str, Any]) -> None:
        token = self._take(aid)
        if token is None:
            return

        def execute(watch: Watch) -> ExecutionResult:
            code, language, options = request_from_wire(request)
            origin = {"run": run_id, "worker": self.name, "attempt": attempt}
            prepared = self.sandbox.request(code, language, **{**options, "origin": origin})
            return self.sandbox.execute(prepared, on_output=watch)

        result = self._watched(aid, execute)
        if result.outcome is Outcome.INFRA_ERROR:
            self._announce()  # no slots while the engine does not answer: not the next beat
        self._deliver(aid, token, result_to_wire(result, exact=True))

    def _send(self, events: str, kind: str, data: bytes | dict[str, Any]) -> None:
        body = data if isinstance(data, bytes) else json.dumps(data).encode()
        patiently(lambda: self.redis.xadd(events, {"kind": kind, "data": body}))

    def _watch_cancel(self, aid: str, watch: Watch, done: threading.Event) -> None:
        while not done.wait(CANCEL_POLL_S):
            try:
                cancelled = self.redis.exists(run_key(aid, "cancel"))
            except Exception:  # Redis away for a moment: look again at the next poll
                continue
            if cancelled:
                watch.cancel("the caller cancelled it (through the service)")
                return
