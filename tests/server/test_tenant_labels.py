"""Nothing of one tenant reaches another through a label: a run's `script` name is the caller's
own word (`hazmat run FILE` sends the script's path; anyone may send another's session id as
one), and the audit log's code diff, its records and the console's run page take it only with
the tenant's key. Two tenants and one label over HTTP (the app in process, on a backend that
runs nothing) and over MCP (the SDK's client, a live service); the cluster's worker:
tests/cluster/test_labels_on_a_worker.py."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest
from starlette.testclient import TestClient

from hazmat import Sandbox
from hazmat.audit.log import AuditLog
from hazmat.server.http import create_app
from hazmat.service.tenant_keys import KeyStore
from hazmat.testing import RecordingBackend
from server_helpers import LiveServer, audit_records

LABEL = "/workspace/main.py"
Served = tuple[TestClient, dict[str, dict[str, str]], Path]  # the app, headers by tenant, audit


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    store = KeyStore(tmp_path / "keys.json")
    auth = {
        tenant: {"Authorization": f"Bearer {store.create(tenant, 'trusted')[1]}"}
        for tenant in ("alice", "bob")
    }
    audit = AuditLog(tmp_path / "audit")
    with (
        Sandbox(backend=RecordingBackend(), audit=audit) as sandbox,
        TestClient(create_app(sandbox, store)) as client,
    ):
        yield client, auth, tmp_path / "audit"
    audit.close()


def started(audit: Path) -> dict[str, dict[str, Any]]:
    """Each run.started record's data by its code."""
    return {
        r["data"]["code"]: r["data"] for r in audit_records(audit) if r["kind"] == "run.started"
    }


def run(served: Served, tenant: str, code: str, path: str = "/v1/runs", **more: Any) -> str:
    client, auth, _ = served
    answer = client.post(path, json={"code": code, **more}, headers=auth[tenant])
    assert answer.status_code == 200, answer.text
    return str(answer.json()["run_id"])


def test_one_script_path_from_two_tenants_over_http(served: Served) -> None:
    client, auth, audit = served
    run(served, "alice", "print('alice secret 1')\n", script=LABEL)
    bobs = run(served, "bob", "print('bob 1')\n", script=LABEL)
    run(served, "alice", "print('alice 2')\n", script=LABEL)
    records = started(audit)
    assert records["print('bob 1')\n"]["diff"] is None  # it was -<alice's code>+<bob's>
    alices = records["print('alice 2')\n"]["diff"]
    assert "-print('alice secret 1')\n+print('alice 2')" in alices and "bob" not in alices
    page = client.get(f"/console/f/runs/{bobs}", headers=auth["bob"])
    assert page.status_code == 200 and "alice secret" not in page.text


def test_another_tenants_session_id_as_a_label_over_http(served: Served) -> None:
    """With alice's open session id as his script's name, bob saw her session's code, and her
    next call was diffed against his (when both were one `session` label)."""
    client, auth, audit = served
    opened = client.post("/v1/sessions", json={"language": "python"}, headers=auth["alice"])
    sid = opened.json()["id"]
    run(served, "alice", "x = 'alice secret'\n", f"/v1/sessions/{sid}/runs")
    run(served, "bob", "print('bob')\n", script=sid)
    run(served, "alice", "print(x)\n", f"/v1/sessions/{sid}/runs")
    records = started(audit)
    assert records["print('bob')\n"]["diff"] is None
    assert "-x = 'alice secret'\n+print(x)" in records["print(x)\n"]["diff"]


def test_the_bodys_former_field_session_names_a_script_and_both_at_once_are_refused(
    served: Served,
) -> None:
    client, auth, audit = served
    run(served, "alice", "print(1)\n", session=LABEL)
    both = {"code": "print(2)\n", "session": LABEL, "script": LABEL}
    refused = client.post("/v1/runs", json=both, headers=auth["alice"])
    assert refused.status_code == 400, refused.text
    assert "'script' and 'session' set one option" in refused.json()["error"]["message"]
    assert started(audit)["print(1)\n"]["script"] == LABEL


@pytest.mark.docker
def test_another_tenants_session_id_as_a_label_over_mcp(live_server: LiveServer) -> None:
    """Alice's session over MCP (the SDK's client); bob's run over HTTP under its id, in the
    body's former field `session` (still taken: it names a script)."""
    before = len(live_server.audit_records())

    async def calls() -> None:
        from contextlib import AsyncExitStack

        import httpx2
        from mcp import ClientSession
        from mcp.client.streamable_http import streamable_http_client

        headers = {"Authorization": f"Bearer {live_server.keys['untrusted']}"}
        async with AsyncExitStack() as stack:
            http = await stack.enter_async_context(httpx2.AsyncClient(headers=headers, timeout=120))
            read, write = await stack.enter_async_context(
                streamable_http_client(f"{live_server.url}/mcp", http_client=http)
            )
            mcp = await stack.enter_async_context(ClientSession(read, write))
            await mcp.initialize()
            opened = await mcp.call_tool("open_session", {"language": "python"})
            sid = opened.structured_content["id"]
            await mcp.call_tool("run_in_session", {"session_id": sid, "code": "s = 'acme'\n"})
            await anyio.to_thread.run_sync(bobs_run, sid)
            await mcp.call_tool("run_in_session", {"session_id": sid, "code": "print(s)\n"})
            await mcp.call_tool("close_session", {"session_id": sid})

    def bobs_run(sid: str) -> None:
        with live_server.client("trusted") as client:
            answer = client.post("/v1/runs", json={"code": "print('trusty')\n", "session": sid})
        assert answer.status_code == 200, answer.text

    anyio.run(calls)
    records = {
        r["data"]["code"]: r["data"]
        for r in live_server.audit_records()[before:]
        if r["kind"] == "run.started"
    }
    assert records["print('trusty')\n"]["diff"] is None
    assert "-s = 'acme'\n+print(s)" in records["print(s)\n"]["diff"]
