"""The HTTP API against a live `hazmat serve` on a loopback port, with httpx, on the real engine."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from server_helpers import LiveServer

pytestmark = pytest.mark.docker

ROOT = Path(__file__).resolve().parents[2]

PROGRAMS = {
    "python": "print(6 * 7)\n",
    "javascript": "console.log(6 * 7)\n",
    "typescript": "const n: number = 6 * 7;\nconsole.log(n)\n",
    "go": 'package main\n\nimport "fmt"\n\nfunc main() {\n\tfmt.Println(6 * 7)\n}\n',
}


def test_health_needs_no_key(live_server: LiveServer) -> None:
    with live_server.client(None) as client:
        answer = client.get("/v1/health")
    assert answer.status_code == 200 and answer.json()["status"] == "ok"


@pytest.mark.parametrize("header", [None, "Bearer nope", "Basic abc", "Bearer hzm_000000000000_x"])
def test_no_key_no_run(live_server: LiveServer, header: str | None) -> None:
    headers = {"Authorization": header} if header else {}
    with live_server.client(None) as client:
        answer = client.post("/v1/runs", json={"code": "print(1)"}, headers=headers)
    assert answer.status_code == 401
    assert answer.headers["www-authenticate"] == "Bearer"
    assert answer.json()["error"]["type"] == "AccessDenied"


@pytest.mark.parametrize("language", sorted(PROGRAMS))
def test_runs_in_every_language(live_server: LiveServer, language: str) -> None:
    with live_server.client("trusted") as client:
        answer = client.post("/v1/runs", json={"code": PROGRAMS[language], "language": language})
    assert answer.status_code == 200, answer.text
    result = answer.json()
    assert result["outcome"] == "ok", result
    assert result["stdout"] == "42\n" and result["language"] == language


def test_the_result_is_what_hazmat_run_json_prints(live_server: LiveServer) -> None:
    from hazmat.models import ExecutionResult

    with live_server.client() as client:
        answer = client.post("/v1/runs", json={"code": "import sys; sys.exit(3)"})
    result = answer.json()
    assert result["outcome"] == "error" and result["exit_code"] == 3
    assert result["trust"] == "untrusted" and result["runtime"] == "runsc"
    fields = set(ExecutionResult.__dataclass_fields__) - {"stdout_bytes", "stderr_bytes"}
    assert set(result) == fields


def test_bytes_in_and_out(live_server: LiveServer) -> None:
    code = (
        "import sys\n"
        "data = open('in.bin', 'rb').read()\n"
        "open('out.bin', 'wb').write(data[::-1])\n"
        "sys.stdout.buffer.write(sys.stdin.buffer.read() + b'\\xff')\n"
    )
    body = {
        "code": code,
        "stdin_base64": "AAE=",
        "files_base64": {"in.bin": "AQID"},
        "output_files": ["out.bin"],
    }
    with live_server.client() as client:
        answer = client.post("/v1/runs?output=base64", json=body)
    result = answer.json()
    assert result["outcome"] == "ok", result
    assert result["files"] == {"out.bin": "AwIB"}
    assert result["stdout_base64"] == "AAH/"


@pytest.mark.parametrize(
    ("body", "status", "says"),
    [
        ({"code": "print(1)", "trust": "trusted"}, 403, "trust 'untrusted' at most"),
        ({"code": "print(1)", "runtime": "runc"}, 403, "cannot ask for runc"),
        ({"code": "print(1)", "override_reason": "x" * 40}, 403, "may not override"),
        ({"code": "print(1)", "caller": "someone else"}, 400, "unknown field 'caller'"),
        ({"code": "print(1)", "language": "cobol"}, 400, "cobol"),
        ({"language": "python"}, 400, "'code' is required"),
        ({"code": "print(1)", "timeout": -1}, 400, "timeout"),
        ({"code": "print(1)", "files": {"../x": "1"}}, 400, "x"),
        ({"code": "print(1)", "stdin_base64": "***"}, 400, "not valid base64"),
        ({"code": 12}, 400, "code"),
        ({"code": "1", "files": [1], "files_base64": {"a": "AA=="}}, 400, "'files' must be"),
        ({"code": "1", "files_base64": ["a"]}, 400, "'files_base64' must be"),
    ],
)
def test_what_a_key_may_not_ask(
    live_server: LiveServer, body: dict[str, object], status: int, says: str
) -> None:
    with live_server.client() as client:
        answer = client.post("/v1/runs", json=body)
    assert answer.status_code == status, answer.text
    assert says in answer.json()["error"]["message"]


@pytest.mark.parametrize("raw", [b"{", b"[1]", b"\xff\xfe", b""])
def test_a_body_that_is_not_a_json_object(live_server: LiveServer, raw: bytes) -> None:
    with live_server.client() as client:
        answer = client.post("/v1/runs", content=raw)
    assert answer.status_code == 400
    assert "request body" in answer.json()["error"]["message"]


def test_a_body_over_the_cap_is_refused_from_its_length(live_server: LiveServer) -> None:
    # the tiny key's cap is 2048 bytes; the body announces 10 MB and sends none of it
    host, port = live_server.url.removeprefix("http://").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(
            b"POST /v1/runs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Authorization: Bearer " + live_server.keys["tiny"].encode() + b"\r\n"
            b"Content-Length: 10000000\r\n\r\n"
        )
        answer = b""
        while chunk := sock.recv(65536):  # the server closes the connection after its answer
            answer += chunk
    text = answer.decode()
    assert text.startswith("HTTP/1.1 413"), text
    assert "connection: close" in text.lower()
    assert "10,000,000 bytes" in text


def test_a_chunked_body_over_the_cap_is_refused(live_server: LiveServer) -> None:
    def chunks():  # no Content-Length: the server counts as it reads
        for _ in range(100):
            yield b" " * 1000

    with live_server.client("tiny") as client:
        answer = client.post("/v1/runs", content=chunks())
    assert answer.status_code == 413
    said = answer.json()["error"]["message"]
    assert "this key's cap is 2,048 bytes (its quota max_request_bytes" in said


def test_over_quota_is_429_with_retry_after(live_server: LiveServer) -> None:
    with live_server.client("tiny") as client:  # 2 runs a minute
        statuses = [client.post("/v1/runs", json={"code": "print(1)"}) for _ in range(3)]
    assert [a.status_code for a in statuses] == [200, 200, 429]
    assert 1 <= int(statuses[2].headers["retry-after"]) <= 60
    assert "per-minute" in statuses[2].json()["error"]["message"]


def test_assess_without_running(live_server: LiveServer) -> None:
    with live_server.client() as client:
        answer = client.post(
            "/v1/assess", json={"code": "import os\nos.system('id')\n", "language": "python"}
        )
    body = answer.json()
    assert answer.status_code == 200, body
    assert body["level"] in ("HIGH", "BLOCKED") and body["decision"] in ("warn", "block")
    assert body["trust"] == "untrusted"


def test_metrics_need_a_key_and_count_runs(live_server: LiveServer) -> None:
    with live_server.client(None) as client:
        assert client.get("/metrics").status_code == 401
    with live_server.client() as client:
        client.post("/v1/runs", json={"code": "print(1)"})
        text = client.get("/metrics").text
    assert 'hazmat_runs_total{language="python",outcome="ok"}' in text
    assert 'hazmat_pool_runs_total{result="hit"}' in text
    assert "hazmat_run_seconds_bucket" in text and "hazmat_runs_queued" in text


def test_the_openapi_document_is_the_committed_one(live_server: LiveServer) -> None:
    with live_server.client(None) as client:
        served = client.get("/v1/openapi.json").json()
    committed = json.loads((ROOT / "docs" / "openapi.json").read_text())
    assert served == committed, "run `python -m hazmat.server.openapi > docs/openapi.json`"


def test_every_run_is_audited_with_its_tenant(live_server: LiveServer) -> None:
    with live_server.client() as client:
        answer = client.post("/v1/runs", json={"code": "print('audited')"})
    run_id = answer.json()["container_id"]
    assert run_id
    records = live_server.audit_records()
    started = [r for r in records if r["kind"] == "run.started"]
    callers = {r["data"]["caller"] for r in started}
    assert any(c.startswith("tenant:acme key:") for c in callers)
    assert all(c.startswith("tenant:") for c in callers)
    finished = [r for r in records if r["kind"] == "run.finished"]
    assert len(finished) == len(started)
