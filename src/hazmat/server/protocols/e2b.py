"""E2B's protocol under `/e2b`, for its SDKs as they are (`e2b` and `e2b-code-interpreter` 2.x,
with `E2B_API_URL` and `E2B_SANDBOX_URL` both set to the service's URL and `/e2b`, and a hazmat
key as `E2B_API_KEY`): docs/e2b.md.

The control plane (`/v2/sandboxes`, `/sandboxes/<id>`...) takes the key as `X-API-KEY`; a
sandbox's own requests (its code interpreter's `/execute` and `/contexts`, envd's `/health`)
come to the same URL with `E2b-Sandbox-Id` and `E2b-Sandbox-Port` and carry the sandbox's own
token instead (envd's `X-Access-Token`; the interpreter's `E2B-Traffic-Access-Token`, which the
SDK sends on every one of its requests). Another tenant's sandbox, a wrong token and an id that
never was are the same 404. Errors on the control plane are E2B's `{"code", "message"}` with
hazmat's sentence as the message, which the SDK puts in its exception.

What is built: create (a template of the policy's `sessions.templates`), list (metadata and
state filters, paging), get_info, kill, set_timeout, pause and connect (resume); the code
interpreter (e2b_interpreter.py). Not built (a 404 that says so, never a 5xx): envd's process and
filesystem services, `/files`, PTY, volumes, network rules, metrics.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl, unquote

import anyio
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from hazmat._exceptions import HazmatError, InfraError, InputError, quoted
from hazmat.policy import SessionTemplate
from hazmat.server.protocols import Service, json_object, key_of
from hazmat.server.protocols.e2b_interpreter import Interpreter, open_context
from hazmat.server.protocols.e2b_sandboxes import (
    DEFAULT_TIMEOUT_S,
    Book,
    E2bSandbox,
    new_id,
    now,
    strings,
)
from hazmat.service.tenant_keys import Key

__all__ = ["NAME", "PREFIX", "routes"]

PREFIX = "/e2b"
NAME = "e2b"
SWEEP_S = 1.0  # how often sandboxes past their timeout are ended
PAGE = 100  # sandboxes per page of a list, when the client asks for no `limit`
# create's fields hazmat takes; the others it refuses, naming what is not built
TAKEN = {"templateID", "timeout", "metadata", "envVars", "autoPause", "allow_internet_access",
         "secure"}
ALL_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"]


def routes(service: Service) -> list[Route]:
    e2b = E2b(service)
    code = Interpreter(service, e2b.book)
    sandbox = f"{PREFIX}/sandboxes/{{sid}}"
    return [
        Route(f"{PREFIX}/v2/sandboxes", e2b.create, methods=["POST"]),
        Route(f"{PREFIX}/v2/sandboxes", e2b.list, methods=["GET"]),
        Route(sandbox, e2b.info, methods=["GET"]),
        Route(sandbox, e2b.kill, methods=["DELETE"]),
        Route(f"{sandbox}/timeout", e2b.set_timeout, methods=["POST"]),
        Route(f"{sandbox}/pause", e2b.pause, methods=["POST"]),
        Route(f"{PREFIX}/v2/sandboxes/{{sid}}/connect", e2b.connect, methods=["POST"]),
        Route(f"{PREFIX}/health", code.health, methods=["GET"]),
        Route(f"{PREFIX}/execute", code.execute, methods=["POST"]),
        Route(f"{PREFIX}/contexts", code.contexts, methods=["GET", "POST"]),
        Route(f"{PREFIX}/contexts/{{cid}}/restart", code.restart, methods=["POST"]),
        Route(f"{PREFIX}/contexts/{{cid}}", code.remove, methods=["DELETE"]),
        Route(f"{PREFIX}/{{rest:path}}", e2b.not_built, methods=ALL_METHODS),
    ]


class E2b:
    """The control plane: a tenant's sandboxes, made, listed, timed, paused and ended."""

    def __init__(self, service: Service) -> None:
        self.service = service
        self.book = Book()
        self._sweeping = False

    async def create(self, request: Request) -> Response:
        try:
            key = self._key(request)
            data = json_object(await self.service.read_body(request, key), empty=True)
            template_id, template = self._template(data)
            timeout_s = self._timeout(data.get("timeout", DEFAULT_TIMEOUT_S))
            owners = self.service.owners
            fields = {"language": template.language, "image": template.image,
                      "trust": template.trust.value if template.trust else None}
            language, options = owners.asked(key, {k: v for k, v in fields.items() if v})
            limits = self.service.policy.settings(options["trust"]).limits
            sandbox = E2bSandbox(
                new_id(), key, options["trust"], template_id, template,
                strings(data, "metadata"), strings(data, "envVars"), now(), now() + timeout_s,
                limits.memory_mb, limits.cpus,
            )
            with self.service.quotas.admit(key.tenant, key.quotas):  # a container's start
                session = await anyio.to_thread.run_sync(owners.open, key, language, options)
            open_context(sandbox, session, language)
        except HazmatError as exc:
            return self._refused(exc)
        self.book.add(sandbox)
        self._sweep_soon()
        return self._answer(sandbox.created(), 201)

    async def list(self, request: Request) -> Response:
        try:
            key = self._key(request)
            wanted = _metadata_filter(request.query_params.get("metadata"))
            states = set((request.query_params.get("state") or "running,paused").split(","))
            mine = [
                s for s in self.book.of(key.tenant)
                if s.state in states and all(s.metadata.get(k) == v for k, v in wanted.items())
            ]
            start = _whole(request.query_params.get("nextToken"), "nextToken", 0)
            limit = _whole(request.query_params.get("limit"), "limit", PAGE) or PAGE
        except HazmatError as exc:
            return self._refused(exc)
        page = mine[start : start + limit]
        more = start + limit < len(mine)
        headers = {"x-next-token": str(start + limit)} if more else {}
        return self._answer([s.listed() for s in page], 200, headers)

    async def info(self, request: Request) -> Response:
        try:
            sandbox = self._mine(request)
        except HazmatError as exc:
            return self._refused(exc)
        return self._answer(sandbox.detail(), 200)

    async def kill(self, request: Request) -> Response:
        try:
            sandbox = self._mine(request)
        except HazmatError as exc:
            return self._refused(exc)
        await self._end(sandbox)
        return self._answer(None, 204)

    async def set_timeout(self, request: Request) -> Response:
        try:
            sandbox = self._mine(request)
            data = json_object(await self.service.read_body(request, sandbox.key), empty=True)
            if "timeout" not in data:
                raise InputError("field 'timeout' is required (seconds from now)")
            sandbox.ends = now() + self._timeout(data["timeout"])
        except HazmatError as exc:
            return self._refused(exc)
        return self._answer(None, 204)

    async def pause(self, request: Request) -> Response:
        try:
            sandbox = self._mine(request)
            if sandbox.paused:
                raise _Conflict(f"sandbox {sandbox.id} is already paused")
            pause = self.service.owners.pause
            sandbox.pausing = True  # the sweep must not take its ending sessions for its end
            try:
                for context in list(sandbox.contexts.values()):
                    session = context.session
                    if session is not None:
                        await anyio.to_thread.run_sync(pause, session.id, sandbox.key)
                        sandbox.paused[context.id], context.session = session.id, None
            finally:
                sandbox.pausing = False
        except HazmatError as exc:
            return self._refused(exc)
        return self._answer(None, 204)

    async def connect(self, request: Request) -> Response:
        """Connect to a sandbox: a paused one is resumed first (its sessions in new
        containers); `timeout` moves its end as set_timeout does."""
        try:
            sandbox = self._mine(request)
            data = json_object(await self.service.read_body(request, sandbox.key), empty=True)
            if "timeout" in data:
                sandbox.ends = now() + self._timeout(data["timeout"])
            resumed = bool(sandbox.paused)
            for cid, sid in list(sandbox.paused.items()):
                with self.service.quotas.admit(sandbox.key.tenant, sandbox.key.quotas):
                    session = await anyio.to_thread.run_sync(
                        self.service.owners.resume, sid, sandbox.key
                    )
                sandbox.contexts[cid].session = session
                del sandbox.paused[cid]
        except HazmatError as exc:
            return self._refused(exc)
        return self._answer(sandbox.created(), 201 if resumed else 200)

    async def not_built(self, request: Request) -> Response:
        path = request.path_params.get("rest", "")
        message = (
            f"{request.method} /{path} is not built in hazmat's E2B protocol: envd's process "
            "and filesystem services, /files, PTY, volumes and metrics are not (docs/e2b.md)"
        )
        self.service.counted(NAME, 404)
        return JSONResponse({"code": 404, "message": message}, status_code=404)

    def _key(self, request: Request) -> Key:
        how = "set E2B_API_KEY to a hazmat key (the SDK sends it as X-API-KEY)"
        return key_of(request, self.service.keys, request.headers.get("x-api-key"), how)

    def _mine(self, request: Request) -> E2bSandbox:
        key = self._key(request)
        return self.book.get(str(request.path_params["sid"]), key.tenant)

    def _template(self, data: Mapping[str, Any]) -> tuple[str, SessionTemplate]:
        unknown = sorted(set(data) - TAKEN)
        if unknown or data.get("autoPause") or data.get("allow_internet_access"):
            what = unknown[0] if unknown else (
                "autoPause" if data.get("autoPause") else "allow_internet_access"
            )
            raise InputError(
                f"field {quoted(what)} is not built in hazmat's E2B protocol (docs/e2b.md); "
                "hazmat's sandboxes have no network but through its allowlist proxy"
            )
        name = data.get("templateID")
        templates = self.service.policy.sessions.templates
        if not isinstance(name, str) or name not in templates:
            known = ", ".join(sorted(templates)) or "none"
            raise InputError(
                f"unknown template {quoted(name)} (this service's templates: {known}; a "
                "policy names more with sessions.templates)"
            )
        return name, templates[name]

    def _timeout(self, value: object) -> float:
        most = self.service.policy.sessions.lifetime_s
        if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
            raise InputError(f"timeout must be a positive number of seconds, not {quoted(value)}")
        if value > most:
            raise InputError(
                f"timeout {value:g} s is over the longest a session may live here, {most:g} s "
                "(policy key sessions.lifetime_s)"
            )
        return float(value)

    def _sweep_soon(self) -> None:
        """End sandboxes past their timeout in the background, from the first one on."""
        if not self._sweeping:
            self._sweeping = True
            self.service.spawn(self._sweep)

    async def _sweep(self) -> None:
        while True:
            for sandbox in self.book.due(now()):
                await self._end(sandbox)
            await anyio.sleep(SWEEP_S)

    async def _end(self, sandbox: E2bSandbox) -> None:
        """Close the sandbox's sessions (and remove those it holds paused); its id is then
        unknown."""
        if not self.book.remove(sandbox):
            return
        for session in list(sandbox.sessions()):
            await anyio.to_thread.run_sync(session.close)
        for sid in sandbox.paused.values():
            with contextlib.suppress(HazmatError):  # the store's own sweep took it already
                await anyio.to_thread.run_sync(
                    self.service.owners.discard_paused, sid, sandbox.key
                )

    def _refused(self, exc: HazmatError) -> Response:
        status = exc.http_status
        # the SDK retries 429, 502, 503 and 504 three times unless told not to: a refusal that
        # another try cannot change (an engine or image missing) is said once
        headers = {"Should-Retry": "false"} if isinstance(exc, InfraError) else None
        self.service.counted(NAME, status)
        return JSONResponse({"code": status, "message": str(exc)}, status, headers=headers)

    def _answer(
        self, body: object, status: int, headers: Mapping[str, str] | None = None
    ) -> Response:
        self.service.counted(NAME, status)
        if body is None:
            return Response(status_code=status, headers=headers)
        return JSONResponse(body, status, headers=headers)


class _Conflict(InputError):
    http_status = 409


def _metadata_filter(value: str | None) -> dict[str, str]:
    """The SDK's `metadata` query: `k=v&k2=v2` sent as one value, each part quoted once more."""
    if not value:
        return {}
    return {unquote(k): unquote(v) for k, v in parse_qsl(value, keep_blank_values=True)}


def _whole(value: str | None, name: str, default: int) -> int:
    if value is None or value == "":
        return default
    if not value.isdigit() or len(value) > 9:
        raise InputError(f"{name} must be a whole number, not {quoted(value)}")
    return int(value)

