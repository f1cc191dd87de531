"""E2B's protocol (server/protocols/e2b.py, e2b_interpreter.py) over the recording backend:
the control plane's answers in E2B's shapes (the fields its SDK's models require, its
`{"code", "message"}` errors), tenancy and the sandbox's own tokens, the NDJSON lines of
`/execute`, and what is not built. The SDKs themselves on the real engine:
test_e2b_clients.py."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from httpx import Response
from starlette.testclient import TestClient

from hazmat import Sandbox
from hazmat.audit.log import AuditLog
from hazmat.backends.base import Job, RunReport
from hazmat.policy import SessionTemplate, TrustLevel
from hazmat.server.http import create_app
from hazmat.server.protocols.e2b_sandboxes import Book, Context, E2bSandbox
from hazmat.service.tenant_keys import KeyStore
from hazmat.testing import RecordingBackend

# the keys E2B's generated models require of each answer (e2b/api/client/models)
CREATED = {"templateID", "sandboxID", "clientID", "envdVersion"}
DETAIL = CREATED | {"startedAt", "endAt", "cpuCount", "memoryMB", "diskSizeMB", "state"}


@dataclass
class Served:
    client: TestClient
    backend: RecordingBackend
    keys: dict[str, str]

    def control(self, method: str, path: str, key: str = "acme", **kwargs: Any) -> Response:
        headers = {"X-API-KEY": self.keys[key]}
        return self.client.request(method, f"/e2b{path}", headers=headers, **kwargs)

    def create(self, key: str = "acme", **body: object) -> dict[str, str]:
        answer = self.client.post(
            "/e2b/v2/sandboxes",
            headers={"X-API-KEY": self.keys[key]},
            json={"templateID": "code-interpreter-v1", "metadata": {}, "envVars": {}, **body},
        )
        assert answer.status_code == 201, answer.text
        created: dict[str, str] = answer.json()
        return created

    def execute(self, created: dict[str, str], code: str) -> list[dict[str, Any]]:
        answer = self.client.post("/e2b/execute", headers=jupyter(created), json={"code": code})
        assert answer.status_code == 200, answer.text
        raw = answer.content
        assert raw.isascii() and b"\n\n" not in raw and raw.endswith(b"\n")
        return [json.loads(line) for line in raw.splitlines()]


def jupyter(created: dict[str, str]) -> dict[str, str]:
    """The headers the code interpreter's SDK sends on its port."""
    return {
        "E2b-Sandbox-Id": created["sandboxID"],
        "E2b-Sandbox-Port": "49999",
        "E2B-Traffic-Access-Token": created["trafficAccessToken"],
    }


def _answer(job: Job) -> RunReport:
    code = b"".join(job.program.files.values())
    if b"1/0" in code:
        trace = (
            b'Traceback (most recent call last):\n  File "/work/main.py", line 1, in <module>\n'
            b"    1/0\nZeroDivisionError: division by zero\n"
        )
        return RunReport(1, b"before\n", b"a warning\n" + trace, 5.0)
    return RunReport(0, "caf\u00e9 \u2028 ok\n".encode(), b"", 5.0)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    store = KeyStore(tmp_path / "keys.json")
    keys = {
        "acme": store.create("acme", "untrusted")[1],
        "other": store.create("other", "untrusted")[1],
    }
    backend = RecordingBackend(answer=_answer)
    audit = AuditLog(tmp_path / "audit")
    with (
        Sandbox(backend=backend, audit=audit) as sandbox,
        TestClient(create_app(sandbox, store)) as client,
    ):
        yield Served(client, backend, keys)
    audit.close()


def test_create_answers_what_the_sdk_requires_and_get_info_lists_and_kill(served: Served) -> None:
    created = served.create(metadata={"run": "a"}, timeout=30)
    assert set(created) >= CREATED and created["envdAccessToken"] != created["trafficAccessToken"]
    sid = created["sandboxID"]
    info = served.control("GET", f"/sandboxes/{sid}").json()
    assert set(info) >= DETAIL and info["state"] == "running" and info["metadata"] == {"run": "a"}
    served.create(metadata={"run": "b"})
    listed = served.control("GET", "/v2/sandboxes", params={"metadata": "run=a"}).json()
    assert [s["sandboxID"] for s in listed] == [sid] and set(listed[0]) >= DETAIL
    first = served.control("GET", "/v2/sandboxes", params={"limit": "1"})
    assert len(first.json()) == 1 and first.headers["x-next-token"] == "1"
    rest = served.control("GET", "/v2/sandboxes", params={"limit": "1", "nextToken": "1"})
    assert len(rest.json()) == 1 and "x-next-token" not in rest.headers
    assert served.control("DELETE", f"/sandboxes/{sid}").status_code == 204
    gone = served.control("DELETE", f"/sandboxes/{sid}")
    assert gone.status_code == 404 and gone.json()["code"] == 404
    assert served.control("GET", f"/sandboxes/{sid}").status_code == 404


