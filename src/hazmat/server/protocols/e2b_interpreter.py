"""An E2B sandbox's own requests (server/protocols/e2b.py): its code interpreter's `/execute`
and `/contexts`, and envd's `/health`.

`/execute` runs the code as a call of the context's hazmat session (the pipeline: assessed,
the sandbox's key's level and caller, audited, its quotas) and answers E2B's NDJSON: the call's
stdout and stderr, each display as a `result` (`png`, `svg`, `html`, `text`, `json`,
`markdown`, ...; in Python the value of the cell's last line is the main result, as Jupyter's
execute_result, not printed: `final_value`), the exception as `error` (`name`, `value`,
`traceback`, as Jupyter gives them) or, for a limit the call hit, hazmat's sentence under the
outcome's name, the context's count of executions, and hazmat's notes last, on stderr.
stdout comes as the program prints it; the rest once the call has ended (`Lines`). One JSON
object a line, ASCII only: the SDK reads every line as JSON and splits lines on every Unicode
line separator.
"""

from __future__ import annotations

import codecs
import json
import time
from collections.abc import Awaitable, Callable, Mapping
from contextlib import ExitStack
from typing import Any

import anyio
import anyio.abc
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import Send

from hazmat._exceptions import HazmatError, InputError, quoted
from hazmat.backends.container.settings_check import WORKDIR
from hazmat.displays import bundle_to_json
from hazmat.languages import get_language
from hazmat.models import ExecutionResult, Outcome
from hazmat.server.protocols import Service, json_object
from hazmat.server.protocols.e2b_sandboxes import (
    Book,
    Context,
    E2bSandbox,
    NotFound,
    new_id,
    strings,
)
from hazmat.server.sse import GONE, OutputStream, Writer
from hazmat.service.protocols import OpenSession
from hazmat.watch import Watch

__all__ = ["Interpreter", "open_context"]

NAME = "e2b"
JUPYTER_PORT = "49999"
# hazmat's display types -> the `result` field E2B's SDK reads
RESULT_FIELDS: Mapping[str, str] = {
    "text/plain": "text",
    "text/html": "html",
    "text/markdown": "markdown",
    "text/latex": "latex",
    "image/svg+xml": "svg",
    "image/png": "png",
    "image/jpeg": "jpeg",
    "application/pdf": "pdf",
    "application/json": "json",
}


def open_context(sandbox: E2bSandbox, session: OpenSession, language: str) -> Context:
    """Add `session` to `sandbox` as a context of `language` (its language's default context
    when it has none yet)."""
    context = Context(new_id(), language, WORKDIR, session)
    sandbox.contexts[context.id] = context
    sandbox.default.setdefault(language, context.id)
    return context


