"""The console's headers on every answer under `/console`, put there in one place.

`ConsoleRoute` is the one route of the service that takes every path under `/console`: it runs
the console's own router and adds `HEADERS` to whatever that answers: the page, a fragment, a
static file (`console.js`, htmx, the CSS, `VENDORED.json`), a redirect, and the answers the
router makes itself (404 for a path it does not know, 405 for a method a route does not take),
which it would otherwise leave to the service's JSON error handler, outside the console. An
error escaping a handler gets a plain answer under the same headers, never the framework's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from starlette.datastructures import URLPath
from starlette.exceptions import HTTPException
from starlette.responses import PlainTextResponse
from starlette.routing import BaseRoute, Match, Router
from starlette.types import Message, Receive, Scope, Send

from hazmat._exceptions import HazmatError

__all__ = ["CSP", "HEADERS", "ConsoleRoute"]

# scripts and styles from the console's own files only, no inline script, no plugin, no
# framing of the console, forms only back to it; a display's frame gets this too (srcdoc
# inherits it) and a stricter one of its own (views.py)
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; frame-src 'self'; form-action 'self'; base-uri 'none'; "
    "frame-ancestors 'none'"
)
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
PREFIX = "/console"
_OURS = [(name.lower().encode(), value.encode()) for name, value in HEADERS.items()]


class ConsoleRoute(BaseRoute):
    """Every HTTP path under `/console`, answered by `routes` under the console's headers."""

    def __init__(self, routes: Sequence[BaseRoute]) -> None:
        self.router = Router(list(routes))

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        path = _route_path(scope) if scope["type"] == "http" else ""
        if path == PREFIX or path.startswith(PREFIX + "/"):
            return Match.FULL, {}
        return Match.NONE, {}

    def url_path_for(self, name: str, /, **path_params: Any) -> URLPath:
        return self.router.url_path_for(name, **path_params)

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = False

        async def sending(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                message = {**message, "headers": _with_ours(message.get("headers", []))}
            await send(message)

        try:
            await self.router(scope, receive, sending)
        except (HTTPException, HazmatError) as exc:
            if started:
                raise
            await _plain(exc)(scope, receive, sending)
        except Exception:
            if not started:  # the service logs the error; the browser gets no framework page
                await PlainTextResponse("internal error", 500)(scope, receive, sending)
            raise


def _route_path(scope: Scope) -> str:
    """The path as the service's routes see it (without the prefix it may be served under)."""
    path, root = str(scope["path"]), str(scope.get("root_path", ""))
    return path[len(root) :] if root and path.startswith(root) else path


def _plain(exc: HTTPException | HazmatError) -> PlainTextResponse:
    if isinstance(exc, HazmatError):
        return PlainTextResponse(str(exc), exc.http_status)
    return PlainTextResponse(exc.detail, exc.status_code, headers=exc.headers)


def _with_ours(headers: Sequence[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    names = {name for name, _ in _OURS}
    return [(k, v) for k, v in headers if k.lower() not in names] + _OURS
