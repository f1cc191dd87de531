"""The service's side of the cluster: place a run on a worker, send it, relay what comes back.

Placement is one Lua script, so that two services never give the last slot twice: among the
workers whose catalogue entry is alive and that know the run's language, the one with the
most free slots gets the run and one of its slots is taken; with no free slot anywhere the
run is refused with `QuotaExceeded` (the service's 429), never queued. The worker gives the
slot back when it has written the result.

While it waits for the result, the service watches the worker's catalogue entry: if the
worker's heartbeat stops (it died, its host went away), the run is marked answered and the
caller gets `InfraError` saying so (503, or an `error` event); the broker may later give the
run back to a worker of that name, which then does not execute it.
"""

from __future__ import annotations

import base64
import json
import time
from typing import Any

from hazmat._exceptions import InfraError, QuotaExceeded
from hazmat.cluster.keys import (
    ACTOR,
    RUN_TTL_S,
    WORKERS,
    broker,
    queue_of,
    run_key,
    worker_key,
)
from hazmat.cluster.wire import request_to_wire
from hazmat.models import ExecutionRequest, Outcome
from hazmat.watch import Watch

__all__ = ["Dispatcher", "WireResult"]

READ_BLOCK_MS = 200  # how long one read of the run's stream waits (then the cancel is looked at)
RESULT_WAIT_S = 3600.0  # a run's own limits end it long before this

# KEYS[1] the workers set; ARGV[1] the language. Returns {name, epoch} of the chosen worker
# (the epoch names the worker's current process: only it gives the slot back), or false.
_PLACE = """
local best, best_free, epoch = false, 0, false
for _, name in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  local key = 'hazmat:worker:' .. name
  local entry = redis.call('HMGET', key, 'slots', 'busy', 'languages', 'epoch')
  if entry[1] then
    local free = tonumber(entry[1]) - tonumber(entry[2] or '0')
    local langs = ',' .. (entry[3] or '') .. ','
    if free > best_free and string.find(langs, ',' .. ARGV[1] .. ',', 1, true) then
      best, best_free, epoch = name, free, entry[4]
    end
  end
end
if not best then return false end
redis.call('HINCRBY', 'hazmat:worker:' .. best, 'busy', 1)
return {best, epoch}
"""


class WireResult:
    """A run's result as a worker wrote it (`ExecutionResult.to_dict()` with the output as
    base64): what the service answers with and counts."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.stdout_bytes = base64.b64decode(data.pop("stdout_base64", ""))
        self.stderr_bytes = base64.b64decode(data.pop("stderr_base64", ""))
        self.data = data
        self.outcome = Outcome(data["outcome"])
        self.language = str(data["language"])

    def to_dict(self) -> dict[str, Any]:
        return dict(self.data)


class Dispatcher:
    """Runs requests on the cluster's workers (blocking: call it from a worker thread)."""

    def __init__(self, url: str) -> None:
        from dramatiq import Message

        self._message = Message
        self.broker = broker(url)
        self.redis = self.broker.client
        self._place = self.redis.register_script(_PLACE)

    def execute(self, request: ExecutionRequest, run_id: str, watch: Watch | None) -> WireResult:
        placed = self._place([WORKERS], [request.language])
        if not placed:
            raise QuotaExceeded("every worker of the cluster is busy (or none is alive)", 1.0)
        name, epoch = (_text(part) for part in placed)
        queue = queue_of(name)
        self.broker.declare_queue(queue)
        message: Any = self._message(
            queue_name=queue,
            actor_name=ACTOR,
            args=(run_id, request_to_wire(request), epoch),
            kwargs={},
            options={},
        )
        self.broker.enqueue(message)
        return self._follow(run_id, name, watch)

    def _follow(self, run_id: str, worker: str, watch: Watch | None) -> WireResult:
        events, last = run_key(run_id, "events"), "0-0"
        deadline = time.monotonic() + RESULT_WAIT_S
        while time.monotonic() < deadline:
            if watch is not None and watch.cancelled:
                self.redis.set(run_key(run_id, "cancel"), 1, ex=RUN_TTL_S)
            if not self.redis.exists(worker_key(worker)) and self._lost(run_id):
                raise InfraError(
                    f"worker {worker} stopped answering (its heartbeat ended) while it ran "
                    "this; the run was not retried"
                )
            got: Any = self.redis.xread({events: last}, block=READ_BLOCK_MS, count=100)
            for _stream, entries in got or ():
                for entry_id, fields in entries:
                    last = entry_id
                    kind, data = fields[b"kind"].decode(), bytes(fields[b"data"])
                    if kind in ("stdout", "stderr"):
                        if watch is not None:
                            watch.write(kind, data)
                    elif kind == "result":
                        if watch is not None:
                            watch.flush()
                        return WireResult(json.loads(data))
                    else:
                        raise InfraError(f"the worker could not run it ({kind}): {data!r}")
        raise InfraError(f"no result from the cluster within {RESULT_WAIT_S:g} s")

    def _lost(self, run_id: str) -> bool:
        """Mark the run answered as lost, unless its worker answered it first."""
        return bool(self.redis.set(run_key(run_id, "answered"), "lost", nx=True, ex=RUN_TTL_S))


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
