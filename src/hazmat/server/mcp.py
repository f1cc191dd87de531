"""The pipeline as Model Context Protocol tools (the official `mcp` SDK): over stdio for an
assistant that starts `hazmat mcp` itself, and over streamable HTTP at `/mcp` in `hazmat serve`.

The tools are thin over the same calls as the HTTP API: `run_code` (assess, decide, execute,
verify, audit), `assess_code`, and `open_session`, `run_in_session`, `close_session` (a
container kept between calls, owned by the tenant that opened it). Every call finds its key
again (stdio: the process's `HAZMAT_API_KEY`; HTTP: the request's `Authorization: Bearer`), so
a revoked key stops the next call; runs get that key's trust level, quotas and caller, exactly
as over HTTP.
"""

from __future__ import annotations

import functools
import os
import sys
import warnings
from collections.abc import Awaitable, Callable
from typing import Any

import anyio.to_thread
from mcp.server.fastmcp import Context, FastMCP
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import ToolAnnotations

from hazmat._exceptions import AccessDenied
from hazmat.assess.decision import decide
from hazmat.models import ExecutionRequest, ExecutionResult
from hazmat.quotas import QuotaBook
from hazmat.sandbox import Sandbox
from hazmat.server.fields import run_arguments
from hazmat.server.session_routes import SessionOwners
from hazmat.sessions import CALL_OPTIONS, Session
from hazmat.tenant_keys import Key, KeyStore

__all__ = ["build_mcp", "serve_stdio"]

INSTRUCTIONS = (
    "Run code in a fresh, hardened, single-use container (no network unless the policy allows "
    "hosts). Languages: python, javascript, typescript, go. Every run is assessed first (risky "
    "code may be blocked) and recorded in a tamper-evident audit log."
)

# what a run's result says to a model: the output and why it ended, not the engine's details
SUMMARY = ("outcome", "exit_code", "stdout", "stderr", "error", "notes", "duration_ms", "files")


KeyOf = Callable[[Context | None], Key]  # type: ignore[type-arg]


Execute = Callable[[ExecutionRequest, Session | None], Awaitable[ExecutionResult]]


