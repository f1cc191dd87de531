"""The pipeline as Model Context Protocol tools (the official `mcp` SDK, 2.x: `MCPServer`): over
stdio for an assistant that starts `hazmat mcp` itself, and over streamable HTTP at `/mcp` in
`hazmat serve`.

The tools are thin over the same calls as the HTTP API: `run_code` (assess, decide, execute,
verify, audit), `assess_code`, and `open_session`, `run_in_session`, `upload_files`,
`download_files`, `pause_session`, `resume_session`, `fork_session`, `close_session` (a
container kept between calls, owned by the tenant that opened it). Every parameter is
described for the model that reads the tools' schemas; a run's tools take what `/v1/runs`
takes for a program (stdin, files as text or base64, output files, env, args, figure formats),
and a downloaded file comes back as an MCP resource (text when it is UTF-8, else a base64
blob). Every call finds its key again (stdio: the process's `HAZMAT_API_KEY`; HTTP: the
request's `Authorization: Bearer`), so a revoked key stops the next call; runs get that key's
trust level, quotas and caller, exactly as over HTTP.
"""

from __future__ import annotations

import base64
import codecs
import functools
import inspect
import itertools
import json
import os
import threading
import typing
from collections.abc import Awaitable, Callable, Mapping
from types import SimpleNamespace
from typing import Annotated, Any

import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import (
    BlobResourceContents,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    TextContent,
    TextResourceContents,
    ToolAnnotations,
)
from pydantic import Field, WithJsonSchema
from starlette.types import ASGIApp

from hazmat._exceptions import AccessDenied, HazmatError, InputError
from hazmat.assess.decision import decide
from hazmat.languages import LANGUAGES
from hazmat.models import ExecutionRequest, ExecutionResult
from hazmat.options import CALL_OPTIONS, Use, body_fields, json_properties, option
from hazmat.sandbox import Sandbox
from hazmat.server.fields import run_arguments
from hazmat.server.session_routes import SessionOwners, fork_admitted
from hazmat.service.protocols import OpenSession
from hazmat.service.quotas import QUOTA_BOUNDS, QuotaBook
from hazmat.service.tenant_keys import Key, KeyStore
from hazmat.tools.shown import Keep, keeper, summary
from hazmat.watch import Watch

__all__ = ["build_mcp", "serve_stdio", "streamable_http", "tool_result"]

INSTRUCTIONS = (
    "Run code in a fresh, hardened, single-use container (no network unless the policy allows "
    f"hosts). Languages: {', '.join(LANGUAGES)}. Every run is assessed first (risky code may be "
    "blocked) and recorded in a tamper-evident audit log."
)


class Asked(typing.Protocol):
    """What `KeyOf` reads of a call: its request's context (a tool's `Context` has it)."""

    @property
    def request_context(self) -> Any: ...


KeyOf = Callable[[Asked | None], Key]


def _sessions_keep() -> str:
    """What a session keeps between calls in each language, from the languages' own words
    (languages/), for the session tools' descriptions."""
    kept = "".join(f"\n- {lang.title}: {lang.keeps}" for lang in LANGUAGES.values() if lang.keeps)
    others = ", ".join(lang.title for lang in LANGUAGES.values() if not lang.keeps)
    return (
        f"Between calls a session keeps its files, and what its language keeps:{kept}\n- "
        f"{others}: nothing more (each call runs as a new program)."
    )


SESSIONS_KEEP = _sessions_keep()

# the tools' parameters, each with what the model reads about it in the tool's schema
Code = Annotated[str, Field(description="the program's source code")]
LanguageName = Annotated[
    str, Field(description=f"one of {', '.join(LANGUAGES)} (python by default)")
]
_CALL = json_properties(Use.CALL)  # a session's upload takes a call's files
Files = Annotated[Any, WithJsonSchema(_CALL["files"])]
FilesBase64 = Annotated[Any, WithJsonSchema(_CALL["files_base64"])]
SessionId = Annotated[str, Field(description="the session's id, from open_session")]
ForkCount = Annotated[int, Field(description="how many new sessions (1 by default)", ge=1)]


