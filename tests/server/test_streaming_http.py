"""Runs answered as server-sent events: httpx against a live `hazmat serve` on the real engine.

A client that leaves is shown to cancel its run without any timing: the program would spin
until its 60 s timeout, and the audit log records it `cancelled` once the client has closed
the stream after the first chunk.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from server_helpers import LiveServer, finished_record

pytestmark = pytest.mark.docker

EVENTS = {"Accept": "text/event-stream"}
SPIN_AFTER_FIRST = "print('first', flush=True)\nwhile True:\n    pass\n"


def events(response: httpx.Response) -> Iterator[tuple[str, dict[str, Any]]]:
    """The events of an SSE response as (name, data); comment lines skipped."""
    name, data = "", ""
    for line in response.iter_lines():
        if line.startswith(":"):
            continue
        if line.startswith("event: "):
            name = line[len("event: ") :]
        elif line.startswith("data: "):
            data = line[len("data: ") :]
        elif line == "" and name:
            yield name, json.loads(data)
            name, data = "", ""


def stream_run(client: httpx.Client, url: str, body: dict[str, Any]) -> list[tuple[str, Any]]:
    with client.stream("POST", url, json=body, headers=EVENTS) as response:
        assert response.status_code == 200, response.read()
        assert response.headers["content-type"].startswith("text/event-stream")
        return list(events(response))


def test_a_streamed_run_sends_its_output_then_the_same_result(live_server: LiveServer) -> None:
    code = (
        "import sys\n"
        "for i in range(20):\n"
        "    print('out', i, flush=True)\n"
        "    print('err', i, file=sys.stderr, flush=True)\n"
        "sys.stdout.buffer.write('é'.encode()[:1]); sys.stdout.flush()\n"
        "sys.stdout.buffer.write('é'.encode()[1:] + b'\\n')\n"
    )
    with live_server.client() as client:
        got = stream_run(client, "/v1/runs", {"code": code})
    names = [name for name, _ in got]
    assert names[-1] == "result" and names.count("result") == 1
    assert set(names[:-1]) <= {"stdout", "stderr"}
    result = got[-1][1]
    assert result["outcome"] == "ok", result
    text = {s: "".join(d["text"] for n, d in got if n == s) for s in ("stdout", "stderr")}
    assert text["stdout"] == result["stdout"] and text["stdout"].endswith("é\n")
    assert text["stderr"] == result["stderr"] == "".join(f"err {i}\n" for i in range(20))


def test_base64_output_streams_the_exact_bytes(live_server: LiveServer) -> None:
    code = "import sys\nsys.stdout.buffer.write(b'\\xff\\xfe raw')\n"
    with live_server.client() as client:
        got = stream_run(client, "/v1/runs?output=base64", {"code": code})
    chunks = b"".join(base64.b64decode(d["base64"]) for n, d in got if n == "stdout")
    result = got[-1][1]
    assert chunks == base64.b64decode(result["stdout_base64"]) == b"\xff\xfe raw"
    assert all("text" not in d for n, d in got if n == "stdout")


def test_a_client_that_leaves_cancels_its_run(live_server: LiveServer) -> None:
    with live_server.client("trusted") as client:
        body = {"code": SPIN_AFTER_FIRST, "timeout": 30, "script": "sse-leaver"}
        with client.stream("POST", "/v1/runs", json=body, headers=EVENTS) as response:
            first = next(events(response))
            assert first == ("stdout", {"text": "first\n"})
        # the stream is closed: the server kills the container and records the run
    finished = finished_record(live_server.audit_dir, "sse-leaver")
    assert finished["data"]["outcome"] == "cancelled", finished


def test_a_streamed_run_holds_the_tenant_s_quota_until_it_ends(live_server: LiveServer) -> None:
    with live_server.client("tiny") as client:  # one run at a time
        body = {"code": SPIN_AFTER_FIRST, "timeout": 30, "script": "sse-quota"}
        with client.stream("POST", "/v1/runs", json=body, headers=EVENTS) as response:
            assert next(events(response))[0] == "stdout"  # the run is going, until we leave
            second = client.post("/v1/runs", json={"code": "print(2)"}, headers=EVENTS)
            assert second.status_code == 429 and second.headers["Retry-After"] == "1"
            assert second.json()["error"]["type"] == "QuotaExceeded"
    assert finished_record(live_server.audit_dir, "sse-quota")["data"]["outcome"] == "cancelled"


def test_bad_requests_get_plain_json_errors_not_a_stream(live_server: LiveServer) -> None:
    with live_server.client() as client:
        bad = client.post("/v1/runs", json={"code": "1", "language": "cobol"}, headers=EVENTS)
        assert bad.status_code == 400 and bad.headers["content-type"] == "application/json"
    with live_server.client(None) as client:
        anon = client.post("/v1/runs", json={"code": "1"}, headers=EVENTS)
        assert anon.status_code == 401


def test_a_blocked_run_streams_just_its_result(live_server: LiveServer) -> None:
    with live_server.client() as client:
        got = stream_run(client, "/v1/runs", {"code": "import ctypes\nctypes.CDLL(None)"})
    assert [name for name, _ in got] == ["result"]
    assert got[0][1]["outcome"] == "blocked"


def test_a_session_call_streams(live_server: LiveServer) -> None:
    with live_server.client() as client:
        sid = client.post("/v1/sessions", json={"language": "python"}).json()["id"]
        try:
            at = f"/v1/sessions/{sid}/runs"
            client.post(at, json={"code": "words = ['kept', 'state']"})
            got = stream_run(client, at, {"code": "for w in words:\n    print(w, flush=True)"})
            text = "".join(d["text"] for n, d in got if n == "stdout")
            assert text == got[-1][1]["stdout"] == "kept\nstate\n"
        finally:
            client.delete(f"/v1/sessions/{sid}")