def build_mcp(
    sandbox: Sandbox,
    key_of: KeyOf,
    quotas: QuotaBook,
    execute: Execute | None = None,
    owners: SessionOwners | None = None,
) -> FastMCP:
    """The MCP server; `key_of` finds the caller's key for each call (AccessDenied if none);
    `execute` runs a checked request, in a session or not (default: in a worker thread; the
    HTTP service passes its own, with its slots and metrics); `owners` says which tenant
    opened which session (the HTTP service shares its own)."""
    tools = _Tools(sandbox, key_of, quotas, execute, owners or SessionOwners(sandbox))
    security = TransportSecuritySettings(enable_dns_rebinding_protection=False)  # keys guard it
    with warnings.catch_warnings():
        # the SDK's settings model warns about its own annotations on every start
        warnings.filterwarnings("ignore", message=".*has an incomplete definition")
        mcp = FastMCP(
            "hazmat", instructions=INSTRUCTIONS, log_level="WARNING", transport_security=security
        )
    changes = ToolAnnotations(readOnlyHint=False, openWorldHint=False)
    for tool in (tools.run_code, tools.open_session, tools.run_in_session, tools.close_session):
        mcp.tool(annotations=changes)(tool)
    mcp.tool(annotations=ToolAnnotations(readOnlyHint=True, openWorldHint=False))(tools.assess_code)
    return mcp


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
        self, prepared: ExecutionRequest, session: Session | None
    ) -> ExecutionResult:
        target = session.execute if session is not None else self.sandbox.execute
        return await anyio.to_thread.run_sync(target, prepared)

    async def run_code(
        self,
        code: str,
        language: str = "python",
        *,
        stdin: str = "",
        timeout: float | None = None,
        files: dict[str, str] | None = None,
        output_files: list[str] | None = None,
        ctx: Context | None = None,  # type: ignore[type-arg]
    ) -> dict[str, Any]:
        """Run a program and return its stdout, stderr, exit code and outcome (ok, error,
        timeout, memory_limit, blocked, ...). `files` are input files (name -> text) next to
        the program; `output_files` are files it writes that come back base64-encoded."""
        key = self.key_of(ctx)
        data = _call(code, stdin, timeout, files, output_files) | {"language": language}
        code, language, options = run_arguments(data, key, self.sandbox.policy)
        prepared = self.sandbox.request(code, language, **options)
        with self.quotas.admit(key.tenant, key.quotas):
            result = await self.execute(prepared, None)
        return _summary(result)

    async def open_session(
        self,
        language: str = "python",
        ctx: Context | None = None,  # type: ignore[type-arg]
    ) -> dict[str, Any]:
        """Open a session: a container kept between calls to run_in_session, which share its
        files (and, for Python, its variables, like a notebook) until close_session or until
        it expires. Returns its id and when it expires."""
        key = self.key_of(ctx)
        data = {"code": "", "language": language}
        _, language, options = run_arguments(data, key, self.sandbox.policy)
        self.book.check_room(key)  # before the quota counts it
        with self.quotas.admit(key.tenant, key.quotas):  # a container start, like a run
            session = await anyio.to_thread.run_sync(lambda: self.book.open(key, language, options))
        return session.info()

    async def run_in_session(
        self,
        session_id: str,
        code: str,
        *,
        stdin: str = "",
        timeout: float | None = None,
        files: dict[str, str] | None = None,
        output_files: list[str] | None = None,
        ctx: Context | None = None,  # type: ignore[type-arg]
    ) -> dict[str, Any]:
        """Run code in an open session (see open_session); the value of a final Python
        expression is printed. A call that runs out of time ends the session."""
        key = self.key_of(ctx)
        session = self.book.get(session_id, key)
        data = _call(code, stdin, timeout, files, output_files)
        code, _, options = run_arguments(data, key, self.sandbox.policy)
        options = {name: value for name, value in options.items() if name in CALL_OPTIONS}
        prepared = session.request(code, **options)
        with self.quotas.admit(key.tenant, key.quotas):
            result = await self.execute(prepared, session)
        return _summary(result)

    async def close_session(
        self,
        session_id: str,
        ctx: Context | None = None,  # type: ignore[type-arg]
    ) -> dict[str, Any]:
        """Close a session and remove its container."""
        session = self.book.get(session_id, self.key_of(ctx))
        await anyio.to_thread.run_sync(session.close)
        return {"id": session.id, "ended": session.ended}

    async def assess_code(
        self,
        code: str,
        language: str = "python",
        ctx: Context | None = None,  # type: ignore[type-arg]
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


def _call(
    code: str,
    stdin: str,
    timeout: float | None,
    files: dict[str, str] | None,
    output_files: list[str] | None,
) -> dict[str, Any]:
    """A run's tool arguments as the API body `run_arguments` reads."""
    data: dict[str, Any] = {"code": code, "stdin": stdin}
    data.update({k: v for k, v in (("timeout", timeout), ("files", files)) if v is not None})
    if output_files:
        data["output_files"] = output_files
    return data


def _summary(result: ExecutionResult) -> dict[str, Any]:
    full = result.to_dict()
    summary = {name: full[name] for name in SUMMARY}
    summary["risk"] = (full.get("assessment") or {}).get("level")
    return summary


def serve_stdio(sandbox: Sandbox, keys: KeyStore) -> None:
    """Serve until the client closes stdin. The SDK's transport closes stdout as it ends; a
    closed stdout is replaced so that the process exits quietly."""
    secret = os.environ.get("HAZMAT_API_KEY")
    if not secret:
        raise AccessDenied("hazmat mcp needs the tenant's key in HAZMAT_API_KEY")
    keys.check(secret)  # refused now rather than at the first call
    server = build_mcp(sandbox, lambda ctx: keys.check(secret), QuotaBook())
    try:
        server.run("stdio")
    finally:
        if sys.stdout.closed:
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - lives as long as the process
