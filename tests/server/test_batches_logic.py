"""The batch endpoints' own logic (server/batches.py), in process with a scripted executor: the
upload's checks, streamed results, back-pressure when there is no room, a failed task's line,
cancelling, the open-batch cap, tenants. (On the real engine: test_batches_http.py; through a
cluster worker: tests/cluster/test_worker.py.)"""

from __future__ import annotations

import json
import threading
import warnings
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from hazmat import InfraError, QuotaExceeded, Sandbox
from hazmat.grade.tasks import Task
from hazmat.models import ExecutionRequest
from hazmat.server.batches import MAX_OPEN
from hazmat.server.http import create_app
from hazmat.service.protocols import Reservation
from hazmat.service.tenant_keys import KeyStore, Quotas
from hazmat.testing import RecordingBackend

with warnings.catch_warnings():  # Starlette would have httpx2 for its test client; httpx works
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient


class ScriptedExecutor:
    """Grades a task at once (`accepted`), after `busy` refusals for want of room; a task whose
    code is `infra` fails as an engine would; with `gate`, each task waits for it."""

    def __init__(self, busy: int = 0) -> None:
        self.busy = busy
        self.gate = threading.Event()
        self.gate.set()
        self.graded: list[str] = []
        self.started = threading.Semaphore(0)
        self.lock = threading.Lock()

    def reserve(self, request: ExecutionRequest) -> Reservation:
        raise AssertionError("no run goes through here")

    def grade(
        self, task: Task, raw: Mapping[str, Any], options: Mapping[str, Any]
    ) -> dict[str, Any]:
        with self.lock:
            if self.busy:
                self.busy -= 1
                raise QuotaExceeded("every worker is busy", 0.01)
        self.started.release()
        assert self.gate.wait(30)
        if task.code == "infra":
            raise InfraError("the engine does not answer")
        with self.lock:
            self.graded.append(task.id)
        trust, fresh = options["trust"], options.get("fresh", False)
        return {"id": task.id, "verdict": "accepted", "score": 1.0, "trust": trust, "fresh": fresh}

    def waiting_for_core(self) -> int | None:
        return 2  # programs of the service waiting for a core: shown in each batch's state


def task(tid: str, code: str = "print(1)") -> dict[str, Any]:
    return {"id": tid, "language": "python", "code": code, "tests": [{"expected_stdout": "1"}]}


@pytest.fixture
def service(tmp_path: Path) -> Iterator[tuple[TestClient, ScriptedExecutor, dict[str, str]]]:
    store = KeyStore(tmp_path / "keys.json")
    keys = {
        "acme": store.create("acme", "unknown")[1],
        "other": store.create("other", "untrusted")[1],
        "tiny": store.create("tiny", "untrusted", Quotas(concurrent=1))[1],
    }
    executor = ScriptedExecutor()
    with Sandbox(backend=RecordingBackend()) as sandbox:
        app = create_app(sandbox, store, executor=executor)
        with TestClient(app) as client:
            yield client, executor, keys
        executor.gate.set()


def auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def results(client: TestClient, bid: str, key: str) -> list[dict[str, Any]]:
    answer = client.get(f"/v1/batches/{bid}/results", headers=auth(key))
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("application/x-ndjson")
    return [json.loads(line) for line in answer.text.splitlines()]


def test_a_batch_runs_and_its_results_stream_until_it_ends(
    service: tuple[TestClient, ScriptedExecutor, dict[str, str]],
) -> None:
    client, _, keys = service
    body = {"tasks": [task("a"), task("b"), task("c")], "jobs": 2}
    made = client.post("/v1/batches", json=body, headers=auth(keys["acme"]))
    assert made.status_code == 202, made.text
    bid = made.json()["id"]
    assert made.json()["total"] == 3 and made.json()["results"] == f"/v1/batches/{bid}/results"
    lines = results(client, bid, keys["acme"])
    assert sorted(line["id"] for line in lines) == ["a", "b", "c"]
    assert {line["trust"] for line in lines} == {"unknown"}  # the key's level by default
    assert {line["fresh"] for line in lines} == {False}  # one build per task by default
    status = client.get(f"/v1/batches/{bid}", headers=auth(keys["acme"])).json()
    assert (status["state"], status["done"], status["verdicts"]) == ("done", 3, {"accepted": 3})
    assert status["waiting_for_core"] == 2  # the service's, as its executor counts them
    listed = client.get("/v1/batches", headers=auth(keys["acme"])).json()["batches"]
    assert [b["id"] for b in listed] == [bid]


