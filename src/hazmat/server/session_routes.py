"""The session endpoints of the HTTP API (docs/api.md): thin layers over `Sandbox.session()`.

A session belongs to the tenant whose key opened it: any other key gets 404, as for an id that
never existed. A tenant may hold as many open sessions as its key's `concurrent` quota.
Opening one (a container start), each call and each file transfer are admitted by the same
quotas as a run; a call goes through the whole pipeline (sessions/). Everything that waits on
the engine runs in a worker thread.
"""

from __future__ import annotations

import base64
import contextlib
import threading
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from hazmat._exceptions import InputError, QuotaExceeded, SessionClosed, SessionNotFound, quoted
from hazmat.models import ExecutionRequest
from hazmat.options import CALL_OPTIONS, Use
from hazmat.sandbox import Sandbox
from hazmat.server.fields import parse_body, run_arguments
from hazmat.service.protocols import OpenSession, Sessions
from hazmat.service.quotas import QuotaBook
from hazmat.service.tenant_keys import Key
from hazmat.service.wire import check_fields, wire_fields
from hazmat.sessions import Session
from hazmat.sessions.book import SLOT_RETRY_S
from hazmat.sessions.forking import check_count
from hazmat.sessions.store import Paused

__all__ = [
    "OPEN_FIELDS",
    "LocalSessions",
    "SessionOwners",
    "SessionRoutes",
    "fork_admitted",
]

OPEN_FIELDS = ("language", *wire_fields(Use.OPEN))
OWNERS_KEPT = 2000
CALL_FIELDS = ("code", *wire_fields(Use.CALL))


class LocalSessions:
    """The sessions of the service's own sandbox, in its own engine."""

    def __init__(self, sandbox: Sandbox) -> None:
        self.sandbox = sandbox

    def open(
        self,
        language: str,
        *,
        trust: str | None,
        runtime: str | None,
        image: str | None,
        caller: str | None,
        owner: str | None,
    ) -> OpenSession:
        session = self.sandbox.session(
            language, trust=trust, runtime=runtime, image=image, caller=caller
        )
        session.owner = owner  # an idle pause (sessions.on_idle) is this tenant's
        return session

    def resume(self, session_id: str, owner: str | None) -> OpenSession:
        session = self.sandbox.resume_session(session_id, owner=owner)
        session.owner = owner
        return session

    def get(self, session_id: str) -> OpenSession:
        return self.sandbox.sessions.get(session_id)

    def all(self) -> list[OpenSession]:
        return list(self.sandbox.sessions.all())


Body = Callable[[Request, int], Awaitable[bytes]]
Answer = Callable[[Request, Key, ExecutionRequest, OpenSession | None], Awaitable[Response]]


