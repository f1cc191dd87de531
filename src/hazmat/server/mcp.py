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
from hazmat.sandbox import Sandbox
from hazmat.server.fields import run_arguments
from hazmat.server.keys import Key, KeyStore
from hazmat.server.quotas import QuotaBook
from hazmat.server.session_routes import SessionOwners
from hazmat.sessions import CALL_OPTIONS, Session

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

    async def in_thread(prepared: ExecutionRequest, session: Session | None) -> ExecutionResult:
        if session is not None:
            return await anyio.to_thread.run_sync(session.execute, prepared)
        return await anyio.to_thread.run_sync(sandbox.execute, prepared)

    run = execute or in_thread
    book = owners or SessionOwners(sandbox)
    security = TransportSecuritySettings(enable_dns_rebinding_protection=False)  # keys guard it
    with warnings.catch_warnings():
        # the SDK's settings model warns about its own annotations on every start
        warnings.filterwarnings("ignore", message=".*has an incomplete definition")
        mcp = FastMCP(
            "hazmat", instructions=INSTRUCTIONS, log_level="WARNING", transport_security=security
        )

    @mcp.tool(annotations=ToolAnnotations(readOnlyHint=False, openWorldHint=False))
    async def run_code(
        code: str,
        language: str = "python",
        stdin: str = "",
        timeout: float | None = None,
        files: dict[str, str] | None = None,
        output_files: list[str] | None = None,
        ctx: Context | None = None,  # type: ignore[type-arg]
    ) -> dict[str, Any]:
        """Run a program and return its stdout, stderr, exit code and outcome (ok, error,
        timeout, memory_limit, blocked, ...). `files` are input files (name -> text) next to
        the program; `output_files` are files it writes that come back base64-encoded."""
        key = key_of(ctx)
        data: dict[str, Any] = {"code": code, "language": language, "stdin": stdin}
        data.update({k: v for k, v in (("timeout", timeout), ("files", files)) if v is not None})
        if output_files:
            data["output_files"] = output_files
        code, language, options = run_arguments(data, key, sandbox.policy)
        prepared = sandbox.request(code, language, **options)
        with quotas.admit(key.tenant, key.quotas):
            result = await run(prepared, None)
        return _summary(result)

    @mcp.tool(annotations=ToolAnnotations(readOnlyHint=False, openWorldHint=False))
    async def open_session(
        language: str = "python",
        ctx: Context | None = None,  # type: ignore[type-arg]
    ) -> dict[str, Any]:
        """Open a session: a container kept between calls to run_in_session, which share its
        files (and, for Python, its variables, like a notebook) until close_session or until
        it expires. Returns its id and when it expires."""
        key = key_of(ctx)
        _, language, options = run_arguments(
            {"code": "", "language": language}, key, sandbox.policy
        )
        book.check_room(key)  # before the quota counts it
        with quotas.admit(key.tenant, key.quotas):  # a container start, like a run
            session = await anyio.to_thread.run_sync(lambda: book.open(key, language, options))
        return session.info()

    @mcp.tool(annotations=ToolAnnotations(readOnlyHint=False, openWorldHint=False))
    async def run_in_session(
        session_id: str,
        code: str,
        stdin: str = "",
        timeout: float | None = None,
        files: dict[str, str] | None = None,
        output_files: list[str] | None = None,
        ctx: Context | None = None,  # type: ignore[type-arg]
    ) -> dict[str, Any]:
        """Run code in an open session (see open_session); the value of a final Python
        expression is printed. A call that runs out of time ends the session."""
        key = key_of(ctx)
        session = book.get(session_id, key)
        data: dict[str, Any] = {"code": code, "stdin": stdin}
        data.update({k: v for k, v in (("timeout", timeout), ("files", files)) if v is not None})
        if output_files:
            data["output_files"] = output_files
        code, _, options = run_arguments(data, key, sandbox.policy)
        options = {name: value for name, value in options.items() if name in CALL_OPTIONS}
        prepared = session.request(code, **options)
        with quotas.admit(key.tenant, key.quotas):
            result = await run(prepared, session)
        return _summary(result)

    @mcp.tool(annotations=ToolAnnotations(readOnlyHint=False, openWorldHint=False))
    async def close_session(
        session_id: str,
        ctx: Context | None = None,  # type: ignore[type-arg]
    ) -> dict[str, Any]:
        """Close a session and remove its container."""
        session = book.get(session_id, key_of(ctx))
        await anyio.to_thread.run_sync(session.close)
        return {"id": session.id, "ended": session.ended}

    @mcp.tool(annotations=ToolAnnotations(readOnlyHint=True, openWorldHint=False))
    async def assess_code(
        code: str,
        language: str = "python",
        ctx: Context | None = None,  # type: ignore[type-arg]
    ) -> dict[str, Any]:
        """Assess a program without running it: its risk level, the findings, and whether it
        would run, run with a warning, or be blocked."""
        key = key_of(ctx)
        prepared = sandbox.request(code, language, trust=key.trust)
        settings = sandbox.policy.settings(key.trust)
        with quotas.admit(key.tenant, key.quotas):  # a scan costs like a run
            assessment = await anyio.to_thread.run_sync(
                functools.partial(
                    sandbox.assessor.assess,
                    prepared.code,
                    prepared.language,
                    max_bytes=settings.limits.max_code_bytes,
                )
            )
        body = assessment.to_dict()
        body["decision"] = decide(assessment, settings.assess, None).value
        return body

    return mcp


def _summary(result: ExecutionResult) -> dict[str, Any]:
    full = result.to_dict()  # also a cluster worker's result (cluster/dispatch.py)
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
