"""Paused sessions in the cluster's Redis, so that any service of the cluster can resume a
session another one paused (sessions/store.py's `Shelf`; `hazmat serve --redis` uses it).

Redis holds only sealed parts: each service seals and opens them with the key file of its own
store directory, which the operator gives every service (docs/scale.md). A paused session is one
hash, `hazmat:paused:<id>`, written in one transaction and expiring with `keep_paused_s`; a
resume holds `hazmat:paused:<id>:claim` (a token of its own, set only if absent, expiring after
`CLAIM_S`), so that two services cannot resume one session together. Every call waits out a
short Redis outage (`patiently`).
"""

from __future__ import annotations

import contextlib
import math
import secrets
from collections.abc import Iterator, Mapping
from typing import Any

from hazmat._exceptions import SessionBusy
from hazmat.cluster.keys import lua, lua_source, patiently, paused_key

__all__ = ["CLAIM_S", "RedisShelf"]

# Longer than any resume (a container's start, the interpreter's imports, the archive back):
# a service that died while resuming leaves its claim for this long, no longer.
CLAIM_S = 300

# Deletes the claim only if it is still this resume's (an expired claim may be another's now).
_UNCLAIM = lua_source("unclaim.lua")


class RedisShelf:
    def __init__(self, client: Any) -> None:
        self.redis = client

    def __str__(self) -> str:
        return "the cluster's Redis"

    def read(self, session_id: str, part: str) -> bytes:
        data = patiently(lambda: self.redis.hget(paused_key(session_id), part))
        if data is None:
            raise FileNotFoundError(paused_key(session_id) + f" {part}")
        return bytes(data)

    def write(self, session_id: str, parts: Mapping[str, bytes], keep_s: float) -> None:
        key = paused_key(session_id)

        def store() -> None:
            with self.redis.pipeline(transaction=True) as pipe:
                pipe.delete(key)
                pipe.hset(key, mapping=dict(parts))
                pipe.expire(key, max(1, math.ceil(keep_s)))
                pipe.execute()

        patiently(store)

    def remove(self, session_id: str) -> None:
        patiently(lambda: self.redis.delete(paused_key(session_id)))

    def sweep(self, keep_s: float) -> list[str]:
        return []  # each paused session expires in Redis by itself

    def ids(self) -> list[str]:
        prefix = paused_key("")
        keys = patiently(lambda: list(self.redis.scan_iter(match=paused_key("s-*"), count=500)))
        names = (k.decode() if isinstance(k, bytes) else str(k) for k in keys)
        return sorted(n.removeprefix(prefix) for n in names if not n.endswith(":claim"))

    @contextlib.contextmanager
    def claim(self, session_id: str) -> Iterator[None]:
        key = paused_key(session_id, "claim")
        token = secrets.token_hex(16)
        if not patiently(lambda: self.redis.set(key, token, nx=True, ex=CLAIM_S)):
            raise SessionBusy(
                f"paused session {session_id} is being resumed already (here or by another "
                "service of the cluster)"
            )
        try:
            yield
        finally:
            patiently(lambda: lua(self.redis, _UNCLAIM, [key], [token]))