Execute = Callable[[ExecutionRequest, OpenSession | None, Watch | None], Awaitable[ExecutionResult]]


def build_mcp(
    sandbox: Sandbox,
    key_of: KeyOf,
    quotas: QuotaBook,
    execute: Execute | None = None,
    owners: SessionOwners | None = None,
) -> MCPServer:
    """The MCP server; `key_of` finds the caller's key for each call (AccessDenied if none);
    `execute` runs a checked request, in a session or not (default: in a worker thread; the
    HTTP service passes its own, with its slots and metrics); `owners` says which tenant
    opened which session (the HTTP service shares its own)."""
    from hazmat import __version__

    tools = _Tools(sandbox, key_of, quotas, execute, owners or SessionOwners(sandbox))
    mcp = MCPServer(
        "hazmat",
        instructions=INSTRUCTIONS,
        version=__version__,
        log_level="WARNING",
        middleware=[_listed_for_the_caller(sandbox, key_of)],
    )
    changes = ToolAnnotations(read_only_hint=False, open_world_hint=False)
    mcp.tool(annotations=changes)(_told(tools.run_code, Use.RUN))
    for in_session, use in ((tools.open_session, Use.OPEN), (tools.run_in_session, Use.CALL)):
        said = f"{inspect.getdoc(in_session)}\n\n{SESSIONS_KEEP}"
        mcp.tool(annotations=changes, description=said)(_told(in_session, use))
    for tool in (
        tools.upload_files,
        tools.pause_session,
        tools.resume_session,
        tools.fork_session,
        tools.close_session,
    ):
        mcp.tool(annotations=changes)(_told(tool))
    reads = ToolAnnotations(read_only_hint=True, open_world_hint=False)
    mcp.tool(annotations=reads)(_told(tools.assess_code))
    mcp.tool(annotations=reads)(_told(tools.download_files))
    # an install reaches the operator's package index (only that, through the allowlist)
    fetches = ToolAnnotations(read_only_hint=False, open_world_hint=True)
    mcp.tool(annotations=fetches)(_told(tools.install_packages))
    return mcp


Tool = Callable[..., Awaitable[Any]]


def _told(tool: Tool, use: Use | None = None) -> Tool:
    """`tool` with hazmat's errors as MCP tool errors: the client (the model) reads the
    error's message in the tool's result, as an HTTP client reads it in the body ("unknown
    language 'cobol'", "this key was revoked"), and its fields in the structured content,
    `{"error": {"type", "message"}}` as the HTTP API's error body has them. Anything else is
    a crash, whose text the SDK keeps in the server's log and does not send."""

    @functools.wraps(tool)  # the SDK reads the signature and the docstring through it
    async def told(*args: Any, **kwargs: Any) -> Any:
        try:
            return await tool(*args, **kwargs)
        except HazmatError as exc:
            error = {"type": type(exc).__name__, "message": str(exc)}
            return CallToolResult(
                content=[TextContent(type="text", text=str(exc))],
                structured_content={"error": error},
                is_error=True,
            )

    if use is not None:  # its options' parameters in place of **given, before ctx
        _with_options(told, tool, use)
    return told


def _with_options(told: Tool, tool: Tool, use: Use) -> None:
    """Give `told` the signature the SDK reads: `tool`'s own parameters, with the options a
    model sets in `use` in place of its `**given`."""
    hints = typing.get_type_hints(tool, include_extras=True)
    own = [
        p.replace(annotation=hints.get(p.name, p.annotation))
        for p in inspect.signature(tool).parameters.values()
        if p.kind is not inspect.Parameter.VAR_KEYWORD
    ]
    context = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in own if p.name == "ctx"]
    before = [p for p in own if p.name != "ctx"]
    parameters = [*before, *_option_parameters(use), *context]
    told.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        parameters, return_annotation=hints.get("return", inspect.Signature.empty)
    )
    told.__annotations__ = {p.name: p.annotation for p in parameters} | (
        {"return": hints["return"]} if "return" in hints else {}
    )