def test_json_lines_with_the_options_in_the_query(
    service: tuple[TestClient, ScriptedExecutor, dict[str, str]],
) -> None:
    client, _, keys = service
    body = "\n".join(json.dumps(task(t)) for t in ("x", "y")) + "\n\n"
    made = client.post(
        "/v1/batches?jobs=1&trust=untrusted&fresh=true",
        content=body,
        headers={**auth(keys["acme"]), "Content-Type": "application/x-ndjson"},
    )
    assert made.status_code == 202, made.text
    assert (made.json()["jobs"], made.json()["fresh"]) == (1, True)
    lines = results(client, made.json()["id"], keys["acme"])
    assert [line["trust"] for line in lines] == ["untrusted", "untrusted"]
    assert [line["fresh"] for line in lines] == [True, True]


@pytest.mark.parametrize(
    ("body", "status", "said"),
    [
        ({"tasks": []}, 400, "no tasks"),
        ({"tasks": "a"}, 400, "'tasks' must be a list"),
        ({"tasks": [task("a")], "colour": 1}, 400, "unknown field 'colour'"),
        ({"tasks": [task("a"), {**task("b"), "language": "cobol"}]}, 400, "tasks[1].language"),
        ({"tasks": [task("a"), task("a")]}, 400, "used twice"),
        ({"tasks": [{**task("a"), "memory_mb": 1 << 20}]}, 400, "task 'a', run 1"),
        ({"tasks": [task("a")], "jobs": 0}, 400, "jobs must be"),
        ({"tasks": [task("a")], "jobs": 99}, 400, "concurrent runs"),
        ({"tasks": [task("a")], "fresh": "yes"}, 400, "fresh must be true or false"),
        ({"tasks": [task("a")], "trust": "trusted"}, 403, "trust"),
        ({"tasks": [task("a")], "override_reason": "x" * 30}, 403, "override"),
    ],
)
def test_a_bad_batch_is_refused_before_anything_runs(
    service: tuple[TestClient, ScriptedExecutor, dict[str, str]],
    body: dict[str, Any],
    status: int,
    said: str,
) -> None:
    client, executor, keys = service
    answer = client.post("/v1/batches", json=body, headers=auth(keys["acme"]))
    assert answer.status_code == status, answer.text
    assert said in answer.json()["error"]["message"]
    assert executor.graded == []


@pytest.mark.parametrize(
    ("body", "said"),
    [
        (b'{"id": "a"', "line 1: "),
        (b'\n\n{"id": "a"}', "line 3: "),
        (b"\xff\xfe", "not UTF-8"),
        (json.dumps(task("a")).encode() + b"\n[1, 2]\n", "line 2"),
        (b"[" * 5000 + b"]" * 5000, "line 1: the request body is nested deeper"),
    ],
)
def test_bad_json_lines_name_the_line(
    service: tuple[TestClient, ScriptedExecutor, dict[str, str]], body: bytes, said: str
) -> None:
    client, _, keys = service
    headers = {**auth(keys["acme"]), "Content-Type": "application/jsonl"}
    answer = client.post("/v1/batches", content=body, headers=headers)
    assert answer.status_code == 400, answer.text
    assert said in answer.json()["error"]["message"]


