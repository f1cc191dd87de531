"""Every answer under /console carries the console's headers (docs/console.md, "What the page
allows itself"): the page, every static file, a redirect, and what the router answers itself:
a 404 for a path it does not know, a 405 for a method a route does not take."""

from __future__ import annotations

from collections.abc import Iterator
from importlib.resources import files
from pathlib import Path

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.testclient import TestClient

from hazmat import RunNotFound, Sandbox
from hazmat.audit.log import AuditLog
from hazmat.server.console.headers import CSP, HEADERS, ConsoleRoute
from hazmat.server.http import create_app
from hazmat.service.tenant_keys import KeyStore
from hazmat.testing import RecordingBackend

STATIC = sorted(p.name for p in files("hazmat.server.console").joinpath("static").iterdir())


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    store = KeyStore(tmp_path / "keys.json")
    audit = AuditLog(tmp_path / "audit")
    with (
        Sandbox(backend=RecordingBackend(), audit=audit) as sandbox,
        TestClient(create_app(sandbox, store), follow_redirects=False) as client,
    ):
        yield client
    audit.close()


def assert_the_consoles(answer: httpx.Response) -> None:
    for name, value in HEADERS.items():
        assert answer.headers.get(name) == value, (answer.request.url, name)
    assert answer.headers["content-security-policy"] == CSP


def test_every_static_file_has_the_consoles_headers(client: TestClient) -> None:
    assert {"console.js", "htmx.min.js", "console.css", "VENDORED.json"} <= set(STATIC)
    for name in STATIC:
        answer = client.get(f"/console/static/{name}")
        assert answer.status_code == 200, name
        assert_the_consoles(answer)
    head = client.head("/console/static/console.js")
    assert head.status_code == 200
    assert_the_consoles(head)


@pytest.mark.parametrize(
    "path",
    ["/console/nope", "/console/f/nope", "/console/static/nope.js", "/console/f/runs/a/b/c"],
)
def test_an_unknown_path_under_the_console_is_its_404(client: TestClient, path: str) -> None:
    answer = client.get(path)
    assert answer.status_code == 404
    assert answer.headers["content-type"].startswith("text/plain")  # not the API's JSON
    assert_the_consoles(answer)


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/console"),
        ("DELETE", "/console/f/runs"),
        ("PUT", "/console/f/whoami"),
        ("GET", "/console/f/audit/verify"),
        ("GET", "/console/f/playground/run"),
        ("POST", "/console/static/console.js"),
    ],
)
def test_a_wrong_method_is_its_405(client: TestClient, method: str, path: str) -> None:
    answer = client.request(method, path)
    assert answer.status_code == 405, answer.text
    assert_the_consoles(answer)


def test_a_redirect_and_the_page_have_them_and_other_paths_keep_the_apis(
    client: TestClient,
) -> None:
    redirect = client.get("/console/f/runs/")
    assert redirect.status_code in (307, 308) and redirect.headers["location"].endswith("/runs")
    assert_the_consoles(redirect)
    assert_the_consoles(client.get("/console"))
    beside = client.get("/consoles")  # not the console's: the API's own 404
    assert beside.status_code == 404 and "content-security-policy" not in beside.headers
    assert beside.headers["content-type"].startswith("application/json")


def test_an_error_under_the_console_is_plain_and_has_them() -> None:
    """What escapes a console handler (a bug, or an error of ours it did not catch) is answered
    under the console's headers too, never the framework's page without them."""

    async def bug(request: Request) -> Response:
        raise RuntimeError("a bug")

    async def ours(request: Request) -> Response:
        raise RunNotFound("no run 'x'")

    routes = [Route("/console/bug", bug), Route("/console/ours", ours)]
    app = Starlette(routes=[ConsoleRoute(routes)])
    with TestClient(app, raise_server_exceptions=False) as client:
        failed = client.get("/console/bug")
        assert (failed.status_code, failed.text) == (500, "internal error")
        assert_the_consoles(failed)
        missing = client.get("/console/ours")
        assert (missing.status_code, missing.text) == (404, "no run 'x'")
        assert_the_consoles(missing)
