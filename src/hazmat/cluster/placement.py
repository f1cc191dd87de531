"""Where the cluster's work goes, decided in Redis by Lua scripts (so that two services never
give the last slot twice), over the workers' catalogue entries (cluster/keys.py):

- a run goes to a live worker that knows its language, has its runtime and a free slot: one
  with a warm container for it first, then the one with the most free slots (`place`);
- a new session goes to such a worker with the fewest sessions open, opening or placed there
  (`place_session`), and each later call of it to a slot of that very worker process
  (`slot_on`), or nowhere when that process is gone;
- a slot taken and never used is given back to the process it was taken from (`release`).

A slot is given back by the worker when it has answered; the placement names the worker's
process (its epoch) so that a slot of a dead process is never given back to a new one.
"""

from __future__ import annotations

from typing import Any

from hazmat._exceptions import QuotaExceeded
from hazmat.cluster.keys import WORKERS, lua, lua_source, patiently, worker_key

__all__ = ["Placement", "Placements"]

_PLACE = lua_source("place.lua")


_RELEASE = lua_source("release.lua")

_PLACE_SESSION = lua_source("place_session.lua")

_SLOT_ON = lua_source("slot_on.lua")


class Placement:
    """A slot taken on a worker (by `Placements`) for a run or a session's call not yet sent."""

    def __init__(self, worker: str, epoch: str) -> None:
        self.worker = worker
        self.epoch = epoch
        self.used = False


class Placements:
    """The placement scripts on one Redis client."""

    def __init__(self, redis: Any) -> None:
        self.redis = redis

    def place(self, language: str, runtime: str = "", tried: tuple[str, ...] = ()) -> Placement:
        """Take a slot for a run (`QuotaExceeded` when there is none): the service places a
        streamed run before its stream starts, so that a full cluster is a plain 429."""
        args = [language, runtime, ",".join(tried)]
        placed = patiently(lambda: lua(self.redis, _PLACE, [WORKERS], args))
        if not placed:
            others = " other" if tried else ""
            raise QuotaExceeded(
                f"every{others} worker of the cluster for {language}"
                f"{' under ' + runtime if runtime else ''} is busy (or none is alive)",
                1.0,
            )
        name, epoch = (_text(part) for part in placed)
        return Placement(name, epoch)

    def release(self, placement: Placement) -> None:
        """Give back the slot of a placement that was never used (its client went away)."""
        if not placement.used:
            placement.used = True
            key = worker_key(placement.worker)
            patiently(lambda: lua(self.redis, _RELEASE, [key], [placement.epoch]))

    def place_session(self, language: str, runtime: str) -> Placement:
        """A worker for a new session, by load, with a slot taken for its opening call
        (`QuotaExceeded` when no worker for it has a free slot)."""
        placed = patiently(lambda: lua(self.redis, _PLACE_SESSION, [WORKERS], [language, runtime]))
        if not placed:
            raise QuotaExceeded(
                f"every worker of the cluster for {language} under {runtime} is busy (or none "
                "is alive)",
                1.0,
            )
        name, epoch = (_text(part) for part in placed)
        return Placement(name, epoch)

    def slot_on(self, worker: str, epoch: str) -> Placement | None:
        """A slot on the worker process `epoch` of `worker` for one call of a session there;
        None when that process is gone, `QuotaExceeded` while all its slots are busy."""
        found = patiently(lambda: lua(self.redis, _SLOT_ON, [worker_key(worker)], [epoch]))
        if _text(found) == "gone":
            return None
        if _text(found) == "busy":
            raise QuotaExceeded(f"worker {worker}, where the session lives, is busy", 1.0)
        return Placement(worker, epoch)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
