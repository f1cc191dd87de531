"""Per-tenant quotas kept in the cluster's Redis, so that they hold across every service in
front of the workers: the same two limits as service/quotas.py (runs at once, runs started in
the last minute), counted in two sorted sets per tenant by one Lua script on Redis's clock.

A run holds a lease in the tenant's running set until it ends; a service that dies leaves its
leases behind, and they stop counting when they expire (`lease_s`, the longest a run can take).
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Iterator
from typing import Any

from hazmat._exceptions import QuotaExceeded
from hazmat.cluster.keys import lua_source, patiently
from hazmat.service.quotas import WINDOW_S, QuotaBook
from hazmat.service.tenant_keys import Quotas

__all__ = ["RedisQuotaBook"]

_ADMIT = lua_source("admit.lua")


def _keys(tenant: str) -> list[str]:
    return [f"hazmat:quota:{tenant}:running", f"hazmat:quota:{tenant}:started"]


class RedisQuotaBook(QuotaBook):
    def __init__(self, client: Any, lease_s: float = 3600.0) -> None:
        super().__init__()
        self.redis = client
        self.lease_s = lease_s
        self._admit = client.register_script(_ADMIT)

    @contextlib.contextmanager
    def admit(self, tenant: str, quotas: Quotas) -> Iterator[None]:
        token = secrets.token_hex(8)
        args = [token, quotas.concurrent, quotas.per_minute, self.lease_s, WINDOW_S]
        why, wait = (int(v) for v in patiently(lambda: self._admit(_keys(tenant), args)))
        if why == 1:
            raise QuotaExceeded(
                f"tenant {tenant!r} already has {quotas.concurrent} run(s) going in the cluster "
                "(its concurrent quota)",
                1.0,
            )
        if why == 2:
            raise QuotaExceeded(
                f"tenant {tenant!r} started {quotas.per_minute} runs in the cluster in the last "
                "minute (its per-minute quota)",
                float(wait),
            )
        try:
            yield
        finally:
            running = _keys(tenant)[0]
            patiently(lambda: self.redis.zrem(running, token))

    def active(self, tenant: str) -> int:
        running = _keys(tenant)[0]
        now = float(patiently(self.redis.time)[0])
        return int(patiently(lambda: self.redis.zcount(running, now, "+inf")))

    def started(self, tenant: str) -> int:
        started = _keys(tenant)[1]
        seconds, micros = patiently(self.redis.time)
        now = float(seconds) + float(micros) / 1e6
        return int(patiently(lambda: self.redis.zcount(started, f"({now - WINDOW_S}", "+inf")))
