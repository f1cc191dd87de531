"""`hazmat mcp` over stdio, driven by the official MCP SDK's own client: the tools are listed,
code runs in each language under the key's trust level, assessment works, and a missing or
revoked key is refused."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession
from mcp.client.stdio import stdio_client

from hazmat.service.tenant_keys import KeyStore
from server_helpers import LiveServer, over_http, params, session_calls, start_server, stop_server

pytestmark = pytest.mark.docker
HERE = Path(__file__).resolve().parent

PROGRAMS = {
    "python": "print(6 * 7)\n",
    "javascript": "console.log(6 * 7)\n",
    "typescript": "const n: number = 6 * 7;\nconsole.log(n)\n",
    "go": 'package main\n\nimport "fmt"\n\nfunc main() {\n\tfmt.Println(6 * 7)\n}\n',
}


def test_tools_run_code_in_every_language(tmp_path: Path) -> None:
    key = KeyStore(tmp_path / "keys.json").create("agent", "untrusted")[1]
    calls = [("run_code", {"code": code, "language": lang}) for lang, code in PROGRAMS.items()]
    calls.append(("run_code", {"code": "import time\ntime.sleep(5)\n", "timeout": 0.5}))
    calls.append(("assess_code", {"code": "import os\nos.system('id')\n"}))
    tools, answers = anyio.run(session_calls, tmp_path, key, calls)
    names = {tool.name for tool in tools.tools}
    assert {"run_code", "assess_code"} <= names and "install_packages" not in names
    for answer in answers[:4]:
        assert not answer.is_error, answer.content
        result = answer.structured_content
        assert (result["outcome"], result["stdout"]) == ("ok", "42\n"), result
    assert answers[4].structured_content["outcome"] == "timeout"
    assessed = answers[5].structured_content
    assert assessed["level"] in ("HIGH", "BLOCKED") and assessed["decision"] in ("warn", "block")


def test_a_bad_argument_is_a_tool_error(tmp_path: Path) -> None:
    key = KeyStore(tmp_path / "keys.json").create("agent", "untrusted")[1]
    calls = [("run_code", {"code": "print(1)", "language": "cobol"})]
    _, answers = anyio.run(session_calls, tmp_path, key, calls)
    assert answers[0].is_error and "cobol" in answers[0].content[0].text
    error = answers[0].structured_content["error"]  # the fields of the HTTP API's error body
    assert error["type"] == "UnknownLanguage" and "cobol" in error["message"]


def test_a_revoked_key_stops_the_next_call(tmp_path: Path) -> None:
    store = KeyStore(tmp_path / "keys.json")
    entry, key = store.create("agent", "untrusted")

    async def scenario() -> tuple[Any, Any]:
        async with (
            stdio_client(params(tmp_path, key)) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            first = await session.call_tool("run_code", {"code": "print(1)"})
            store.revoke(entry.id)
            second = await session.call_tool("run_code", {"code": "print(2)"})
            return first, second

    first, second = anyio.run(scenario)
    assert not first.is_error and first.structured_content["stdout"] == "1\n"
    assert second.is_error and "revoked" in second.content[0].text


@pytest.mark.parametrize("key", ["", "hzm_000000000000_" + "A" * 43])
def test_no_valid_key_no_server(tmp_path: Path, key: str) -> None:
    import subprocess

    env = {**params(tmp_path, key).env}  # type: ignore[dict-item]
    done = subprocess.run(
        [sys.executable, "-m", "hazmat", "mcp"],
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=120,
    )
    assert done.returncode == 77, done.stderr
    assert "HAZMAT_API_KEY" in done.stderr or "valid API key" in done.stderr


def test_tools_over_streamable_http(live_server: LiveServer) -> None:
    calls = [
        ("run_code", {"code": PROGRAMS["python"]}),
        ("run_code", {"code": PROGRAMS["javascript"], "language": "javascript"}),
        ("assess_code", {"code": "print(1)"}),
    ]
    tools, answers = anyio.run(over_http, live_server.url, live_server.keys["untrusted"], calls)
    names = {tool.name for tool in tools.tools}
    # the request's key found for the listing too: its level installs nothing here
    assert {"run_code", "assess_code"} <= names and "install_packages" not in names
    assert [a.structured_content["stdout"] for a in answers[:2]] == ["42\n", "42\n"]
    assert answers[2].structured_content["decision"] == "run"
    callers = [
        r["data"]["caller"] for r in live_server.audit_records() if r["kind"] == "run.started"
    ]
    assert sum(c.startswith("tenant:acme key:") for c in callers) >= 2


def test_mcp_over_http_needs_a_key(live_server: LiveServer) -> None:
    import httpx

    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    answer = httpx.post(f"{live_server.url}/mcp", json=body, timeout=30)
    assert answer.status_code == 401 and answer.json()["error"]["type"] == "AccessDenied"


async def _with_progress(url: str, key: str, code: str) -> tuple[Any, list[str]]:
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    seen: list[str] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(message or "")

    headers = {"Authorization": f"Bearer {key}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=120) as http,
        streamable_http_client(f"{url}/mcp", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        answer = await session.call_tool("run_code", {"code": code}, progress_callback=on_progress)
    return answer, seen


def test_output_comes_as_progress_while_the_program_runs(live_server: LiveServer) -> None:
    code = (
        "import sys\nfor i in range(3):\n    print('line', i, flush=True)\n"
        "print('oops', file=sys.stderr)"
    )
    answer, seen = anyio.run(_with_progress, live_server.url, live_server.keys["untrusted"], code)
    assert answer.structured_content["stdout"] == "line 0\nline 1\nline 2\n"
    out = "".join(m.removeprefix("stdout: ") for m in seen if m.startswith("stdout: "))
    assert out == answer.structured_content["stdout"]
    assert "stderr: oops\n" in seen


async def _with_client(url: str, key: str) -> tuple[str, Any, Any, Any]:
    """The SDK's high-level `Client`, as an assistant written against it connects: it asks
    for the newest protocol (`server/discover`) before the older handshake."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {key}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=120) as http,
        Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client,
    ):
        tools = await client.list_tools()
        ran = await client.call_tool("run_code", {"code": PROGRAMS["python"]})
        refused = await client.call_tool("run_code", {"code": "1", "language": "cobol"})
        return client.protocol_version, tools, ran, refused


def test_the_sdks_client_with_its_newest_protocol(live_server: LiveServer) -> None:
    version, tools, ran, refused = anyio.run(
        _with_client, live_server.url, live_server.keys["untrusted"]
    )
    assert version >= "2026-07-28"  # not the initialize handshake's
    assert {"run_code", "assess_code"} <= {tool.name for tool in tools.tools}
    assert ran.structured_content["stdout"] == "42\n"
    assert refused.is_error and "unknown language 'cobol'" in refused.content[0].text


def test_a_client_that_goes_away_mid_call_leaves_no_traceback(tmp_path: Path) -> None:
    """The client is killed while its program runs (over streamable HTTP, with progress
    notifications going to it): the run ends and is answered into the void, and the service's
    log has no traceback for it (ClosedResourceError was one, once)."""
    server = start_server(tmp_path)
    try:
        client = subprocess.Popen(
            [
                sys.executable,
                str(HERE / "mcp_leaving_client.py"),
                server.url,
                server.keys["trusted"],
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert client.stdout is not None
        assert client.stdout.readline() == "running\n"
        client.kill()
        client.wait()
        client.stdout.close()
    finally:
        rest = stop_server(server)  # SIGTERM: the run in flight ends first
    assert "Traceback" not in rest and "Error" not in rest, rest