def _listed_for_the_caller(sandbox: Sandbox, key_of: KeyOf) -> Any:
    """The SDK's middleware (`MCPServer(middleware=...)`, provisional in 2.x: its tests say
    if it changes) that lists the tools the caller's key can use: `install_packages` only
    where the policy lets the key's trust level install in some language. A call of an
    unlisted tool still gets the tool's own sentence."""
    policy = sandbox.policy

    async def middleware(ctx: Any, call_next: Callable[[Any], Awaitable[Any]]) -> Any:
        result = await call_next(ctx)
        if ctx.method != "tools/list" or not isinstance(result, dict):
            return result
        try:
            level = key_of(SimpleNamespace(request_context=ctx)).trust
        except HazmatError:
            return result  # the call of any tool says why the key is refused
        if not any(policy.packages.allows(level.value, name) for name in LANGUAGES):
            result["tools"] = [t for t in result["tools"] if t.get("name") != "install_packages"]
        return result

    return middleware


def streamable_http(mcp: MCPServer) -> ASGIApp:
    """`mcp` over streamable HTTP, as an ASGI app for one route (`hazmat serve` mounts it at
    `/mcp`, behind its key check; its lifespan runs `mcp.session_manager.run()`). The SDK's own
    guards give way to the service's: no DNS-rebinding check (every request needs a key, which
    a browser page does not have), and no body cap below the largest a key may allow (the
    service holds each body to its key's `max_request_bytes` before the SDK sees it)."""
    mcp.streamable_http_app(  # makes the session manager; its Starlette app is not used
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        max_request_body_size=QUOTA_BOUNDS["max_request_bytes"][1],
    )
    return mcp.session_manager.handle_request