class Interpreter:
    """The code interpreter's routes and envd's health."""

    def __init__(self, service: Service, book: Book) -> None:
        self.service = service
        self.book = book

    async def health(self, request: Request) -> Response:
        """envd's health: 204 while the sandbox runs, 502 once it has ended (the SDK's
        `is_running()` is False on a 502)."""
        try:
            sandbox = self._sandbox(request)
        except NotFound as exc:
            return JSONResponse({"code": 502, "message": f"{exc}: it was not found"}, 502)
        if sandbox.paused:
            message = f"sandbox {sandbox.id} is paused"
            return JSONResponse({"code": 502, "message": message}, 502)
        return Response(status_code=204)

    async def execute(self, request: Request) -> Response:
        try:
            sandbox = self._running(request)
            data = json_object(await self.service.read_body(request, sandbox.key), empty=True)
            code = data.get("code")
            if not isinstance(code, str):
                raise InputError("field 'code' must be the code to run, a string")
            context = await self._context(sandbox, data)
            env = {**sandbox.env, **strings(data, "env_vars")}
            if context.session is None:  # its resume is under way
                raise InputError(f"sandbox {sandbox.id} is paused: connect to it first")
            asked: dict[str, Any] = {"env": env} if env else {}
            if context.language == "python":  # its last line's value as the main result
                asked["final_value"] = "result"
            session = context.session
            prepared = session.request(code, **asked)
            key = sandbox.key
            admitted = ExitStack()  # until the stream has ended
            admitted.enter_context(self.service.quotas.admit(key.tenant, key.quotas))
        except HazmatError as exc:
            return self._refused(exc)
        self.service.counted(NAME, 200)

        def run(watch: Watch) -> Awaitable[ExecutionResult]:
            return self.service.run_in(prepared, session, watch)

        return Lines(run, admitted.close, context)

    async def contexts(self, request: Request) -> Response:
        """GET: the sandbox's contexts; POST: a new one (`language`, default Python)."""
        try:
            sandbox = self._sandbox(request)
            if request.method == "GET":
                return JSONResponse([c.wire() for c in sandbox.contexts.values()])
            sandbox = self._running(request)
            data = json_object(await self.service.read_body(request, sandbox.key), empty=True)
            if data.get("cwd") not in (None, WORKDIR):
                raise InputError(
                    f"cwd {quoted(data['cwd'])} is not built: a context's working directory "
                    f"is {WORKDIR}"
                )
            context = await self._open(sandbox, _language(data.get("language")))
        except HazmatError as exc:
            return self._refused(exc)
        return JSONResponse(context.wire())

    async def restart(self, request: Request) -> Response:
        """A context's session closed and a new one opened in its place (its variables and
        files gone), under the same id."""
        try:
            sandbox = self._running(request)
            context = _known(sandbox, str(request.path_params["cid"]))
            old = context.session
            fresh = await self._session(sandbox, context.language)
            context.session, context.executions = fresh, 0
            if old is not None:
                await anyio.to_thread.run_sync(old.close)
        except HazmatError as exc:
            return self._refused(exc)
        return Response(status_code=204)

    async def remove(self, request: Request) -> Response:
        try:
            sandbox = self._sandbox(request)
            context = _known(sandbox, str(request.path_params["cid"]))
            del sandbox.contexts[context.id]
            sandbox.default = {k: v for k, v in sandbox.default.items() if v != context.id}
            if context.session is not None:
                await anyio.to_thread.run_sync(context.session.close)
        except HazmatError as exc:
            return self._refused(exc)
        return Response(status_code=204)

    def _sandbox(self, request: Request) -> E2bSandbox:
        """The sandbox the request names, if it carries that sandbox's token (the code
        interpreter's traffic token on its port, envd's access token on envd's)."""
        sid = request.headers.get("e2b-sandbox-id", "")
        sandbox = self.book.get(sid, None)
        traffic = request.headers.get("e2b-sandbox-port") == JUPYTER_PORT
        header = "e2b-traffic-access-token" if traffic else "x-access-token"
        if not sandbox.token_matches(request.headers.get(header), traffic):
            raise NotFound(f"sandbox {quoted(sid)} not found")
        return sandbox

    def _running(self, request: Request) -> E2bSandbox:
        """`_sandbox`, which must not be paused (its contexts have no session till then)."""
        sandbox = self._sandbox(request)
        if sandbox.paused:
            raise InputError(f"sandbox {sandbox.id} is paused: connect to it first")
        return sandbox

    async def _context(self, sandbox: E2bSandbox, data: Mapping[str, Any]) -> Context:
        """The context a run names (`context_id`), else its language's default context, made
        for it when the sandbox has none of that language yet."""
        cid = data.get("context_id")
        if cid is not None:
            if data.get("language") is not None:
                raise InputError("give context_id or language, not both")
            return _known(sandbox, str(cid))
        language = _language(data.get("language"))
        default = sandbox.default.get(language)
        if default is not None and default in sandbox.contexts:
            return sandbox.contexts[default]
        return await self._open(sandbox, language)

    async def _open(self, sandbox: E2bSandbox, language: str) -> Context:
        return open_context(sandbox, await self._session(sandbox, language), language)

    async def _session(self, sandbox: E2bSandbox, language: str) -> OpenSession:
        owners, key = self.service.owners, sandbox.key
        fields = {"language": language, "trust": sandbox.trust.value}
        if language == sandbox.made_from.language and sandbox.made_from.image:
            fields["image"] = sandbox.made_from.image
        asked, options = owners.asked(key, fields)
        with self.service.quotas.admit(key.tenant, key.quotas):  # a container's start
            return await anyio.to_thread.run_sync(owners.open, key, asked, options)

    def _refused(self, exc: HazmatError) -> Response:
        """A refusal as the SDK shows it: its status, and hazmat's sentence as the body."""
        self.service.counted(NAME, exc.http_status)
        return Response(str(exc), status_code=exc.http_status, media_type="text/plain")