def test_execute_answers_ndjson_the_sdk_can_read(served: Served) -> None:
    created = served.create()
    lines = served.execute(created, "print('ok')")
    assert lines[0]["type"] == "stdout" and lines[0]["text"] == "caf\u00e9 \u2028 ok\n"
    assert isinstance(lines[0]["timestamp"], int)
    assert lines[-1] == {"type": "number_of_executions", "execution_count": 1}
    failed = served.execute(created, "1/0")
    by_type = {line["type"]: line for line in failed}
    assert by_type["stderr"]["text"] == "a warning\n"  # the traceback comes as `error` alone
    assert by_type["error"]["name"] == "ZeroDivisionError"
    assert str(by_type["error"]["traceback"]).endswith("ZeroDivisionError: division by zero")
    assert by_type["number_of_executions"]["execution_count"] == 2


def test_a_sandbox_is_reached_only_with_its_own_token_and_a_tenant_sees_only_its_own(
    served: Served,
) -> None:
    created = served.create()
    wrong = {**jupyter(created), "E2B-Traffic-Access-Token": created["envdAccessToken"]}
    assert served.client.post("/e2b/execute", headers=wrong, json={"code": "1"}).status_code == 404
    none = {**jupyter(created), "E2b-Sandbox-Id": "nosuchsandbox"}
    assert served.client.post("/e2b/execute", headers=none, json={"code": "1"}).status_code == 404
    sid = created["sandboxID"]
    for method in ("GET", "DELETE"):
        theirs = served.control(method, f"/sandboxes/{sid}", key="other")
        assert theirs.status_code == 404, theirs
    token = created["envdAccessToken"]
    envd = {"E2b-Sandbox-Id": sid, "E2b-Sandbox-Port": "49983", "X-Access-Token": token}
    assert served.client.get("/e2b/health", headers=envd).status_code == 204
    served.control("DELETE", f"/sandboxes/{sid}")
    assert served.client.get("/e2b/health", headers=envd).status_code == 502  # is_running(): False


@pytest.mark.parametrize(
    ("body", "status", "says"),
    [
        ({"templateID": "nope"}, 400, "unknown template 'nope'"),
        ({"templateID": "base", "timeout": 10**7}, 400, "sessions.lifetime_s"),
        ({"templateID": "base", "allow_internet_access": True}, 400, "not built"),
        ({"templateID": "base", "volumeMounts": []}, 400, "'volumeMounts' is not built"),
        ({"templateID": "base", "metadata": {"a": 1}}, 400, "object of strings"),
    ],
)
def test_a_bad_create_is_e2bs_error_with_hazmats_sentence(
    served: Served, body: dict[str, object], status: int, says: str
) -> None:
    answer = served.control("POST", "/v2/sandboxes", json=body)
    assert answer.status_code == status
    error = answer.json()
    assert error["code"] == status and says in error["message"], error


def test_no_key_is_401_in_e2bs_shape_and_what_is_not_built_says_so(served: Served) -> None:
    answer = served.client.post("/e2b/v2/sandboxes", json={"templateID": "base"})
    assert answer.status_code == 401 and "E2B_API_KEY" in answer.json()["message"]
    created = served.create()
    envd = {"E2b-Sandbox-Id": created["sandboxID"], "E2b-Sandbox-Port": "49983"}
    files = served.client.get("/e2b/files", headers=envd, params={"path": "/etc/passwd"})
    assert files.status_code == 404 and "not built" in files.json()["message"]


def test_a_sandbox_being_paused_is_not_taken_for_ended(tmp_path: Path) -> None:
    """Its sessions end one by one as they are paused: the sweep must not end the sandbox
    (a fresh-clone CI run saw get_info's 404 right after pause)."""
    key = KeyStore(tmp_path / "keys.json").create("acme", "untrusted")
    stored = KeyStore(tmp_path / "keys.json").check(key[1])
    ended = SimpleNamespace(ended="it was paused")
    sandbox = E2bSandbox(
        "s1", stored, TrustLevel.UNTRUSTED, "base", SessionTemplate("bash"), {}, {}, 0.0,
        10**12, 256, 1.0,
    )
    sandbox.contexts["c1"] = Context("c1", "bash", "/work", ended)  # type: ignore[arg-type]
    book = Book()
    book.add(sandbox)
    sandbox.pausing = True
    assert book.due(1.0) == []
    sandbox.pausing = False
    assert book.due(1.0) == [sandbox]  # its first session ended and it is not paused: it ends