class _Tools:
    """The tools; each method's signature is the tool's input schema, its docstring what the
    model reads about it."""

    def __init__(
        self,
        sandbox: Sandbox,
        key_of: KeyOf,
        quotas: QuotaBook,
        execute: Execute | None,
        owners: SessionOwners,
    ) -> None:
        self.sandbox = sandbox
        self.key_of = key_of
        self.quotas = quotas
        self.execute = execute or self._in_thread
        self.book = owners

    async def _in_thread(
        self, prepared: ExecutionRequest, session: OpenSession | None, watch: Watch | None
    ) -> ExecutionResult:
        target = session.execute if session is not None else self.sandbox.execute
        return await anyio.to_thread.run_sync(functools.partial(target, prepared, on_output=watch))

    async def run_code(
        self,
        code: Code,
        language: LanguageName = "python",
        ctx: Context | None = None,
        **given: Any,
    ) -> Annotated[CallToolResult, dict[str, Any]]:
        """Run a program in a fresh sandbox with no network and return its stdout, stderr,
        exit code and outcome (ok, error, timeout, memory_limit, blocked, ...), with `error`
        saying what happened and `exception` the uncaught exception it ended with (name,
        value, traceback). A Python program's charts (matplotlib figures), tables (a final
        DataFrame) and display(obj) calls come back after the summary: images as images, the
        rest as text."""
        key = self.key_of(ctx)
        data = _body(code, given) | {"language": language}
        code, language, options = run_arguments(data, key, self.sandbox.policy)
        prepared = self.sandbox.request(code, language, **options)
        with self.quotas.admit(key.tenant, key.quotas):
            result = await self.execute(prepared, None, progress(ctx))
        return tool_result(result)

    async def open_session(
        self, language: LanguageName = "python", ctx: Context | None = None, **given: Any
    ) -> dict[str, Any]:
        """Open a session: a container kept between calls to run_in_session until
        close_session or until it expires. Returns its id and when it expires."""
        key = self.key_of(ctx)
        data = _body("", given) | {"language": language}
        _, language, options = run_arguments(data, key, self.sandbox.policy)
        self.book.check_room(key)  # before the quota counts it
        with self.quotas.admit(key.tenant, key.quotas):  # a container start, like a run
            session = await anyio.to_thread.run_sync(lambda: self.book.open(key, language, options))
        return session.info()

    async def run_in_session(
        self,
        session_id: SessionId,
        code: Code,
        ctx: Context | None = None,
        **given: Any,
    ) -> Annotated[CallToolResult, dict[str, Any]]:
        """Run code in an open session (see open_session), in its language; charts and
        tables come back as displays, as from run_code. A call that runs out of time is
        interrupted (Python: KeyboardInterrupt in the cell) and the session keeps what it
        kept before; the result's notes say so."""
        key = self.key_of(ctx)
        session = self.book.get(session_id, key)
        code, _, options = run_arguments(_body(code, given), key, self.sandbox.policy)
        options = {name: value for name, value in options.items() if name in CALL_OPTIONS}
        prepared = session.request(code, **options)
        with self.quotas.admit(key.tenant, key.quotas):
            result = await self.execute(prepared, session, progress(ctx))
            # an output stream cut for the model is kept whole as a file of the session
            return await anyio.to_thread.run_sync(lambda: tool_result(result, keeper(session)))

    async def upload_files(
        self,
        session_id: SessionId,
        files: Files = None,
        files_base64: FilesBase64 = None,
        ctx: Context | None = None,
    ) -> dict[str, Any]:
        """Put files into a session's working directory (name -> text, or name -> base64 for
        bytes), where its later calls find them. Returns the names uploaded."""
        key = self.key_of(ctx)
        session = self.book.get(session_id, key)
        if not files and not files_base64:
            raise InputError("give 'files' (name -> text) and/or 'files_base64' (name -> base64)")
        data = _body("", {"files": files, "files_base64": files_base64})
        _, _, options = run_arguments(data, key, self.sandbox.policy)
        given: dict[str, str | bytes] = options.get("files") or {}
        with self.quotas.admit(key.tenant, key.quotas):
            await anyio.to_thread.run_sync(lambda: session.upload(given))
        return {"uploaded": sorted(given)}

    async def download_files(
        self,
        session_id: SessionId,
        names: Annotated[
            list[str],
            Field(description="the files to fetch, by name relative to the working directory"),
        ],
        offset: Annotated[
            int, Field(ge=0, description="each file from this byte on (a long one in parts)")
        ] = 0,
        length: Annotated[
            int | None, Field(ge=1, description="at most this many bytes of each file")
        ] = None,
        ctx: Context | None = None,
    ) -> Annotated[CallToolResult, dict[str, Any]]:
        """Fetch files from a session's working directory: each comes back as a resource
        (text when it is UTF-8, else a base64 blob), and all of them in 'files_base64'. A
        file that is not there is an error naming it. With `offset` and `length`, that part
        of each file: how a model reads a long output a call kept in a file."""
        key = self.key_of(ctx)
        session = self.book.get(session_id, key)
        with self.quotas.admit(key.tenant, key.quotas):
            got = await anyio.to_thread.run_sync(lambda: session.download(names))
        end = None if length is None else offset + length
        got = {name: data[offset:end] for name, data in got.items()}
        encoded = {name: base64.b64encode(data).decode("ascii") for name, data in got.items()}
        content = [_file_resource(session_id, name, data) for name, data in got.items()]
        return CallToolResult(content=list(content), structured_content={"files_base64": encoded})

    async def install_packages(
        self,
        session_id: SessionId,
        packages: Annotated[
            list[str],
            Field(
                description="requirements, each a name and optionally a version: Python's "
                "like 'seaborn==0.13.2', JavaScript's and TypeScript's like 'lodash@4.17.21'"
            ),
        ],
        ctx: Context | None = None,
    ) -> dict[str, Any]:
        """Install packages into a session, for its later calls to import (Python: pip's;
        JavaScript and TypeScript: npm's): from the service's index only, with their
        dependencies. Returns each package file
        installed (name, version, SHA-256). Where the service lets this session install
        nothing, the error says what to use instead."""
        key = self.key_of(ctx)
        session = self.book.get(session_id, key)
        with self.quotas.admit(key.tenant, key.quotas):
            done = await anyio.to_thread.run_sync(lambda: session.install(packages))
        return done.to_dict()

    async def pause_session(
        self,
        session_id: SessionId,
        ctx: Context | None = None,
    ) -> dict[str, Any]:
        """Pause a session: its files, and for Python the variables that can be saved, are
        kept by the service and its container is removed. resume_session brings it back,
        with the same id, also after the service restarts. Returns which variables were
        saved and which were lost (functions defined in the session, open files, ...)."""
        key = self.key_of(ctx)
        with self.quotas.admit(key.tenant, key.quotas):
            paused = await anyio.to_thread.run_sync(self.book.pause, session_id, key)
        return paused.info(self.sandbox.session_store.keep_s)

    async def resume_session(
        self,
        session_id: SessionId,
        ctx: Context | None = None,
    ) -> dict[str, Any]:
        """Resume a paused session in a new container: its files are back, and for Python
        the saved variables (`resumed` says which came back). Then call run_in_session."""
        key = self.key_of(ctx)
        self.book.check_room(key)
        with self.quotas.admit(key.tenant, key.quotas):
            session = await anyio.to_thread.run_sync(self.book.resume, session_id, key)
        return session.info()

    async def fork_session(
        self,
        session_id: SessionId,
        n: ForkCount = 1,
        ctx: Context | None = None,
    ) -> dict[str, Any]:
        """Fork a session into n new ones, to try several continuations from one state: each
        is a new container with the session's files and, for Python, the variables that can
        be saved, as they are now (each new session's `forked` says which came back); the
        session itself goes on. Each new session counts as one open session of yours.
        Returns them; call run_in_session with each one's id."""
        key = self.key_of(ctx)
        forks = await fork_admitted(self.book, self.quotas, key, session_id, n)
        return {"sessions": [fork.info() for fork in forks]}

    async def close_session(
        self,
        session_id: SessionId,
        ctx: Context | None = None,
    ) -> dict[str, Any]:
        """Close a session and remove its container."""
        session = self.book.get(session_id, self.key_of(ctx))
        await anyio.to_thread.run_sync(session.close)
        return {"id": session.id, "ended": session.ended}

    async def assess_code(
        self,
        code: Code,
        language: LanguageName = "python",
        ctx: Context | None = None,
    ) -> dict[str, Any]:
        """Assess a program without running it: its risk level, the findings, and whether it
        would run, run with a warning, or be blocked."""
        key = self.key_of(ctx)
        prepared = self.sandbox.request(code, language, trust=key.trust)
        settings = self.sandbox.policy.settings(key.trust)
        with self.quotas.admit(key.tenant, key.quotas):  # a scan costs like a run
            assessment = await anyio.to_thread.run_sync(
                functools.partial(
                    self.sandbox.assessor.assess,
                    prepared.code,
                    prepared.language,
                    max_bytes=settings.limits.max_code_bytes,
                )
            )
        body = assessment.to_dict()
        body["decision"] = decide(assessment, settings.assess, None).value
        return body


