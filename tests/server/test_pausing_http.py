"""Pause and resume through a live `hazmat serve` on the real engine: a session paused over
HTTP is resumed after the service was stopped and started again (its files and variables
back), by its tenant only; over MCP the two tools do the same."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from hazmat.service.tenant_keys import KeyStore
from server_helpers import LiveServer, http_client, start_server, stop_server

pytestmark = pytest.mark.docker


def _client(server: LiveServer, key: str) -> httpx.Client:
    headers = {"Authorization": f"Bearer {server.keys[key]}"}
    return http_client(server.url, headers, 180)


def test_a_session_paused_over_http_survives_a_restart(tmp_path: Path) -> None:
    server = start_server(tmp_path)
    try:
        with _client(server, "untrusted") as client:
            sid = client.post("/v1/sessions", json={"language": "python"}).json()["id"]
            at = f"/v1/sessions/{sid}"
            client.post(f"{at}/runs", json={"code": "total = 40\nopen('f.txt','w').write('x')"})
            paused = client.post(f"{at}/pause")
            assert paused.status_code == 200, paused.text
            assert paused.json()["variables"] == {"saved": ["total"], "lost": {}}
            shown = client.get(at).json()
            assert (shown["state"], shown["id"]) == ("paused", sid)
            gone = client.post(f"{at}/runs", json={"code": "print(1)"})
            assert gone.status_code == 410 and "paused" in gone.text, gone.text
        with _client(server, "trusted") as trusted:
            high = trusted.post("/v1/sessions", json={"language": "python"}).json()["id"]
            assert trusted.post(f"/v1/sessions/{high}/pause").status_code == 200
    finally:
        stop_server(server)
    lowered = KeyStore(tmp_path / "keys.json").create("trusty", "untrusted")[1]
    server = start_server(tmp_path)  # the same key store, audit log and session store
    try:
        headers = {"Authorization": f"Bearer {lowered}"}
        with http_client(server.url, headers, 180) as low:
            refused = low.post(f"/v1/sessions/{high}/resume")  # its tenant, a lower key now
            assert refused.status_code == 403, refused.text
        with _client(server, "trusted") as trusted:
            assert trusted.post(f"/v1/sessions/{high}/resume").status_code == 201
            trusted.delete(f"/v1/sessions/{high}")
        with _client(server, "trusted") as stranger:
            assert stranger.post(f"/v1/sessions/{sid}/resume").status_code == 404
            assert stranger.get(f"/v1/sessions/{sid}").status_code == 404
        with _client(server, "untrusted") as client:
            resumed = client.post(f"/v1/sessions/{sid}/resume")
            assert resumed.status_code == 201, resumed.text
            assert resumed.json()["resumed"]["loaded"] == ["total"]
            answer = client.post(
                f"{at}/runs", json={"code": "print(total + 2, open('f.txt').read())"}
            )
            assert answer.json()["stdout"] == "42 x\n", answer.text
            assert client.post(f"{at}/resume").status_code == 404  # open, nothing paused
            client.delete(at)
        kinds = [r["kind"] for r in server.audit_records()]
        assert "session.paused" in kinds and "session.resumed" in kinds
    finally:
        stop_server(server)


async def _pause_and_resume(url: str, key: str) -> list[Any]:
    import httpx2
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {key}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=180) as http,
        streamable_http_client(f"{url}/mcp", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        opened = await session.call_tool("open_session", {})
        sid = opened.structured_content["id"]
        await session.call_tool("run_in_session", {"session_id": sid, "code": "n = 7"})
        paused = await session.call_tool("pause_session", {"session_id": sid})
        resumed = await session.call_tool("resume_session", {"session_id": sid})
        ran = await session.call_tool("run_in_session", {"session_id": sid, "code": "n * 6"})
        await session.call_tool("close_session", {"session_id": sid})
        return [paused, resumed, ran]


def test_the_mcp_tools_pause_and_resume(tmp_path: Path) -> None:
    server = start_server(tmp_path)
    try:
        paused, resumed, ran = anyio.run(_pause_and_resume, server.url, server.keys["untrusted"])
    finally:
        stop_server(server)
    assert paused.structured_content["variables"]["saved"] == ["n"], paused.content
    assert resumed.structured_content["resumed"]["loaded"] == ["n"], resumed.content
    assert ran.structured_content["stdout"] == "42\n"
