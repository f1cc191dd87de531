"""The HTTP API: a Starlette app over one `Sandbox` (docs/api.md, docs/openapi.json).

Each endpoint is a thin layer over the pipeline: the key is checked first (no key, no run, and
no body read), the body is read up to the key's cap (413 as soon as it is over, from the
Content-Length alone when there is one), the tenant's quota admits the run or answers 429 with
Retry-After, and the run itself goes through `Sandbox.execute` in a worker thread, at most
`max_running` at once. Errors are hazmat's own exceptions, mapped by their `http_status`. A
run asked for with `Accept: text/event-stream` is answered as server-sent events (sse.py).
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from contextlib import ExitStack, asynccontextmanager
from typing import Any

import anyio
import anyio.abc
import anyio.to_thread
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from hazmat._exceptions import (
    AccessDenied,
    HazmatError,
    InputError,
    InputTooLarge,
    QuotaExceeded,
    RequestTimeout,
)
from hazmat.assess.decision import decide
from hazmat.models import ExecutionRequest, ExecutionResult
from hazmat.policy import Policy
from hazmat.sandbox import Sandbox
from hazmat.server.batches import BatchRoutes
from hazmat.server.console import Console, ConsoleParts, RecentRuns, console_routes
from hazmat.server.executor import Direct, LocalExecutor
from hazmat.server.fields import (
    ASSESS_FIELDS,
    check_depth,
    parse_body,
    run_arguments,
    trust_for,
)
from hazmat.server.guard import CloseUnread
from hazmat.server.openapi import OPENAPI
from hazmat.server.prometheus import ServiceMetrics
from hazmat.server.protocols import e2b, judge0, piston, sandbox_fusion
from hazmat.server.session_routes import SessionOwners, SessionRoutes
from hazmat.server.sse import EventStream, wants_events
from hazmat.service.protocols import Executor, OpenSession, Reservation, Sessions
from hazmat.service.quotas import QuotaBook
from hazmat.service.tenant_keys import Key, KeyStore
from hazmat.service.wire import check_fields, result_to_wire
from hazmat.watch import Watch

__all__ = ["create_app"]

Handler = Callable[[Request], Awaitable[Response]]
Body = Callable[[Request, int], Awaitable[bytes]]
BODY_TIMEOUT_S = 30.0  # the default; `hazmat serve --body-timeout`


def create_app(
    sandbox: Sandbox,
    keys: KeyStore,
    max_running: int = 8,
    executor: Executor | None = None,
    quotas: QuotaBook | None = None,
    body_timeout_s: float = BODY_TIMEOUT_S,
    *,
    sessions: Sessions | None = None,
) -> Starlette:
    """The service's ASGI app. The sandbox stays the caller's: the app never closes it. Runs
    (not session calls) go to `executor` (default: the sandbox itself; the cluster's workers
    with `hazmat serve --redis`), sessions to `sessions` (default: the sandbox's own; the
    cluster's workers likewise); `quotas` (default: counted in this process) may be a
    cluster-wide book; a request body must have arrived within `body_timeout_s` (else 408)."""
    body = functools.partial(_body, timeout_s=body_timeout_s)
    executor = executor or LocalExecutor(sandbox)
    service = _Service(
        sandbox, keys, max_running, executor, quotas or QuotaBook(), body, sessions=sessions
    )
    mcp_endpoint = service.mcp_endpoint()
    routes = [
        Route("/v1/health", service.health, methods=["GET"]),
        Route("/v1/openapi.json", service.openapi, methods=["GET"]),
        Route("/v1/runs", service.endpoint("runs", service.run), methods=["POST"]),
        Route("/v1/assess", service.endpoint("assess", service.assess), methods=["POST"]),
        *_session_routes(service),
        *_batch_routes(service),
        *sandbox_fusion.routes(service),
        *piston.routes(service),
        *judge0.routes(service),
        *e2b.routes(service),
        Route("/metrics", service.endpoint("metrics", service.metrics_text), methods=["GET"]),
        Route("/mcp", mcp_endpoint, methods=["GET", "POST", "DELETE"]),
        *service.console(),
    ]
    handlers: dict[Any, Any] = {HazmatError: _error, HTTPException: _http_error}
    app = Starlette(
        routes=routes,
        exception_handlers=handlers,
        lifespan=service.lifespan,
        middleware=[Middleware(CloseUnread)],
    )
    app.state.wait_idle = service.wait_idle  # serve.py: before the sandbox closes
    return app


def _batch_routes(service: _Service) -> list[Route]:
    b, at = service.batches, "/v1/batches/{batch}"
    return [
        Route("/v1/batches", service.endpoint("batches", b.create), methods=["POST"]),
        Route("/v1/batches", service.endpoint("batches", b.index), methods=["GET"]),
        Route(at, service.endpoint("batches", b.show), methods=["GET"]),
        Route(at, service.endpoint("batches", b.cancel), methods=["DELETE"]),
        Route(f"{at}/results", service.endpoint("batch_results", b.results), methods=["GET"]),
    ]


def _session_routes(service: _Service) -> list[Route]:
    s, at = service.sessions, "/v1/sessions/{session}"
    return [
        Route("/v1/sessions", service.endpoint("sessions", s.open), methods=["POST"]),
        Route("/v1/sessions", service.endpoint("sessions", s.index), methods=["GET"]),
        Route(at, service.endpoint("sessions", s.show), methods=["GET"]),
        Route(at, service.endpoint("sessions", s.close), methods=["DELETE"]),
        Route(f"{at}/runs", service.endpoint("session_runs", s.run), methods=["POST"]),
        Route(f"{at}/files", service.endpoint("session_files", s.upload), methods=["PUT"]),
        Route(f"{at}/files", service.endpoint("session_files", s.download), methods=["GET"]),
        Route(f"{at}/packages", service.endpoint("session_runs", s.install), methods=["POST"]),
        Route(f"{at}/pause", service.endpoint("sessions", s.pause), methods=["POST"]),
        Route(f"{at}/resume", service.endpoint("sessions", s.resume), methods=["POST"]),
        Route(f"{at}/fork", service.endpoint("sessions", s.fork), methods=["POST"]),
    ]


class _Service:
    def __init__(
        self,
        sandbox: Sandbox,
        keys: KeyStore,
        max_running: int,
        executor: Executor,
        quotas: QuotaBook,
        body: Body,
        *,
        sessions: Sessions | None = None,
    ) -> None:
        self.sandbox = sandbox
        self.body = body
        self.executor = executor
        self.keys = keys
        self.quotas = quotas
        self.metrics = ServiceMetrics(sandbox.metrics, sandbox.backend.tier)
        self.max_running = max_running
        self.recent = RecentRuns()  # for the console
        self._limiter: anyio.CapacityLimiter | None = None
        self._background: anyio.abc.TaskGroup | None = None  # the lifespan's (`spawn`)
        self._running = 0  # runs inside sandbox.execute now
        self._idle = threading.Condition()
        from hazmat.server.mcp_tools import build_mcp

        self.sessions = SessionRoutes(sandbox, self.quotas, body, self.answer, sessions)
        # the service's places for work in the pipeline: its runs and its batches' tasks
        self.slots = threading.BoundedSemaphore(max_running)
        self.batches = BatchRoutes(sandbox, executor, self.quotas, body, self.slots)
        owners = self.sessions.owners
        self._mcp = build_mcp(sandbox, self._mcp_key, self.quotas, self.run_in, owners)

    def wait_idle(self) -> None:
        """Block until no run is inside the pipeline. A run always ends (its own timeout is
        enforced from the host), and is recorded in full when it does, whether or not its
        client is still there to get the answer. Batches are cancelled: their running tasks
        finish first."""
        self.batches.book.stop()
        with self._idle:
            self._idle.wait_for(lambda: self._running == 0)

    @asynccontextmanager
    async def lifespan(self, app: Starlette) -> AsyncIterator[None]:
        self._limiter = anyio.CapacityLimiter(self.max_running)
        async with anyio.create_task_group() as group, self._mcp.session_manager.run():
            self._background = group
            yield
            group.cancel_scope.cancel()  # a run under way ends first (its thread is waited for)

    def mcp_endpoint(self) -> ASGIApp:
        """MCP over streamable HTTP (server/mcp_tools.py): the key is checked here before the SDK
        sees the request, and again by each tool call."""
        from hazmat.server.mcp_tools import streamable_http

        return _Guarded(self, streamable_http(self._mcp))

    def _mcp_key(self, ctx: Any) -> Key:
        """The key of the HTTP request an MCP tool call came in."""
        request = ctx.request_context.request if ctx is not None else None
        return self.keys.check(_bearer(request) if request is not None else None)

    def endpoint(
        self, name: str, handler: Callable[[Request, Key], Awaitable[Response]]
    ) -> Handler:
        """`handler` behind the key check, counted by endpoint and status."""

        async def wrapped(request: Request) -> Response:
            try:
                key = self.keys.check(_bearer(request))
                response = await handler(request, key)
            except HazmatError as exc:
                self.metrics.requests.labels(name, str(exc.http_status)).inc()
                raise
            self.metrics.requests.labels(name, str(response.status_code)).inc()
            return response

        return wrapped

    # what the other systems' protocols use (server/protocols/: `Service`)
    @property
    def policy(self) -> Policy:
        return self.sandbox.policy

    async def read_body(self, request: Request, key: Key) -> bytes:
        return await self.body(request, key.quotas.max_request_bytes)

    def prepare(self, code: str, language: str, options: dict[str, Any]) -> ExecutionRequest:
        return self.sandbox.request(code, language, **options)

    def counted(self, name: str, status: int) -> None:
        self.metrics.requests.labels(name, str(status)).inc()

    @property
    def owners(self) -> SessionOwners:
        return self.sessions.owners

    def spawn(self, work: Callable[[], Coroutine[Any, Any, None]]) -> None:
        if self._background is None:
            raise RuntimeError("the service is not running (its lifespan has not started)")
        self._background.start_soon(work)

    async def health(self, request: Request) -> Response:
        from hazmat import __version__

        return JSONResponse({"status": "ok", "version": __version__})

    async def openapi(self, request: Request) -> Response:
        return JSONResponse(OPENAPI)

    async def metrics_text(self, request: Request, key: Key) -> Response:
        return Response(self.metrics.exposition(), media_type="text/plain; version=0.0.4")

    async def run(self, request: Request, key: Key) -> Response:
        data = parse_body(await self.body(request, key.quotas.max_request_bytes))
        return await self.answer(request, key, self._prepare(key, data), None)

    def _prepare(self, key: Key, data: dict[str, Any]) -> ExecutionRequest:
        """A run's request from its JSON fields, within what `key` may ask (bad input: 400)."""
        code, language, options = run_arguments(data, key, self.sandbox.policy)
        return self.sandbox.request(code, language, **options)

    async def answer(
        self, request: Request, key: Key, prepared: ExecutionRequest, session: OpenSession | None
    ) -> Response:
        """Run `prepared` (in `session`, if given) within the tenant's quotas: one JSON body,
        or server-sent events when the client accepts them. With `?output=base64` the output
        comes exactly as written, as base64, too."""
        exact = request.query_params.get("output") == "base64"
        if wants_events(request.headers.get("accept", "")):
            admitted = ExitStack()
            admitted.enter_context(self.quotas.admit(key.tenant, key.quotas))  # 429 here
            taken: list[Reservation] = []  # a place taken as the request is cancelled is given back

            def place() -> Reservation:
                taken.append(self._reserve(prepared, session))
                return taken[0]

            try:  # placed before the stream starts: a full cluster is a plain 429 too
                reservation = await anyio.to_thread.run_sync(place)
            except BaseException:
                for reservation in taken:
                    reservation.release()
                admitted.close()
                raise
            admitted.callback(reservation.release)  # unless it was used
            run = functools.partial(self._execute, prepared, lambda: reservation)
            return EventStream(run, admitted.close, exact)
        with self.quotas.admit(key.tenant, key.quotas):
            result = await self.run_in(prepared, session)
        return JSONResponse(result_to_wire(result, exact))

    async def assess(self, request: Request, key: Key) -> Response:
        data = parse_body(await self.body(request, key.quotas.max_request_bytes))
        language = check_fields(data, ASSESS_FIELDS)
        semgrep = data.get("semgrep", False)
        if not isinstance(semgrep, bool):
            raise InputError("field 'semgrep' must be true or false")
        trust = trust_for(data.get("trust"), key)
        prepared = self.sandbox.request(data["code"], language, trust=trust)
        settings = self.sandbox.policy.settings(trust)
        with self.quotas.admit(key.tenant, key.quotas):  # a scan costs like a run (Semgrep: s)
            assessment = await anyio.to_thread.run_sync(
                functools.partial(
                    self.sandbox.assessor.assess,
                    prepared.code,
                    prepared.language,
                    semgrep=semgrep,
                    max_bytes=settings.limits.max_code_bytes,
                )
            )
        body = assessment.to_dict()
        body["decision"] = decide(assessment, settings.assess, None).value
        body["trust"] = trust.value
        return JSONResponse(body)

    async def run_in(
        self, prepared: ExecutionRequest, session: OpenSession | None, watch: Watch | None = None
    ) -> ExecutionResult:
        """Run `prepared` in `session`, or where the service's runs go; its place there (a
        cluster worker's slot) is taken once the run has its turn here (`max_running`), and
        given back whatever happens. `watch` sees its output as it comes (MCP progress)."""
        reserve = functools.partial(self._reserve, prepared, session)
        return await self._execute(prepared, reserve, watch)

    def _reserve(self, prepared: ExecutionRequest, session: OpenSession | None) -> Reservation:
        """A place for the run (blocking: the cluster asks Redis)."""
        if session is not None:
            return Direct(session.execute)
        return self.executor.reserve(prepared)

    async def _execute(
        self,
        prepared: ExecutionRequest,
        reserve: Callable[[], Reservation],
        watch: Watch | None = None,
    ) -> ExecutionResult:
        began = time.monotonic()
        started = False

        def work() -> ExecutionResult:
            nonlocal started
            started = True
            self.metrics.queued.dec()
            self.metrics.in_progress.inc()
            with self._idle:
                self._running += 1
            try:
                with self.slots:  # shared with the batches' tasks
                    reservation = reserve()
                    try:
                        return reservation.execute(prepared, on_output=watch)
                    finally:
                        reservation.release()
            finally:
                self.metrics.in_progress.dec()
                with self._idle:
                    self._running -= 1
                    self._idle.notify_all()

        self.metrics.queued.inc()
        try:
            result = await anyio.to_thread.run_sync(work, limiter=self._limiter)
        finally:
            if not started:
                self.metrics.queued.dec()
        elapsed = time.monotonic() - began
        self.metrics.ran(result, elapsed)
        self.recent.add(prepared, result, elapsed * 1000, self.sandbox.audit.size)
        return result

    async def play(self, key: Key, data: dict[str, Any]) -> ExecutionResult:
        """A console playground run: checked and run as `POST /v1/runs` would."""
        prepared = self._prepare(key, data)
        with self.quotas.admit(key.tenant, key.quotas):
            return await self.run_in(prepared, None)

    def console(self) -> list[BaseRoute]:
        parts = ConsoleParts(
            keys=self.keys,
            recent=self.recent,
            batches=self.batches.book,
            sessions=self.sessions.owners,
            quotas=self.quotas,
            audit_dir=self.sandbox.audit.dir,
            audit_append=self.sandbox.audit.append,
            audit_checkpoint=self.sandbox.audit.checkpoint,
            run=self.play,
            body=self.body,
        )
        return console_routes(Console(parts), lambda request: self.keys.check(_bearer(request)))


class _Guarded:
    """An ASGI app behind the key check (a class: Starlette would take a function for a
    request -> response endpoint)."""

    def __init__(self, service: _Service, inner: ASGIApp) -> None:
        self.service = service
        self.inner = inner

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        try:
            key = self.service.keys.check(_bearer(request))
            body = await self.service.body(request, key.quotas.max_request_bytes)  # as /v1
            check_depth(body)
        except HazmatError as exc:
            self.service.metrics.requests.labels("mcp", str(exc.http_status)).inc()
            await (await _error(request, exc))(scope, receive, send)
            return
        await self.inner(scope, _replay(body, receive), send)


def _replay(body: bytes, receive: Receive) -> Receive:
    """A `receive` that gives the body already read, then what the client sends next (its
    disconnect)."""
    given = False

    async def replayed() -> Message:
        nonlocal given
        if not given:
            given = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed


def _bearer(request: Request) -> str | None:
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" else None


def _cap_is(cap: int) -> str:
    return (
        f"this key's cap is {cap:,} bytes (its quota max_request_bytes: hazmat keys create "
        "--max-request-mb)"
    )


async def _body(request: Request, cap: int, timeout_s: float = BODY_TIMEOUT_S) -> bytes:
    """The body, never more than `cap` bytes of it in memory, all of it within `timeout_s`."""
    length = request.headers.get("content-length")
    if length is not None:
        if not (length.isascii() and length.isdigit()):  # int() takes other digits too
            raise InputError("Content-Length is not a number")
        if len(length) > 18 or int(length) > cap:  # int() of 4,301 digits is an error
            shown = f"{int(length):,}" if len(length) <= 18 else f"a {len(length)}-digit number of"
            raise InputTooLarge(f"the request body is {shown} bytes; {_cap_is(cap)}")
    chunks, total = [], 0
    with anyio.move_on_after(timeout_s) as deadline:
        async for chunk in request.stream():
            total += len(chunk)
            if total > cap:
                raise InputTooLarge(f"the request body is over the cap; {_cap_is(cap)}")
            chunks.append(chunk)
    if deadline.cancelled_caught:
        raise RequestTimeout(f"the request body did not arrive within {timeout_s:g} s")
    return b"".join(chunks)


async def _error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HazmatError)
    headers = {}
    if isinstance(exc, QuotaExceeded):
        headers["Retry-After"] = str(max(1, round(exc.retry_after_s)))
    if isinstance(exc, AccessDenied) and exc.http_status == 401:
        headers["WWW-Authenticate"] = "Bearer"
    if isinstance(exc, InputTooLarge | RequestTimeout):
        headers["Connection"] = "close"  # the rest of the body is never read
    body = {"error": {"type": type(exc).__name__, "message": str(exc)}}
    return JSONResponse(body, status_code=exc.http_status, headers=headers)


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    body = {"error": {"type": "HTTPError", "message": str(exc.detail)}}
    return JSONResponse(body, status_code=exc.status_code, headers=exc.headers)
