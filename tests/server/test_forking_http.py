"""Forking a session through a live `hazmat serve` on the real engine: over HTTP each fork is a
session of the same tenant with the source's files and variables, counted against the
tenant's cap (a fork past it is a 429 that opens nothing), and only the owner can fork; a bad
count is a 400 naming the field; over MCP `fork_session` does the same."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from server_helpers import LiveServer, http_client, mcp_client, start_server, stop_server

pytestmark = pytest.mark.docker


def test_forks_over_http_are_the_tenant_s_sessions_within_its_cap(tmp_path: Path) -> None:
    server = start_server(tmp_path)
    try:
        _fork_over_http(server)
        forked = [r for r in server.audit_records() if r["kind"] == "session.forked"]
        assert [len(record["data"]["into"]) for record in forked] == [2, 1]
    finally:
        stop_server(server)


def _fork_over_http(server: LiveServer) -> None:
    with server.client() as client:  # the untrusted key: at most 4 sessions at once
        sid = client.post("/v1/sessions", json={"language": "python"}).json()["id"]
        at = f"/v1/sessions/{sid}"
        client.post(f"{at}/runs", json={"code": "total = 40\nopen('f.txt', 'w').write('x')"})
        for body, field in (({"n": 0}, "n must be"), ({"m": 1}, "give 'n'"), ([1], "object")):
            bad = client.post(f"{at}/fork", json=body)
            assert bad.status_code == 400 and field in bad.json()["error"]["message"], bad.text
        headers = {"Authorization": f"Bearer {server.keys['trusted']}"}
        with http_client(server.url, headers, 60) as stranger:
            assert stranger.post(f"{at}/fork", json={"n": 1}).status_code == 404
        answer = client.post(f"{at}/fork", json={"n": 2})
        assert answer.status_code == 201, answer.text
        forks = answer.json()["sessions"]
        code = {"code": "total += 2\nprint(total, open('f.txt').read())"}
        for fork in forks:
            assert fork["forked"]["from"] == sid and fork["forked"]["loaded"] == ["total"]
            ran = client.post(f"/v1/sessions/{fork['id']}/runs", json=code)
            assert ran.json()["stdout"] == "42 x\n", ran.text
        assert client.post(f"{at}/runs", json={"code": "print(total)"}).json()["stdout"] == "40\n"
        listed = {s["id"] for s in client.get("/v1/sessions").json()["sessions"]}
        assert listed == {sid, *(fork["id"] for fork in forks)}
        full = client.post(f"{at}/fork", json={"n": 2})  # 3 held + 2 > 4
        assert full.status_code == 429 and "room for 1" in full.text, full.text
        assert len(client.get("/v1/sessions").json()["sessions"]) == 3
        one = client.post(f"{at}/fork")  # no body: one fork
        assert one.status_code == 201 and len(one.json()["sessions"]) == 1, one.text
        for session in client.get("/v1/sessions").json()["sessions"]:
            client.delete(f"/v1/sessions/{session['id']}")


async def _fork_over_mcp(url: str, key: str) -> list[Any]:
    async with mcp_client(url, key) as session:
        listed = await session.list_tools()
        sid = (await session.call_tool("open_session", {})).structured_content["id"]
        await session.call_tool("run_in_session", {"session_id": sid, "code": "n = 7"})
        forked = await session.call_tool("fork_session", {"session_id": sid, "n": 2})
        ran = []
        for fork in forked.structured_content["sessions"]:
            call = {"session_id": fork["id"], "code": "n * 6"}
            ran.append(await session.call_tool("run_in_session", call))
            await session.call_tool("close_session", {"session_id": fork["id"]})
        await session.call_tool("close_session", {"session_id": sid})
        return [listed, forked, ran]


def test_the_mcp_tool_forks_a_session(tmp_path: Path) -> None:
    server = start_server(tmp_path)
    try:
        listed, forked, ran = anyio.run(_fork_over_mcp, server.url, server.keys["untrusted"])
    finally:
        stop_server(server)
    tool = next(t for t in listed.tools if t.name == "fork_session")
    assert tool.input_schema["properties"]["n"]["minimum"] == 1
    assert [s["forked"]["loaded"] for s in forked.structured_content["sessions"]] == [["n"], ["n"]]
    assert [r.structured_content["stdout"] for r in ran] == ["42\n", "42\n"]