class Lines(OutputStream):
    """A call's NDJSON as it runs: its stdout as the program prints it, the rest once it has
    ended (its stderr then, without the traceback that comes as `error`). No line is sent to
    keep the connection: the SDK reads every line as JSON."""

    media_type = "application/x-ndjson"

    def __init__(
        self,
        run: Callable[[Watch], Awaitable[ExecutionResult]],
        release: Callable[[], object],
        context: Context,
    ) -> None:
        super().__init__(run, release)
        self.context = context

    async def _relay(
        self, events: anyio.abc.ObjectReceiveStream[tuple[str, Any]], send: Send, watch: Watch
    ) -> None:
        writer = Writer(send, self.send_timeout_s)
        await writer.start(self.raw_headers)
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        sent = ""  # the stdout sent as it came
        async with events:
            while True:
                try:
                    kind, value = await events.receive()
                except anyio.EndOfStream:
                    break
                if kind == "stdout":
                    text = decoder.decode(value)
                    sent += text
                    await writer.write(_stdout(text))
                elif kind == "result":
                    sent += decoder.decode(b"", True)
                    self.context.executions += 1
                    await writer.write(ndjson(value, self.context.executions, sent))
                elif kind == "error":  # a HazmatError from the pipeline: no result
                    failed = {"name": type(value).__name__, "value": str(value), "traceback": ""}
                    await writer.write(_encoded([{"type": "error", **failed}]))
                if writer.gone:
                    watch.cancel(GONE)
            await writer.close()


def ndjson(result: ExecutionResult, executions: int, sent: str = "") -> bytes:
    """The call's lines, as E2B's `/execute` gives them, after `sent`, the stdout already sent
    as it came (a backend that does not hand output over as it comes sent none)."""
    stamp = time.time_ns()
    lines: list[dict[str, Any]] = []
    stderr = _without_traceback(result)
    rest = result.stdout[len(sent) :] if result.stdout.startswith(sent) else ""
    printed = (("stdout", rest), ("stderr", stderr))
    for kind, text in printed:
        if text:
            lines.append({"type": kind, "text": text, "timestamp": stamp})
    lines += [
        {"type": "result", **_result(bundle, n == result.result_display)}
        for n, bundle in enumerate(result.displays)
    ]
    error = _error(result)
    if error is not None:
        lines.append({"type": "error", **error})
    lines.append({"type": "number_of_executions", "execution_count": executions})
    if result.notes:
        said = "".join(f"hazmat: {note}\n" for note in result.notes)
        lines.append({"type": "stderr", "text": said, "timestamp": stamp})
    return _encoded(lines)


def _stdout(text: str) -> bytes:
    if not text:
        return b""
    return _encoded([{"type": "stdout", "text": text, "timestamp": time.time_ns()}])


def _encoded(lines: list[dict[str, Any]]) -> bytes:
    return b"".join(json.dumps(line, ensure_ascii=True).encode() + b"\n" for line in lines)


def _result(bundle: Mapping[str, bytes | str], main: bool) -> dict[str, Any]:
    """A display as E2B's `result`; `main`: the value of the cell's last line."""
    shown = bundle_to_json(bundle)
    found: dict[str, Any] = {"is_main_result": main}
    for mime, data in shown.items():
        name = RESULT_FIELDS.get(mime)
        if name == "json":
            try:
                found["json"] = json.loads(data)
            except ValueError:
                continue
        elif name is not None:
            found[name] = data
    return found


def _error(result: ExecutionResult) -> dict[str, str] | None:
    """The exception as Jupyter gives it (its traceback ends with `Name: value`), or, for a
    limit the call hit or a refusal, hazmat's sentence under the outcome's name."""
    exc = result.exception
    if exc is not None:
        last = f"{exc.name}: {exc.value}" if exc.value else exc.name
        return {"name": exc.name, "value": exc.value, "traceback": f"{exc.traceback}\n{last}"}
    if result.outcome is Outcome.OK:
        return None
    return {"name": result.outcome.value, "value": result.error or "", "traceback": ""}


def _without_traceback(result: ExecutionResult) -> str:
    """stderr up to the exception's traceback, which comes as `error` instead."""
    stderr, exc = result.stderr, result.exception
    if exc is None or not exc.traceback:
        return stderr
    at = stderr.rfind(exc.traceback)
    return stderr[:at] if at >= 0 else stderr


def _known(sandbox: E2bSandbox, cid: str) -> Context:
    context = sandbox.contexts.get(cid)
    if context is None:
        raise NotFound(f"context {quoted(cid)} not found in sandbox {sandbox.id}")
    return context


def _language(value: object) -> str:
    """A context's language (E2B's names are hazmat's: `python`, `javascript`, `bash`, `r`,
    `java`, ...); Python when none is given."""
    if value is None:
        return "python"
    if not isinstance(value, str):
        raise InputError(f"language must be a language's name, not {quoted(value)}")
    return get_language(value).name
