"""The service's side of the cluster: place a run on a worker, send it, relay what comes back.

Placement (placement.py) takes a slot on a worker for the run, or refuses it with
`QuotaExceeded` (the service's 429), never queued. The worker gives the slot back when it has
written the result. A session's call (sessions/) goes the same way, to the worker the
session lives on, as one attempt that is never retried.

While it waits for the result, the service watches the worker's catalogue entry: if the
worker's heartbeat stops (it died, its host or its link to Redis went away) or a new process has
taken its name, the attempt is marked answered as lost. So is an attempt its worker could not
run for a fault of its own (its Docker engine stopped), and one that no worker took within
`TAKE_WAIT_S` while its worker stayed alive: its message was lost on the way (CI saw Redis
restart as a worker fetched one, and the run wait for its caller's timeout). The service marks
it in one step with the worker's taking, so a message that turns up later is skipped, never
run. Then, by the service's rule (`on_lost`): `report` answers `InfraError` (503, or an `error`
event) saying what happened; `retry` places the run again, as a new attempt, on another worker;
a streamed run whose output already reached the caller gets a `retry` event first (what came
before it is from the lost attempt). Every attempt is in the audit log of the worker that ran
it.
"""

from __future__ import annotations

import json
import logging
import secrets
import time
from collections.abc import Callable, Mapping
from typing import Any

from hazmat._exceptions import InfraError, QuotaExceeded
from hazmat.cluster.keys import (
    ACTOR,
    GRADE_ACTOR,
    RUN_TTL_S,
    SESSION_ACTOR,
    attempt_id,
    broker,
    claim,
    give_up,
    patiently,
    queue_of,
    run_key,
    worker_key,
)
from hazmat.cluster.placement import Placement, Placements
from hazmat.models import ExecutionRequest, ExecutionResult, Outcome
from hazmat.service.wire import request_to_wire, result_from_wire
from hazmat.watch import Watch

__all__ = ["ON_LOST", "Dispatcher", "Lost"]

log = logging.getLogger(__name__)

ON_LOST = ("report", "retry")
READ_BLOCK_MS = 200  # how long one read of the run's stream waits (then the cancel is looked at)
RESULT_WAIT_S = 3600.0  # a run's own limits end it long before this
# A catalogue entry missing for this long means its worker is gone. An entry expires 5 s after
# the worker's last beat; this covers the second after a Redis restart before workers re-announce.
GONE_AFTER_S = 2.0
RETRY_WAIT_S = 60.0
# A worker takes a run as soon as it has it: placement gives it a free thread. An attempt not
# taken for this long is lost (a Redis restart cost a worker's consumer 3 s to come back).
TAKE_WAIT_S = 30.0
WORKER_FAULTS = ("InfraError", "RuntimeUnavailable", "lost", "skipped")


class Lost(InfraError):
    """A session's call whose worker was lost (it died, or lost its engine) before it
    answered: the session is gone with it."""


class _Lost(Exception):
    """An attempt that ended without a result because of its worker, or with the result
    `infra_error` (its engine failed it); `shown`: output of it already reached the caller (a
    retry would show output twice)."""

    def __init__(self, message: str, shown: bool, result: ExecutionResult | None = None) -> None:
        super().__init__(message)
        self.shown = shown
        self.result = result


