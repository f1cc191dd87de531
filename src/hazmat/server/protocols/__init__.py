"""Other systems' protocols, served by `hazmat serve` under path prefixes of their own:
SandboxFusion's (sandbox_fusion.py), Judge0's (judge0.py, its submissions in
judge0_submissions.py), Piston's (piston.py) and E2B's (e2b.py, its sandboxes in
e2b_sandboxes.py, its code interpreter in e2b_interpreter.py). Each is a thin mapping onto the
pipeline `/v1/runs` and `/v1/sessions` use, so that the clients graders and agents already
have get hazmat's boundary, CPU-time verdicts and audit log without a rewrite
(docs/protocols.md, docs/e2b.md).

A protocol's module maps its request's fields onto a run's options (options/: nothing here
checks an option the table checks) and the `ExecutionResult` onto its answer; its language
names are the language modules' (`Language.names[protocol]`). What they share is here:

- `Service`: what a protocol needs of the service (its keys, quotas and policy, its body
  reader, the run as `/v1/runs` has it, a session, work in the background);
- `within_level`: a limit the client asks for above the key's trust level runs at the level's
  and says so (verl sends `memory_limit_MB: 1024` on every request), never an error that a
  client would score as a failed sample;
- `Turns`: each tenant's runs through one protocol in the order they came, at most its key's
  `concurrent` at once, each waiting at most its own bound for its turn (`Overloaded` past it:
  the protocol answers as its clients expect: SandboxFusion's 504, Piston's 429; Judge0's
  submissions wait in its queue, bounded by its own count).
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import AsyncIterator, Callable, Coroutine, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Protocol

import anyio
from starlette.requests import Request

from hazmat._exceptions import AccessDenied, InputError
from hazmat.json_input import loads
from hazmat.languages import LANGUAGES, Language
from hazmat.models import ExecutionRequest, ExecutionResult
from hazmat.options import ceilings
from hazmat.policy import Clock, Policy, TrustLevel
from hazmat.server.session_routes import SessionOwners
from hazmat.service.protocols import OpenSession
from hazmat.service.quotas import QuotaBook
from hazmat.service.tenant_keys import Key, KeyStore
from hazmat.watch import Watch

__all__ = [
    "Overloaded",
    "Service",
    "Turns",
    "json_object",
    "key_of",
    "languages_of",
    "seconds",
    "whole_mib",
    "within_level",
]

# How many runs of all tenants may wait for their turn in one protocol at once; past it a run
# is refused at once (Overloaded) rather than held
MOST_WAITING = 1024


class Service(Protocol):
    """What a protocol's routes use of the service (server/http.py's `_Service`)."""

    keys: KeyStore
    quotas: QuotaBook

    @property
    def policy(self) -> Policy: ...

    async def read_body(self, request: Request, key: Key) -> bytes: ...

    def prepare(self, code: str, language: str, options: dict[str, Any]) -> ExecutionRequest: ...

    async def run_in(
        self, prepared: ExecutionRequest, session: OpenSession | None, watch: Watch | None = None
    ) -> ExecutionResult: ...

    def counted(self, name: str, status: int) -> None: ...

    def spawn(self, work: Callable[[], Coroutine[Any, Any, None]]) -> None:
        """Run `work` in the background while the service runs (Judge0's queued runs)."""

    @property
    def owners(self) -> SessionOwners:
        """Which tenant opened which session: a protocol's sessions are opened, paused and
        resumed through it, as /v1's are (blocking calls)."""


class Overloaded(Exception):
    """No turn for a run within its bound, or too many waiting: each protocol answers it as
    its clients expect (never raised out of a protocol's module, so not a `HazmatError`)."""


@functools.cache
def languages_of(protocol: str) -> Mapping[str, Language]:
    """The names `protocol`'s clients send -> hazmat's languages (`Language.names`)."""
    return MappingProxyType(
        {name: lang for lang in LANGUAGES.values() for name in lang.names.get(protocol, ())}
    )


def within_level(
    options: dict[str, Any], fields: Mapping[str, str], trust: TrustLevel, policy: Policy
) -> list[str]:
    """Lower each option in `options` that is over its trust level's ceiling to the ceiling,
    in place; one sentence per option lowered, naming the protocol's own field (`fields`:
    option -> field) and the policy key."""
    limits = policy.settings(trust).limits
    if options.get("clock") is Clock.CPU or options.get("clock") == Clock.CPU.value:
        limits = limits.replace(cpus=limits.measured_cpus)
    said = []
    for c in ceilings():
        asked = options.get(c.option)
        ceiling = getattr(limits, c.limit)
        if asked is None or asked <= ceiling:
            continue
        options[c.option] = ceiling
        unit = f" {c.unit}" if c.unit else ""
        said.append(
            f"{fields.get(c.option, c.option)} {asked:g}{unit} is over trust level "
            f"{trust.value!r}'s limit: ran with {ceiling:g}{unit} (policy key "
            f"trust.{trust.value}.{c.limit})"
        )
    return said


def seconds(value: object, name: str, default: float) -> float:
    """A protocol's time field: a positive number of seconds (its default when absent)."""
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise InputError(f"field {name!r} must be a positive number of seconds, not {value!r}")
    return float(value)


def json_object(body: bytes, empty: bool = False) -> dict[str, Any]:
    """A request body that must be a JSON object (`empty`: an empty body is `{}`)."""
    if empty and not body.strip():
        return {}
    data = loads(body, "the request body")
    if not isinstance(data, dict):
        raise InputError(f"the request body must be a JSON object, not {type(data).__name__}")
    return data


def whole_mib(value: object, unit: int, level: tuple[int, ...] = ()) -> int | None:
    """A protocol's memory field, a number of `unit` bytes, as whole MiB (rounded up); None when
    it is absent or one of `level` (the protocol's word for "the level's"). ValueError for
    anything but a positive number: the protocol says so in its own words."""
    if isinstance(value, bool) or not (value is None or isinstance(value, int | float)):
        raise ValueError(value)
    if value is None or value in level:
        return None
    if not value > 0:
        raise ValueError(value)
    return max(1, math.ceil(value * unit / (1024 * 1024)))


@dataclass
class _Waiting:
    limiter: anyio.CapacityLimiter
    size: int


class Turns:
    """Each tenant's runs through one protocol: FIFO, at most its key's `concurrent` at once."""

    def __init__(self, most_waiting: int = MOST_WAITING) -> None:
        self.most_waiting = most_waiting
        self.waiting = 0
        self._tenants: dict[str, _Waiting] = {}

    @asynccontextmanager
    async def turn(self, key: Key, wait_s: float) -> AsyncIterator[float]:
        """Hold one of the tenant's places while the block runs; yields how long the run
        waited for it, in seconds. `Overloaded` when none came within `wait_s`, or when
        `most_waiting` runs wait already."""
        limiter = self._limiter(key)
        if self.waiting >= self.most_waiting:
            raise Overloaded(f"{self.waiting} runs are waiting for their turn already")
        began, borrower = time.monotonic(), object()  # one task may hold two turns
        self.waiting += 1
        try:
            with anyio.fail_after(wait_s):
                await limiter.acquire_on_behalf_of(borrower)
        except TimeoutError:
            raise Overloaded(
                f"no place for this run came within {wait_s:g} s (tenant {key.tenant!r} runs "
                f"{key.quotas.concurrent} at once, its concurrent quota)"
            ) from None
        finally:
            self.waiting -= 1
        try:
            yield time.monotonic() - began
        finally:
            limiter.release_on_behalf_of(borrower)

    def _limiter(self, key: Key) -> anyio.CapacityLimiter:
        found = self._tenants.get(key.tenant)
        if found is None:
            found = _Waiting(anyio.CapacityLimiter(key.quotas.concurrent), key.quotas.concurrent)
            self._tenants[key.tenant] = found
        elif found.size != key.quotas.concurrent:  # the key's quota changed, or another key's
            found.limiter.total_tokens = found.size = key.quotas.concurrent
        return found.limiter


def key_of(request: Request, keys: KeyStore, first: str | None, how: str, raw: bool = False) -> Key:
    """The key a protocol's request presents: in its own place (`first`: a path segment, a
    header), else as `Authorization: Bearer` (or, with `raw`, the header's value alone, as
    Piston's clients send it). `AccessDenied` says `how` its clients send one; a revoked key's
    refusal is its own."""
    presented = first
    if presented is None:
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() == "bearer":
            presented = token.strip()
        elif raw:
            presented = scheme.strip() or None
    try:
        return keys.check(presented)
    except AccessDenied as exc:
        if "revoked" in str(exc):
            raise
        raise AccessDenied(f"a valid API key is needed: {how} (hazmat keys create)") from None