def _body(code: str, given: Mapping[str, Any]) -> dict[str, Any]:
    """A tool's arguments as the API body `run_arguments` reads (those not given left out,
    as a body would leave them)."""
    return {"code": code, **{name: value for name, value in given.items() if value is not None}}


def _option_parameters(use: Use) -> list[inspect.Parameter]:
    """The tool's parameters for the options a model sets in `use` (options/: `Use.TOOL`),
    each with the option's JSON Schema and help as the model reads them; all optional."""
    properties = json_properties(use)
    tool_fields = {f for f, name in body_fields(use).items() if Use.TOOL in option(name).uses}
    return [
        inspect.Parameter(
            field,
            inspect.Parameter.KEYWORD_ONLY,
            default=None,
            annotation=Annotated[Any, WithJsonSchema(properties[field])],
        )
        for field in properties
        if field in tool_fields
    ]


def _file_resource(session_id: str, name: str, data: bytes) -> EmbeddedResource:
    """A downloaded file as an MCP resource: text when it is UTF-8, else a base64 blob."""
    uri = f"hazmat://sessions/{session_id}/files/{name}"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        blob = base64.b64encode(data).decode("ascii")
        contents: TextResourceContents | BlobResourceContents = BlobResourceContents(
            uri=uri, mime_type="application/octet-stream", blob=blob
        )
    else:
        contents = TextResourceContents(uri=uri, mime_type="text/plain", text=text)
    return EmbeddedResource(type="resource", resource=contents)