def test_a_task_waits_for_room_and_one_the_engine_fails_gets_its_line(
    service: tuple[TestClient, ScriptedExecutor, dict[str, str]],
) -> None:
    client, executor, keys = service
    executor.busy = 5  # every worker busy, five times over: the tasks wait, none is lost
    body = {"tasks": [task("a"), task("b", code="infra"), task("c")]}
    bid = client.post("/v1/batches", json=body, headers=auth(keys["acme"])).json()["id"]
    lines = {line["id"]: line for line in results(client, bid, keys["acme"])}
    assert sorted(lines) == ["a", "b", "c"]
    assert lines["b"]["verdict"] == "infra_error"
    assert "the engine does not answer" in lines["b"]["message"]
    assert executor.busy == 0


def test_a_cancelled_batch_starts_nothing_more(
    service: tuple[TestClient, ScriptedExecutor, dict[str, str]],
) -> None:
    client, executor, keys = service
    executor.gate.clear()
    body = {"tasks": [task(f"t{i}") for i in range(5)], "jobs": 1}
    bid = client.post("/v1/batches", json=body, headers=auth(keys["acme"])).json()["id"]
    assert executor.started.acquire(timeout=30)  # the first task is running
    cancelled = client.delete(f"/v1/batches/{bid}", headers=auth(keys["acme"]))
    assert cancelled.status_code == 200 and cancelled.json()["running"] == 1
    executor.gate.set()
    lines = results(client, bid, keys["acme"])  # ends once the running task has
    assert [line["id"] for line in lines] == ["t0"]
    status = client.get(f"/v1/batches/{bid}", headers=auth(keys["acme"])).json()
    assert (status["state"], status["done"], status["total"]) == ("cancelled", 1, 5)


def test_the_tenants_quota_counts_a_batchs_tasks_and_its_open_batches_are_capped(
    service: tuple[TestClient, ScriptedExecutor, dict[str, str]],
) -> None:
    client, executor, keys = service
    executor.gate.clear()
    first = client.post("/v1/batches", json={"tasks": [task("a")]}, headers=auth(keys["tiny"]))
    assert executor.started.acquire(timeout=30)
    # its one concurrent run is the batch's task: a run now is refused
    run = client.post("/v1/runs", json={"code": "print(1)"}, headers=auth(keys["tiny"]))
    assert run.status_code == 429, run.text
    made = [first.json()["id"]]
    for n in range(MAX_OPEN - 1):
        answer = client.post(
            "/v1/batches", json={"tasks": [task(f"m{n}")]}, headers=auth(keys["tiny"])
        )
        made.append(answer.json()["id"])
    over = client.post("/v1/batches", json={"tasks": [task("z")]}, headers=auth(keys["tiny"]))
    assert over.status_code == 429 and "batches running" in over.json()["error"]["message"]
    assert "Retry-After" in over.headers
    executor.gate.set()
    for bid in made:
        assert len(results(client, bid, keys["tiny"])) == 1


def test_another_tenant_sees_no_batch_of_anothers(
    service: tuple[TestClient, ScriptedExecutor, dict[str, str]],
) -> None:
    client, _, keys = service
    bid = client.post("/v1/batches", json={"tasks": [task("a")]}, headers=auth(keys["acme"]))
    bid = bid.json()["id"]
    for answer in (
        client.get(f"/v1/batches/{bid}", headers=auth(keys["other"])),
        client.get(f"/v1/batches/{bid}/results", headers=auth(keys["other"])),
        client.delete(f"/v1/batches/{bid}", headers=auth(keys["other"])),
        client.get("/v1/batches/b-nothing", headers=auth(keys["acme"])),
    ):
        assert answer.status_code == 404, answer.text
    assert client.get("/v1/batches", headers=auth(keys["other"])).json() == {"batches": []}
    soon = client.get(f"/v1/batches/{bid}/results?wait=soon", headers=auth(keys["acme"]))
    assert soon.status_code == 400
    assert client.post("/v1/batches", json={"tasks": [task("a")]}).status_code == 401