class Dispatcher:
    """Runs requests on the cluster's workers (blocking: call it from a worker thread).
    `on_lost`: "report" or "retry" a run whose worker died; `attempts`: at most this many;
    `take_wait_s`: how long a worker may take to take a run before it is lost."""

    def __init__(
        self,
        url: str,
        on_lost: str = "report",
        attempts: int = 3,
        take_wait_s: float = TAKE_WAIT_S,
    ) -> None:
        from dramatiq import Message

        if on_lost not in ON_LOST:
            raise ValueError(f"on_lost must be one of {', '.join(ON_LOST)}, not {on_lost!r}")
        self._message = Message
        self.on_lost = on_lost
        self.attempts = attempts if on_lost == "retry" else 1
        self.take_wait_s = take_wait_s
        self.token = secrets.token_hex(8)  # this service's mark on what it answers as lost
        self.broker = broker(url)
        self.redis = self.broker.client
        self.placements = Placements(self.redis)

    def place(self, language: str, runtime: str = "", tried: tuple[str, ...] = ()) -> Placement:
        """Take a slot for a run (`QuotaExceeded` when there is none): the service places a
        streamed run before its stream starts, so that a full cluster is a plain 429."""
        return self.placements.place(language, runtime, tried)

    def _again(self, language: str, runtime: str, tried: tuple[tuple[str, str], ...]) -> Placement:
        """The first placement, or a retry's: a worker not tried yet if one is free, else a
        new process of a tried worker's name (a killed worker that came back), waiting up to
        `RETRY_WAIT_S` for a slot rather than answering 429 for a run already accepted."""
        if not tried:
            return self.place(language, runtime)
        deadline = time.monotonic() + RETRY_WAIT_S
        while True:
            for avoid in (tuple(name for name, _ in tried), tuple(f"{n}={e}" for n, e in tried)):
                try:
                    return self.place(language, runtime, avoid)
                except QuotaExceeded:
                    pass
            if time.monotonic() >= deadline:
                raise InfraError(
                    f"no worker had a free slot for {RETRY_WAIT_S:g} s to retry the run on"
                )
            time.sleep(0.2)  # back off until a slot frees

    def release(self, placement: Placement) -> None:
        """Give back the slot of a placement that was never used (its client went away)."""
        self.placements.release(placement)

    def call(
        self, placed: Placement, body: dict[str, Any], watch: Watch | None = None
    ) -> dict[str, Any]:
        """One call of a session on the worker it lives on (`placed`, from `slot_on` or
        `place_session`): its answer. Never retried: a worker lost meanwhile raises `Lost`."""
        placed.used = True
        call_id = secrets.token_hex(8)
        self._send(SESSION_ACTOR, placed.worker, call_id, 1, body, placed.epoch)
        try:
            answer = self._follow(
                attempt_id(call_id, 1), placed.worker, placed.epoch, watch, _decode_line
            )
        except _Lost as lost:
            raise Lost(str(lost)) from None
        assert isinstance(answer, dict)
        return answer

    def execute(
        self,
        request: ExecutionRequest,
        run_id: str,
        watch: Watch | None,
        runtime: str = "",
        placed: Placement | None = None,
    ) -> ExecutionResult:
        wire = request_to_wire(request)
        answer = self._attempts(
            ACTOR,
            request.language,
            wire,
            run_id,
            watch=watch,
            runtime=runtime,
            placed=placed,
            decode=_decode_result,
        )
        assert isinstance(answer, ExecutionResult)
        return answer

    def grade(
        self,
        task: Mapping[str, Any],
        options: Mapping[str, Any],
        run_id: str,
        runtime: str = "",
        placed: Placement | None = None,
    ) -> dict[str, Any]:
        """Grade one task (its JSON) on a worker (cluster/worker.py's grading actor) with the
        batch's run options; its result line. Lost like a run, by the same rule."""
        body = {"task": dict(task), "options": dict(options)}
        language = str(task.get("language", ""))
        answer = self._attempts(
            GRADE_ACTOR,
            language,
            body,
            run_id,
            watch=None,
            runtime=runtime,
            placed=placed,
            decode=_decode_line,
        )
        assert isinstance(answer, dict)
        return answer

    def _attempts(
        self,
        actor: str,
        language: str,
        body: dict[str, Any],
        run_id: str,
        *,
        watch: Watch | None,
        runtime: str,
        placed: Placement | None,
        decode: Callable[[Any], ExecutionResult | dict[str, Any]],
    ) -> ExecutionResult | dict[str, Any]:
        tried: list[tuple[str, str]] = []
        for attempt in range(1, self.attempts + 1):
            if placed is None or placed.used:
                placed = self._again(language, runtime, tuple(tried))
            placed.used = True
            name, epoch = placed.worker, placed.epoch
            tried.append((name, epoch))
            self._send(actor, name, run_id, attempt, body, epoch)
            try:
                return self._follow(attempt_id(run_id, attempt), name, epoch, watch, decode)
            except _Lost as lost:
                last = attempt == self.attempts
                log.warning("run %s attempt %d on %s lost: %s", run_id, attempt, name, lost)
                if not last and lost.shown and watch is not None:  # the client must know
                    retry = {"attempt": attempt + 1, "reason": str(lost)}
                    watch.write("retry", json.dumps(retry).encode())
                if last and lost.result is not None:
                    if watch is not None:
                        watch.flush()
                    return lost.result  # as a run in-process answers: outcome infra_error
                if last:
                    again = "" if self.on_lost == "report" else f" (attempt {attempt}, not retried)"
                    raise InfraError(f"{lost}{again}") from None
        raise AssertionError("unreachable")

    def _send(
        self, actor: str, name: str, run_id: str, attempt: int, body: dict[str, Any], epoch: str
    ) -> None:
        queue = queue_of(name)
        self.broker.declare_queue(queue)
        message: Any = self._message(
            queue_name=queue,
            actor_name=actor,
            args=(run_id, attempt, body, epoch),
            kwargs={},
            options={},
        )
        patiently(lambda: self.broker.enqueue(message))

    def _follow(
        self,
        aid: str,
        worker: str,
        epoch: str,
        watch: Watch | None,
        decode: Callable[[Any], ExecutionResult | dict[str, Any]],
    ) -> ExecutionResult | dict[str, Any]:
        events, last, shown = run_key(aid, "events"), "0-0", False
        deadline = time.monotonic() + RESULT_WAIT_S
        take_by: float | None = time.monotonic() + self.take_wait_s  # None once it is taken
        gone_since: float | None = None
        while time.monotonic() < deadline:
            if watch is not None and watch.cancelled:
                patiently(lambda: self.redis.set(run_key(aid, "cancel"), 1, ex=RUN_TTL_S))
            now = time.monotonic()
            if take_by is not None and now >= take_by:  # one step: lost unless taken
                if give_up(self.redis, aid, f"lost:{self.token}"):
                    raise _Lost(
                        f"worker {worker} did not take the run within {self.take_wait_s:g} s "
                        "(its message was lost on the way)",
                        shown,
                    )
                take_by = None  # a worker has it
            if _text(patiently(lambda: self.redis.hget(worker_key(worker), "epoch"))) != epoch:
                gone_since = gone_since or now
                if now - gone_since >= GONE_AFTER_S and self._lost(aid):
                    raise _Lost(
                        f"worker {worker} stopped answering (its heartbeat ended) while it ran "
                        "this",
                        shown,
                    )
            else:
                gone_since = None
            since: dict[Any, Any] = {events: last}
            got: Any = patiently(lambda: self.redis.xread(since, block=READ_BLOCK_MS))  # noqa: B023
            for _stream, entries in got or ():
                for entry_id, fields in entries:
                    last, take_by = entry_id, None  # a run with events was taken
                    kind, data = fields[b"kind"].decode(), bytes(fields[b"data"])
                    if kind in ("stdout", "stderr"):
                        if watch is not None:
                            watch.write(kind, data)
                            shown = True
                    elif kind == "result":
                        result = decode(json.loads(data))
                        if not isinstance(result, ExecutionResult):
                            return result  # a task's line: its runs' infra errors are in it
                        if result.outcome is Outcome.INFRA_ERROR and self.on_lost == "retry":
                            why = result.error or "infra_error"
                            raise _Lost(f"worker {worker} could not run it: {why}", shown, result)
                        if watch is not None:
                            watch.flush()
                        return result
                    else:
                        raise self._failed(aid, worker, kind, data, shown)
        raise InfraError(f"no result from the cluster within {RESULT_WAIT_S:g} s")

    def _failed(self, aid: str, worker: str, kind: str, data: bytes, shown: bool) -> Exception:
        """What a worker's `error`, `lost` or `skipped` event becomes: `_Lost` for a fault of
        the worker's (retried by the rule), else the error the worker met, as an InfraError."""
        try:
            detail = json.loads(data)
        except ValueError:
            detail = {"message": data.decode(errors="replace")}
        name = detail.get("type", kind) if kind == "error" else kind
        message = detail.get("message") or json.dumps(detail)
        if name in WORKER_FAULTS:
            self._lost(aid)
            return _Lost(f"worker {worker} could not run it ({name}): {message}", shown)
        return InfraError(f"worker {worker} could not run it ({name}): {message}")

    def _lost(self, aid: str) -> bool:
        """Mark the attempt answered as lost, unless its worker answered it first."""
        return claim(self.redis, run_key(aid, "answered"), f"lost:{self.token}")


def _decode_result(data: Any) -> ExecutionResult:
    return result_from_wire(data)


def _decode_line(data: Any) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise InfraError("a worker answered a task with something other than a result line")
    return data


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
