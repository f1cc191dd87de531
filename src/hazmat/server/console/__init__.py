"""The console: a service's runs, batches, sessions, keys and audit log, in a browser.

Served by `hazmat serve` (and the per-user local server) at `/console`, read-only but for the
playground. The page itself holds no data; each part of it is a fragment that htmx fetches
with the key typed into the page (docs/console.md):

| endpoint                                   | who may call it                                |
|--------------------------------------------|------------------------------------------------|
| GET  /console, /console/static/...         | anyone (no data)                               |
| GET  /console/f/whoami                     | any key (an operator's is audited)             |
| GET  /console/f/runs, /console/f/runs/{id} | any key: its tenant's runs; an operator: all   |
| GET  /console/f/runs/{id}/receipt/{seq}    | who may see the run; seq one of its records    |
| GET  /console/f/metrics                    | any key: its tenant's runs; an operator: all   |
| GET  /console/f/batches, .../{id}          | any key: its tenant's batches; operator: all   |
| GET  /console/f/batches/{id}/receipt/{seq} | the batch's tenant, or an operator             |
| GET  /console/f/sessions                   | any key: its tenant's sessions; operator: all  |
| GET  /console/f/tenants                    | any key: its own key; an operator: every key   |
| GET  /console/f/audit                      | any key (the checkpoint and public key)        |
| POST /console/f/audit/verify               | an operator's key                              |
| POST /console/f/audit/check                | any key (checks a pasted receipt)              |
| GET  /console/f/playground, POST .../run   | any key, at most at its own trust level        |

Another tenant's id is the same 404 as an id that never was. Every answer under /console,
static files, 404s and 405s too, carries the console's CSP and `nosniff` (headers.py).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from hazmat._exceptions import HazmatError
from hazmat.server.console.headers import ConsoleRoute
from hazmat.server.console.recent import RecentRuns
from hazmat.server.console.views import Console, ConsoleParts
from hazmat.service.tenant_keys import Key

__all__ = ["Console", "ConsoleParts", "RecentRuns", "console_routes"]

Fragment = Callable[[Request, Key], Awaitable[Response]]
Check = Callable[[Request], Key]


def console_routes(console: Console, check: Check) -> list[BaseRoute]:
    """The console's routes; `check` gives a request's key (or raises AccessDenied)."""

    def guarded(handler: Fragment) -> Callable[[Request], Awaitable[Response]]:
        async def fragment(request: Request) -> Response:
            try:
                return await handler(request, check(request))
            except HazmatError as exc:
                return await console.failed(request, exc)

        return fragment

    async def shell(request: Request) -> Response:
        return console.page("console.html")

    at, c = "/console/f", console
    fragments = [
        ("/whoami", c.whoami, "GET"),
        ("/runs", c.runs, "GET"),
        ("/runs/{run_id:str}", c.run, "GET"),
        ("/runs/{run_id:str}/receipt/{seq:str}", c.run_receipt, "GET"),
        ("/metrics", c.metrics, "GET"),
        ("/batches", c.batches, "GET"),
        ("/batches/{batch_id:str}", c.batch, "GET"),
        ("/batches/{batch_id:str}/receipt/{seq:str}", c.receipt, "GET"),
        ("/sessions", c.sessions, "GET"),
        ("/tenants", c.tenants, "GET"),
        ("/audit", c.audit, "GET"),
        ("/audit/verify", c.verify, "POST"),
        ("/audit/check", c.check, "POST"),
        ("/playground", c.playground, "GET"),
        ("/playground/run", c.play, "POST"),
    ]
    routes = [
        Route("/console", shell, methods=["GET"]),
        Mount("/console/static", StaticFiles(packages=[("hazmat.server.console", "static")])),
        *(Route(at + path, guarded(h), methods=[m]) for path, h, m in fragments),
    ]
    return [ConsoleRoute(routes)]  # every answer under /console: its headers (headers.py)
