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
from hazmat.cluster.keys import WORKERS, lua, patiently, worker_key

__all__ = ["Placement", "Placements"]

# KEYS[1] the workers set; ARGV: language, runtime ('' for any), workers not to use (commas:
# a name, or name=epoch for only that process of the name).
# Returns {name, epoch} of the chosen worker (the epoch names its current process: only that
# process gives the slot back), or false.
_PLACE = """
local lang, runtime, skip = ARGV[1], ARGV[2], ',' .. ARGV[3] .. ','
local best, best_score, epoch = false, 0, false
for _, name in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  local key = 'hazmat:worker:' .. name
  local e = redis.call('HMGET', key, 'slots', 'busy', 'languages', 'epoch', 'runtimes', 'warm')
  local avoid = string.find(skip, ',' .. name .. ',', 1, true)
  avoid = avoid or (e[4] and string.find(skip, ',' .. name .. '=' .. e[4] .. ',', 1, true))
  if e[1] and not avoid then
    local free = tonumber(e[1]) - tonumber(e[2] or '0')
    local knows = string.find(',' .. (e[3] or '') .. ',', ',' .. lang .. ',', 1, true)
    local rts = ',' .. (e[5] or '') .. ','
    local has = runtime == '' or string.find(rts, ',' .. runtime .. ',', 1, true)
    if free > 0 and knows and has then
      local warm = ',' .. (e[6] or '') .. ','
      local hot = runtime ~= '' and string.find(warm, ',' .. lang .. '/' .. runtime .. ',', 1, true)
      hot = hot or (runtime == '' and string.find(warm, ',' .. lang .. '/', 1, true))
      local score = free + (hot and 100000 or 0)
      if score > best_score then best, best_score, epoch = name, score, e[4] end
    end
  end
end
if not best then return false end
redis.call('HINCRBY', 'hazmat:worker:' .. best, 'busy', 1)
return {best, epoch}
"""


# KEYS[1] a worker's entry; ARGV[1] the epoch a placement was made with: its slot back.
_RELEASE = """
if redis.call('HGET', KEYS[1], 'epoch') == ARGV[1] then
  redis.call('HINCRBY', KEYS[1], 'busy', -1)
end
"""

# KEYS[1] the workers set; ARGV: language, runtime. A new session's worker: among the live
# workers that know the language, have the runtime and a free slot, the one with the fewest
# sessions (then the most free slots): those its heartbeat says are open or opening there,
# plus those placed there whose opening it has not taken yet (`placing`, which the worker
# lowers as it takes one), so that sessions opened together spread. Its slot is taken for the
# opening call. Returns {name, epoch}, or false.
_PLACE_SESSION = """
local lang, runtime = ',' .. ARGV[1] .. ',', ',' .. ARGV[2] .. ','
local best, best_score, epoch = false, false, false
for _, name in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  local e = redis.call('HMGET', 'hazmat:worker:' .. name,
    'slots', 'busy', 'languages', 'epoch', 'runtimes', 'sessions', 'placing')
  if e[1] then
    local free = tonumber(e[1]) - tonumber(e[2] or '0')
    local knows = string.find(',' .. (e[3] or '') .. ',', lang, 1, true)
    local has = string.find(',' .. (e[5] or '') .. ',', runtime, 1, true)
    if free > 0 and knows and has then
      local score = free - 1000 * (tonumber(e[6] or '0') + tonumber(e[7] or '0'))
      if not best_score or score > best_score then best, best_score, epoch = name, score, e[4] end
    end
  end
end
if not best then return false end
redis.call('HINCRBY', 'hazmat:worker:' .. best, 'busy', 1)
redis.call('HINCRBY', 'hazmat:worker:' .. best, 'placing', 1)
return {best, epoch}
"""

# KEYS[1] a worker's entry; ARGV[1] the epoch of the process a session lives in. A slot on
# that very process for one call of the session: 'ok' (taken), 'busy' (none free now) or
# 'gone' (the process is no longer there: its sessions went with it).
_SLOT_ON = """
local e = redis.call('HMGET', KEYS[1], 'slots', 'busy', 'epoch')
if not e[1] or e[3] ~= ARGV[1] then return 'gone' end
if tonumber(e[1]) - tonumber(e[2] or '0') <= 0 then return 'busy' end
redis.call('HINCRBY', KEYS[1], 'busy', 1)
return 'ok'
"""


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