def progress(ctx: Context | None) -> Watch | None:
    """A watch that sends the program's output as it comes, as MCP progress notifications
    (`message`: "stdout: ..." or "stderr: ..."; `progress` counts them), when the client asked
    for progress with a token; None otherwise. The whole output is in the result too."""
    meta = ctx.request_context.meta if ctx is not None else None
    if ctx is None or not meta or meta.get("progress_token") is None:
        return None
    loop = anyio.lowlevel.current_token()
    sent = itertools.count(1)
    decoders = {name: codecs.getincrementaldecoder("utf-8")("replace") for name in _STREAMS}
    gone = threading.Event()  # a notification was not taken: no more are sent

    async def send(number: int, message: str) -> None:
        with anyio.move_on_after(PROGRESS_SEND_S) as waited:
            await ctx.report_progress(number, message=message)
        if waited.cancelled_caught:
            gone.set()

    def on_output(stream: str, data: bytes) -> None:  # on the watch's thread
        text = decoders[stream].decode(data)
        if not text or gone.is_set():
            return
        try:
            anyio.from_thread.run(send, next(sent), f"{stream}: {text}", token=loop)
        except Exception:  # the loop is stopping, the stream closed: the run goes on
            gone.set()

    return Watch(on_output)


_STREAMS = ("stdout", "stderr")
# the longest a progress notification may wait to be taken: a client that went away mid-call
# (its stream no longer read, as while the service stops) must not hold the run, whose
# output is in its result anyway
PROGRESS_SEND_S = 5.0


def tool_result(result: ExecutionResult, keep: Keep | None = None) -> CallToolResult:
    """A run as a tool's result: the summary (as text and as structured content; a stream cut
    for the model kept whole by `keep`: tools/shown.py), then each display, an image as MCP's
    `ImageContent` and anything else as text."""
    said = summary(result, keep, reader="download_files")
    content: list[TextContent | ImageContent] = [
        TextContent(type="text", text=json.dumps(said, indent=2))
    ]
    content.extend(_display_content(d) for d in result.displays)
    return CallToolResult(content=list(content), structured_content=said)


# what a model is shown of a display without an image, best first
_TEXT_TYPES = ("text/markdown", "text/plain", "text/latex", "application/json", "text/html")


def _display_content(bundle: Mapping[str, bytes | str]) -> TextContent | ImageContent:
    for mime in ("image/png", "image/jpeg", "image/gif"):
        data = bundle.get(mime)
        if isinstance(data, bytes):
            encoded = base64.b64encode(data).decode("ascii")
            return ImageContent(type="image", data=encoded, mime_type=mime)
    for mime in _TEXT_TYPES:
        text = bundle.get(mime)
        if isinstance(text, str):
            return TextContent(type="text", text=text)
    return TextContent(type="text", text=f"a display of type {', '.join(bundle)}")


def serve_stdio(sandbox: Sandbox, keys: KeyStore) -> None:
    """Serve until the client closes stdin (the SDK keeps the protocol on descriptors of its
    own meanwhile: what a program of the process writes to stdout goes to stderr)."""
    secret = os.environ.get("HAZMAT_API_KEY")
    if not secret:
        raise AccessDenied("hazmat mcp needs the tenant's key in HAZMAT_API_KEY")
    keys.check(secret)  # refused now rather than at the first call
    server = build_mcp(sandbox, lambda ctx: keys.check(secret), QuotaBook())
    server.run("stdio")
