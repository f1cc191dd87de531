"""Displays through the service: a live `hazmat serve` on the real engine. A run's charts and
tables come back in its JSON (base64 for images) and as `display` events before the result
when streamed; the audit log records each by digest; a session over HTTP returns the chart of
a CSV it was given; over MCP the chart is an `ImageContent` the assistant sees."""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

import anyio
import httpx
import pytest

from server_helpers import LiveServer, finished_record

pytestmark = pytest.mark.docker

PNG = b"\x89PNG\r\n\x1a\n"
EVENTS = {"Accept": "text/event-stream"}
CHART = """\
import matplotlib.pyplot as plt
import pandas as pd
frame = pd.read_csv("sales.csv")
frame.plot(x="month", y="sales", figsize=(3, 2))
frame.set_index("month")
"""
CSV = "month,sales\n1,10\n2,14\n3,9\n"


def _sse(response: httpx.Response) -> list[tuple[str, Any]]:
    got, name = [], ""
    for line in response.iter_lines():
        if line.startswith("event: "):
            name = line[len("event: ") :]
        elif line.startswith("data: "):
            got.append((name, json.loads(line[len("data: ") :])))
    return got


def test_a_streamed_run_sends_each_display_before_the_same_result(
    live_server: LiveServer,
) -> None:
    body = {"code": CHART, "image": "python-data", "files": {"sales.csv": CSV}, "script": "chart"}
    with (
        live_server.client() as client,
        client.stream("POST", "/v1/runs", json=body, headers=EVENTS) as response,
    ):
        assert response.status_code == 200, response.read()
        got = _sse(response)
    names = [name for name, _ in got]
    assert names[-3:] == ["display", "display", "result"], names
    result = got[-1][1]
    assert result["outcome"] == "ok", result["stderr"]
    shown = [data for name, data in got if name == "display"]
    assert [d["index"] for d in shown] == [0, 1]
    assert [d["data"] for d in shown] == result["displays"]
    table, chart = result["displays"]  # the final value, then the figure still open
    assert "<table" in table["text/html"]
    png = base64.b64decode(chart["image/png"])
    assert png.startswith(PNG)
    record = finished_record(live_server.audit_dir, "chart")["data"]
    assert record["displays"][1]["image/png"] == {
        "bytes": len(png),
        "sha256": hashlib.sha256(png).hexdigest(),
    }


def test_a_session_over_http_charts_a_csv_it_was_given(live_server: LiveServer) -> None:
    with live_server.client() as client:
        opened = client.post("/v1/sessions", json={"language": "python", "image": "python-data"})
        assert opened.status_code == 201, opened.text
        at = f"/v1/sessions/{opened.json()['id']}"
        assert client.put(f"{at}/files", json={"files": {"sales.csv": CSV}}).status_code == 200
        answer = client.post(f"{at}/runs", json={"code": CHART, "figure_formats": ["svg"]})
        assert answer.status_code == 200, answer.text
        client.delete(at)
    displays = answer.json()["displays"]
    assert [sorted(d) for d in displays] == [
        ["text/html", "text/plain"],
        ["image/svg+xml", "text/plain"],
    ]
    assert "<svg" in displays[1]["image/svg+xml"]


async def _chart_over_mcp(url: str, key: str) -> Any:
    import httpx2
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {key}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=120) as http,
        streamable_http_client(f"{url}/mcp", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        opened = await session.call_tool("open_session", {"image": "python-data"})
        sid = opened.structured_content["id"]
        code = f"open('sales.csv', 'w').write({CSV!r})\n{CHART}"
        answer = await session.call_tool("run_in_session", {"session_id": sid, "code": code})
        await session.call_tool("close_session", {"session_id": sid})
        return answer


def test_a_session_over_mcp_returns_the_chart_as_an_image(live_server: LiveServer) -> None:
    answer = anyio.run(_chart_over_mcp, live_server.url, live_server.keys["untrusted"])
    assert not answer.is_error, answer.content
    summary, table, chart = answer.content
    assert json.loads(summary.text)["outcome"] == "ok"
    assert table.type == "text" and "sales" in table.text  # the table's plain text
    assert chart.type == "image" and chart.mime_type == "image/png"
    assert base64.b64decode(chart.data).startswith(PNG)
    described = answer.structured_content["displays"]
    assert [d["types"] for d in described] == [
        ["text/html", "text/plain"],
        ["image/png", "text/plain"],
    ]