class SessionOwners:
    """Which tenant opened which session (shared by the HTTP routes and the MCP tools)."""

    def __init__(self, sandbox: Sandbox, book: Sessions | None = None) -> None:
        self.sandbox = sandbox
        self.book = book or LocalSessions(sandbox)
        self._owner: dict[str, str] = {}  # session id -> tenant
        self._opening: Counter[str] = Counter()  # tenant -> sessions whose container starts
        self._lock = threading.Lock()

    def check_room(self, key: Key, more: int = 1) -> None:
        """Raise `QuotaExceeded` (429) if `key`'s tenant, holding and opening what it does,
        has no room for `more` sessions: its key's concurrent-runs quota."""
        with self._lock:
            self._check_room(key, more)

    def _check_room(self, key: Key, more: int = 1) -> None:
        held = len(self._mine(key)) + self._opening[key.tenant]
        if held + more > key.quotas.concurrent:
            room = max(0, key.quotas.concurrent - held)
            raise QuotaExceeded(
                f"tenant {key.tenant!r} has {held} sessions open or opening and asks for "
                f"{more} more; its key's most is {key.quotas.concurrent} (its concurrent-runs "
                f"quota), room for {room}: close one first",
                retry_after_s=SLOT_RETRY_S,
            )

    def asked(self, key: Key, fields: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
        """The language and options of the session `key` asks to open with `fields` (those of
        `OPEN_FIELDS` it sent), checked against its level (`run_arguments`) and its tenant's
        room (`check_room`), before anything is counted or started."""
        _, language, options = run_arguments({**fields, "code": ""}, key, self.sandbox.policy)
        self.check_room(key)
        return language, options

    def open(self, key: Key, language: str, options: dict[str, Any]) -> OpenSession:
        """Open a session for `key`'s tenant, within its cap (blocking: run it in a thread).
        The tenant's place is taken before the container starts, so parallel opens cannot
        pass the cap together, and given back if the open fails."""
        return self._opened(
            key,
            lambda: self.book.open(
                language,
                trust=options["trust"],
                runtime=options.get("runtime"),
                image=options.get("image"),
                caller=key.caller,
                owner=key.tenant,
            ),
        )

    def pause(self, sid: str, key: Key) -> Paused:
        """Pause the tenant's open session `sid` (blocking); only this tenant can resume it."""
        return self.get(sid, key).pause(owner=key.tenant)

    def resume(self, sid: str, key: Key) -> OpenSession:
        """Resume the tenant's paused session `sid` in a new container, within its cap
        (blocking); another tenant's, or none, is 404. What the session was opened with is
        checked again against the key as it is now (a key since lowered: 403)."""
        paused = self.sandbox.session_store.info(sid, key.tenant)
        asked = {"trust": paused.trust, "runtime": paused.runtime, "image": paused.image}
        run_arguments(
            {"code": "", "language": paused.language, **{k: v for k, v in asked.items() if v}},
            key,
            self.sandbox.policy,
        )
        return self._opened(key, lambda: self.book.resume(sid, key.tenant))

    def fork(self, sid: str, key: Key, n: int) -> list[OpenSession]:
        """Fork the tenant's open session `sid` into `n` new ones of the same tenant, each
        counted against its cap (blocking)."""
        source = self.get(sid, key)
        return self._opened_all(key, lambda: list(source.fork(n)), n)

    def discard_paused(self, sid: str, key: Key) -> None:
        """Remove the tenant's paused session `sid` from the store, unresumed (404 if there
        is none of the tenant's)."""
        store = self.sandbox.session_store
        store.info(sid, key.tenant)
        store.remove(sid)

    def paused(self, sid: str, key: Key) -> dict[str, Any]:
        """What the tenant's paused session `sid` is (404 if there is none)."""
        store = self.sandbox.session_store
        return store.info(sid, key.tenant).info(store.keep_s)

    def _opened(self, key: Key, start: Callable[[], OpenSession]) -> OpenSession:
        return self._opened_all(key, lambda: [start()], 1)[0]

    def _opened_all(
        self, key: Key, start: Callable[[], list[OpenSession]], count: int
    ) -> list[OpenSession]:
        with self._lock:
            self._check_room(key, count)
            self._opening[key.tenant] += count
        try:
            sessions = start()
        finally:
            with self._lock:
                self._opening[key.tenant] -= count
        with self._lock:
            self._owner.update((session.id, key.tenant) for session in sessions)
            if len(self._owner) > OWNERS_KEPT:  # forget the oldest ended sessions
                live = {s.id for s in self.book.all()}
                for sid in [sid for sid in self._owner if sid not in live][: OWNERS_KEPT // 2]:
                    del self._owner[sid]
        return sessions

    def mine(self, key: Key) -> list[OpenSession]:
        with self._lock:
            return self._mine(key)

    def _mine(self, key: Key) -> list[OpenSession]:
        owned = {sid for sid, tenant in self._owner.items() if tenant == key.tenant}
        return [s for s in self.book.all() if s.id in owned]

    def every(self) -> list[tuple[str, OpenSession]]:
        """Every open session with its tenant (the console, for an operator's key)."""
        with self._lock:
            owners = dict(self._owner)
        return [(owners.get(s.id, "-"), s) for s in self.book.all()]

    def get(self, sid: str, key: Key) -> OpenSession:
        """The open session `sid` if `key`'s tenant owns it (404 otherwise, 410 if ended)."""
        with self._lock:
            owner = self._owner.get(sid)
        if owner != key.tenant:
            raise SessionNotFound(f"no open session {quoted(sid)}")
        return self.book.get(sid)


async def fork_admitted(
    owners: SessionOwners, quotas: QuotaBook, key: Key, sid: str, n: object
) -> list[OpenSession]:
    """Fork the tenant's session `sid` into `n`, checked first (`n` from 1 to the policy's
    `sessions.max_open`, the session the tenant's, room for `n` more under its cap) and
    counted as `n` container starts by its quotas, like `n` opens (the HTTP route and the MCP
    tool)."""
    count = check_count(n, owners.sandbox.policy.sessions.max_open)
    owners.get(sid, key)  # 404 or 410 before anything is counted
    owners.check_room(key, count)
    with contextlib.ExitStack() as admitted:
        for _ in range(count):
            admitted.enter_context(quotas.admit(key.tenant, key.quotas))
        return await anyio.to_thread.run_sync(owners.fork, sid, key, count)


class SessionRoutes:
    """The handlers; `answer` runs a call within the tenant's quotas in a worker thread with
    the service's slots and metrics (JSON or server-sent events, as for a run), `body` reads a
    request body within the key's cap."""

    def __init__(
        self,
        sandbox: Sandbox,
        quotas: QuotaBook,
        body: Body,
        answer: Answer,
        book: Sessions | None = None,
    ) -> None:
        self.sandbox = sandbox
        self.quotas = quotas
        self.body = body
        self.answer = answer
        self.owners = SessionOwners(sandbox, book)

    async def open(self, request: Request, key: Key) -> Response:
        data = await self._json(request, key)
        unknown = sorted(set(data) - set(OPEN_FIELDS))
        if unknown:
            raise InputError(
                f"unknown field {quoted(unknown[0])} (fields: {', '.join(OPEN_FIELDS)})"
            )
        language, options = self.owners.asked(key, data)  # before the quota counts it
        with self.quotas.admit(key.tenant, key.quotas):  # a container start, like a run
            session = await anyio.to_thread.run_sync(
                lambda: self.owners.open(key, language, options)
            )
        return JSONResponse(session.info(), status_code=201)

    async def index(self, request: Request, key: Key) -> Response:
        return JSONResponse({"sessions": [s.info() for s in self.owners.mine(key)]})

    async def show(self, request: Request, key: Key) -> Response:
        try:
            return JSONResponse(self._get(request, key).info())
        except (SessionNotFound, SessionClosed) as exc:  # a paused one is the tenant's too
            sid = str(request.path_params["session"])
            try:
                paused = await anyio.to_thread.run_sync(self.owners.paused, sid, key)
            except SessionNotFound:
                raise exc from None
            return JSONResponse(paused)

    async def pause(self, request: Request, key: Key) -> Response:
        sid = str(request.path_params["session"])
        with self.quotas.admit(key.tenant, key.quotas):  # a call into the container
            paused = await anyio.to_thread.run_sync(self.owners.pause, sid, key)
        return JSONResponse(paused.info(self.sandbox.session_store.keep_s))

    async def resume(self, request: Request, key: Key) -> Response:
        sid = str(request.path_params["session"])
        self.owners.check_room(key)  # before the quota counts it
        with self.quotas.admit(key.tenant, key.quotas):  # a container start, like an open
            session = await anyio.to_thread.run_sync(self.owners.resume, sid, key)
        return JSONResponse(session.info(), status_code=201)

    async def fork(self, request: Request, key: Key) -> Response:
        sid = str(request.path_params["session"])
        body = await self.body(request, key.quotas.max_request_bytes)
        data = parse_body(body) if body.strip() else {}  # no body: one fork
        if set(data) - {"n"}:
            raise InputError("give 'n' (only): how many sessions to fork, 1 by default")
        forks = await fork_admitted(self.owners, self.quotas, key, sid, data.get("n", 1))
        return JSONResponse({"sessions": [fork.info() for fork in forks]}, status_code=201)

    async def close(self, request: Request, key: Key) -> Response:
        session = self._get(request, key)
        await anyio.to_thread.run_sync(session.close)
        return JSONResponse({"id": session.id, "ended": session.ended})

    async def run(self, request: Request, key: Key) -> Response:
        session = self._get(request, key)
        data = await self._json(request, key)
        check_fields(data, CALL_FIELDS)
        code, _, options = run_arguments(data, key, self.sandbox.policy)
        options = {name: value for name, value in options.items() if name in CALL_OPTIONS}
        prepared: ExecutionRequest = session.request(code, **options)  # bad input: 400 here
        return await self.answer(request, key, prepared, session)

    async def upload(self, request: Request, key: Key) -> Response:
        session = self._get(request, key)
        data = await self._json(request, key)
        if set(data) - {"files", "files_base64"} or not data:
            raise InputError("give 'files' (name -> text) and/or 'files_base64' (name -> base64)")
        _, _, options = run_arguments({**data, "code": ""}, key, self.sandbox.policy)
        files = options.get("files")
        if not isinstance(files, dict):
            raise InputError("field 'files' must be an object of file name -> text")
        with self.quotas.admit(key.tenant, key.quotas):
            await anyio.to_thread.run_sync(lambda: session.upload(files))
        return JSONResponse({"uploaded": sorted(files)})

    async def download(self, request: Request, key: Key) -> Response:
        session = self._get(request, key)
        names = request.query_params.getlist("name")
        with self.quotas.admit(key.tenant, key.quotas):
            got = await anyio.to_thread.run_sync(lambda: session.download(names))
        encoded = {name: base64.b64encode(data).decode("ascii") for name, data in got.items()}
        return JSONResponse({"files_base64": encoded})

    async def install(self, request: Request, key: Key) -> Response:
        session = self._get(request, key)
        data = await self._json(request, key)
        if set(data) != {"packages"}:
            raise InputError("give 'packages' (only): a list of requirements like 'six==1.17.0'")
        asked = data["packages"]
        with self.quotas.admit(key.tenant, key.quotas):  # a download and a call
            done = await anyio.to_thread.run_sync(lambda: session.install(asked))
        return JSONResponse(done.to_dict())

    def _get(self, request: Request, key: Key) -> OpenSession:
        return self.owners.get(str(request.path_params["session"]), key)

    async def _json(self, request: Request, key: Key) -> dict[str, Any]:
        return parse_body(await self.body(request, key.quotas.max_request_bytes))


# the protocols they implement (service/protocols.py), checked by mypy
_SESSIONS: type[Sessions] = LocalSessions
_OPEN_SESSION: type[OpenSession] = Session
