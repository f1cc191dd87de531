"""E2B's sandboxes as hazmat keeps them (server/protocols/e2b.py serves them): a sandbox is a
tenant's set of sessions, its code contexts, opened from a template of the policy
(`sessions.templates`), with E2B's id, access tokens, metadata and timeout.

A context is one hazmat session: the sandbox's first, of its template's language, is opened
with the sandbox; `POST /contexts` (or a `run_code` in another language) opens another. Every
session is its tenant's, counted against its key's cap like any other (server/session_routes.py,
`SessionOwners`), and audited as the key's caller. A sandbox ends at its timeout (E2B's default
300 s; `set_timeout` moves it), when it is killed, or when its first context's session ends (its
own idle or lifetime limit, `sessions.*`): its sessions are closed and its id is then unknown,
as E2B's is. Paused (`pause`), each context's session is paused (its files, and Python's
variables that can be kept) and the sandbox is `paused` until `connect` resumes them in new
containers.
"""

from __future__ import annotations

import hmac
import secrets
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from hazmat._exceptions import InputError, quoted
from hazmat.policy import SessionTemplate, TrustLevel
from hazmat.service.protocols import OpenSession
from hazmat.service.tenant_keys import Key

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "ENVD_VERSION",
    "Book",
    "Context",
    "E2bSandbox",
    "NotFound",
    "strings",
]

# E2B's API default for a sandbox's timeout, when create sends none
DEFAULT_TIMEOUT_S = 300
# the envd version hazmat says it speaks: at least 0.4.0, so the SDK sends no default user; the
# SDK refuses by itself what needs a newer one (closing stdin, octet-stream uploads, file
# metadata, watch entries): docs/e2b.md
ENVD_VERSION = "0.4.0"
CLIENT_ID = "hazmat"


class NotFound(InputError):
    """No sandbox (or context) of the caller's has that id: E2B's 404."""

    http_status = 404


@dataclass
class Context:
    """A code context: one hazmat session, its language and working directory."""

    id: str
    language: str
    cwd: str
    session: OpenSession | None  # None while paused
    executions: int = 0

    def wire(self) -> dict[str, str]:
        return {"id": self.id, "language": self.language, "cwd": self.cwd}


@dataclass
class E2bSandbox:
    """One E2B sandbox: whose it is, from which template, its contexts and its clock."""

    id: str
    key: Key  # the key that made it: its runs' caller, its quotas
    trust: TrustLevel  # its sessions' level: its template's, else the key's
    template: str
    made_from: SessionTemplate  # its contexts of the template's language get its image
    metadata: Mapping[str, str]
    env: Mapping[str, str]
    started: float  # time.time()
    ends: float
    memory_mb: int  # what each of its sessions may use (its level's)
    cpus: float
    envd_token: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    traffic_token: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    contexts: dict[str, Context] = field(default_factory=dict)
    default: dict[str, str] = field(default_factory=dict)  # language -> its default context
    paused: dict[str, str] = field(default_factory=dict)  # context id -> its paused session
    # a pause under way: its sessions end one by one, which is not the sandbox's end
    pausing: bool = False

    @property
    def state(self) -> str:
        return "paused" if self.paused else "running"

    def created(self) -> dict[str, Any]:
        """E2B's `Sandbox` (create and connect)."""
        return {
            "templateID": self.template,
            "sandboxID": self.id,
            "clientID": CLIENT_ID,
            "envdVersion": ENVD_VERSION,
            "envdAccessToken": self.envd_token,
            "trafficAccessToken": self.traffic_token,
            "domain": None,
        }

    def listed(self) -> dict[str, Any]:
        """E2B's `ListedSandbox`."""
        return {
            "templateID": self.template,
            "sandboxID": self.id,
            "clientID": CLIENT_ID,
            "startedAt": _stamp(self.started),
            "endAt": _stamp(self.ends),
            "cpuCount": max(1, round(self.cpus)),
            "memoryMB": self.memory_mb,
            "diskSizeMB": 0,
            "state": self.state,
            "envdVersion": ENVD_VERSION,
            "metadata": dict(self.metadata),
        }

    def detail(self) -> dict[str, Any]:
        """E2B's `SandboxDetail` (get_info)."""
        return {**self.listed(), "envdAccessToken": self.envd_token, "domain": None}

    def sessions(self) -> Iterator[OpenSession]:
        return (c.session for c in self.contexts.values() if c.session is not None)

    def token_matches(self, presented: str | None, traffic: bool) -> bool:
        wanted = self.traffic_token if traffic else self.envd_token
        return presented is not None and hmac.compare_digest(presented, wanted)


class Book:
    """The service's E2B sandboxes, by id (in memory: a restart of the service loses them, as
    it loses the sessions they hold)."""

    def __init__(self) -> None:
        self._sandboxes: dict[str, E2bSandbox] = {}
        self._lock = threading.Lock()

    def add(self, sandbox: E2bSandbox) -> None:
        with self._lock:
            self._sandboxes[sandbox.id] = sandbox

    def remove(self, sandbox: E2bSandbox) -> bool:
        """Forget `sandbox`; False when it was already gone (killed meanwhile)."""
        with self._lock:
            return self._sandboxes.pop(sandbox.id, None) is not None

    def get(self, sid: str, tenant: str | None) -> E2bSandbox:
        """The sandbox `sid` of `tenant` (None: any tenant's: the sandbox's own requests, which
        carry its token instead of a key). Another tenant's, and one that ended, is the same
        `NotFound` as one that never was."""
        with self._lock:
            found = self._sandboxes.get(sid)
        if found is None or (tenant is not None and found.key.tenant != tenant):
            raise NotFound(f"sandbox {quoted(sid)} not found")
        return found

    def of(self, tenant: str) -> list[E2bSandbox]:
        """The tenant's sandboxes, oldest first."""
        with self._lock:
            mine = [s for s in self._sandboxes.values() if s.key.tenant == tenant]
        return sorted(mine, key=lambda s: (s.started, s.id))

    def due(self, now: float) -> list[E2bSandbox]:
        """The running sandboxes past their timeout, or whose first context's session has
        ended (a paused one waits for its `connect` or its kill, as E2B's does)."""
        with self._lock:
            every = list(self._sandboxes.values())
        idle = [s for s in every if not (s.paused or s.pausing)]
        return [s for s in idle if s.ends <= now or _first_ended(s)]


def strings(data: Mapping[str, Any], name: str) -> dict[str, str]:
    """A field that is an object of strings (`metadata`, `envVars`, `env_vars`); absent: {}."""
    value = data.get(name) or {}
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise InputError(f"field {name!r} must be an object of strings")
    return dict(value)


def new_id() -> str:
    """A sandbox's or a context's id: 20 random lowercase letters and digits (E2B's look)."""
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
    return "".join(secrets.choice(alphabet) for _ in range(20))


def _first_ended(sandbox: E2bSandbox) -> bool:
    first = next(iter(sandbox.contexts.values()), None)
    return first is not None and first.session is not None and first.session.ended is not None


def _stamp(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).isoformat().replace("+00:00", "Z")


def now() -> float:
    return time.time()
