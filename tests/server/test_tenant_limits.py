"""A key's trust level is the ceiling on every path of the service: runs, session calls, MCP
tools over HTTP; bodies under the key's cap and nesting limit on /mcp as on /v1; assessments
counted by the quotas (a live `hazmat serve` on the real engine)."""

from __future__ import annotations

import json

import anyio
import pytest

from hazmat.server.fields import MAX_DEPTH
from hazmat.service.tenant_keys import KeyStore, Quotas
from server_helpers import LiveServer, http_client, over_http

pytestmark = pytest.mark.docker

# the untrusted key's level is the strict preset: 15 s, 256 MB
OVER = [
    ({"timeout": 60}, "timeout 60 s is over the limit of trust level 'untrusted': at most 15 s"),
    ({"memory_mb": 2048}, "memory_mb 2048 MB is over the limit of trust level 'untrusted'"),
]


@pytest.mark.parametrize(("asked", "says"), OVER)
def test_a_run_cannot_ask_for_more_than_its_keys_level(
    live_server: LiveServer, asked: dict[str, int], says: str
) -> None:
    with live_server.client() as client:
        for accept in ("application/json", "text/event-stream"):
            answer = client.post(
                "/v1/runs", json={"code": "print(1)", **asked}, headers={"Accept": accept}
            )
            assert answer.status_code == 400, answer.text
            assert says in answer.json()["error"]["message"]
        within = client.post("/v1/runs", json={"code": "print(1)", "timeout": 5, "memory_mb": 64})
    assert within.status_code == 200, within.text
    limits = within.json()["limits"]
    assert (limits["timeout_s"], limits["memory_mb"]) == (5, 64)


def test_a_session_call_cannot_raise_its_timeout(live_server: LiveServer) -> None:
    with live_server.client() as client:
        sid = client.post("/v1/sessions", json={}).json()["id"]
        try:
            slow = {"code": "import time\ntime.sleep(12)\nprint('woke')", "timeout": 30}
            answer = client.post(f"/v1/sessions/{sid}/runs", json=slow)
            assert answer.status_code == 400, answer.text
            assert "at most 15 s" in answer.json()["error"]["message"]
            assert client.get(f"/v1/sessions/{sid}").status_code == 200  # still open
        finally:
            client.delete(f"/v1/sessions/{sid}")


def test_mcp_tools_over_http_keep_to_the_keys_level(live_server: LiveServer) -> None:
    calls = [
        ("run_code", {"code": "print(1)", "timeout": 60}),
        ("run_code", {"code": "print(1)", "timeout": 5}),
    ]
    _, (over, within) = anyio.run(over_http, live_server.url, live_server.keys["untrusted"], calls)
    assert over.is_error and "at most 15 s" in over.content[0].text
    assert not within.is_error and within.structured_content["outcome"] == "ok"


def rpc(method: str, params: dict[str, object]) -> dict[str, object]:
    return {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}


def test_mcp_bodies_are_under_the_keys_cap_and_depth(live_server: LiveServer) -> None:
    small = KeyStore(live_server.keys_path).create(
        "small", "untrusted", Quotas(max_request_bytes=256 * 1024)
    )[1]
    headers = {"Authorization": f"Bearer {small}", "Accept": "application/json, text/event-stream"}
    big = rpc("tools/call", {"name": "assess_code", "arguments": {"code": "x = 1\n" * 70_000}})
    deep = json.dumps(rpc("tools/list", {"x": [[[[]]]]})).replace(
        "[[[[]]]]", "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1)
    )
    with http_client(live_server.url, headers, 120) as client:
        too_big = client.post("/mcp", json=big)
        too_deep = client.post("/mcp", content=deep, headers={"Content-Type": "application/json"})
        assess = client.post("/v1/assess", json={"code": "x = 1\n" * 70_000})
    assert len(json.dumps(big)) > 400_000
    assert too_big.status_code == assess.status_code == 413, too_big.text
    assert too_deep.status_code == 400 and "nested deeper" in too_deep.json()["error"]["message"]


def test_assessments_count_against_the_tenants_quota(live_server: LiveServer) -> None:
    key = KeyStore(live_server.keys_path).create(
        "counted", "untrusted", Quotas(concurrent=4, per_minute=2)
    )[1]
    headers = {"Authorization": f"Bearer {key}"}
    with http_client(live_server.url, headers, 120) as client:
        answers = [client.post("/v1/assess", json={"code": "print(1)"}) for _ in range(3)]
    assert [a.status_code for a in answers] == [200, 200, 429], answers[-1].text
    assert int(answers[-1].headers["Retry-After"]) >= 1
    tools = [("assess_code", {"code": "print(1)"})]
    _, (refused,) = anyio.run(over_http, live_server.url, key, tools)
    assert refused.is_error and "runs" in refused.content[0].text


@pytest.mark.parametrize("path", ["/v1/runs", "/v1/assess", "/v1/sessions"])
def test_deeply_nested_json_is_a_400_everywhere(live_server: LiveServer, path: str) -> None:
    body = b'{"code": "print(1)", "files": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    with live_server.client() as client:
        answer = client.post(path, content=body, headers={"Content-Type": "application/json"})
    assert answer.status_code == 400, answer.text
    assert "nested deeper than" in answer.json()["error"]["message"]
