"""A worker process and a service process on one Redis and the real engine: the run goes
through the worker (recorded in the worker's audit log), output streams back, and a cluster
with no free slot answers 429."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from workers import EVENTS, start_worker

from server_helpers import LiveServer, audit_records, over_http, start_server, stop_server

pytestmark = pytest.mark.docker


@pytest.fixture
def cluster(tmp_path: Path, redis_url: str, redis_client: object) -> Iterator[LiveServer]:
    worker = start_worker(tmp_path, redis_url, "w1", 1)
    server = start_server(tmp_path / "service", "--redis", redis_url)
    try:
        yield server
    finally:
        stop_server(server)
        worker.terminate()
        worker.communicate(timeout=120)


def test_a_run_goes_through_the_worker(cluster: LiveServer, tmp_path: Path) -> None:
    with cluster.client() as client:
        answer = client.post("/v1/runs", json={"code": "print(6 * 7)"})
    assert answer.status_code == 200, answer.text
    assert answer.json()["outcome"] == "ok" and answer.json()["stdout"] == "42\n"
    started = [r for r in audit_records(tmp_path / "audit-w1") if r["kind"] == "run.started"]
    assert len(started) == 1
    origin = started[0]["data"]["origin"]
    assert origin["worker"] == "w1" and origin["attempt"] == 1 and origin["run"]


def test_mcp_run_code_over_http_goes_through_the_worker(
    cluster: LiveServer, tmp_path: Path
) -> None:
    calls = [("run_code", {"code": "print(6 * 7)"})]
    _, answers = anyio.run(over_http, cluster.url, cluster.keys["untrusted"], calls)
    assert answers[0].structured_content["stdout"] == "42\n"
    assert answers[0].structured_content["risk"] == "LOW"
    started = [r for r in audit_records(tmp_path / "audit-w1") if r["kind"] == "run.started"]
    assert len(started) == 1 and started[0]["data"]["origin"]["worker"] == "w1"


def test_output_streams_back_through_the_worker_and_a_full_cluster_says_429(
    cluster: LiveServer,
) -> None:
    spin = "print('first', flush=True)\nwhile True:\n    pass\n"
    with cluster.client("trusted") as client:
        body = {"code": spin, "timeout": 30}
        with client.stream("POST", "/v1/runs", json=body, headers=EVENTS) as response:
            lines = response.iter_lines()
            assert next(lines) == "event: stdout"
            assert next(lines) == 'data: {"text":"first\\n"}'  # the worker's one slot is busy
            full = client.post("/v1/runs", json={"code": "print(1)"})
            assert full.status_code == 429, full.text
            # streamed too: placed before the stream starts, so a plain 429, not an event
            refused = client.post("/v1/runs", json={"code": "print(1)"}, headers=EVENTS)
            assert refused.status_code == 429, refused.text
            assert refused.headers["content-type"].startswith("application/json")
            assert "every worker of the cluster for python" in refused.json()["error"]["message"]
        # leaving cancels the run on the worker; its slot comes back with the result


def test_a_worker_killed_mid_run_is_reported_and_its_run_never_runs_again(
    tmp_path: Path, redis_url: str, redis_client: Any
) -> None:
    """SIGKILL while the program runs: the caller is told the worker died (once its heartbeat
    has stopped), and when a worker of that name comes back and the broker hands it the run
    again, it is not executed: one run.started in the worker's audit log, no container left."""
    worker = start_worker(tmp_path, redis_url, "w1", 1)
    server = start_server(tmp_path / "service", "--redis", redis_url)
    spin = "print('first', flush=True)\nwhile True:\n    pass\n"
    try:
        with server.client("trusted") as client:
            body = {"code": spin, "timeout": 30, "script": "doomed"}
            with client.stream("POST", "/v1/runs", json=body, headers=EVENTS) as response:
                lines = response.iter_lines()
                assert next(lines) == "event: stdout"
                assert next(lines) == 'data: {"text":"first\\n"}'
                worker.kill()
                worker.communicate(timeout=60)
                rest = list(lines)
        assert "event: error" in rest, rest
        error = json.loads(rest[rest.index("event: error") + 1][len("data: ") :])
        assert error["status"] == 503 and "worker w1 stopped answering" in error["error"]["message"]
        back = start_worker(tmp_path, redis_url, "w1", 1)  # reaps what the dead one left
        try:
            events = wait_for_event(redis_client, "skipped")
            assert json.loads(events["data"])["why"] == "already answered"
        finally:
            back.terminate()
            back.communicate(timeout=120)
    finally:
        stop_server(server)
    records = audit_records(tmp_path / "audit-w1")
    doomed = [r for r in records if r["kind"] == "run.started" and r["data"]["script"] == "doomed"]
    assert len(doomed) == 1


def test_a_new_worker_process_starts_its_counts_afresh(
    tmp_path: Path, redis_url: str, redis_client: Any
) -> None:
    """A process of the name killed moments ago, its entry not yet expired: its busy slots and
    placed sessions are nobody's to give back, so the new process does not inherit them (a
    lab worker restarted at once after a SIGKILL was never given a session again)."""
    mapping = {"slots": 1, "busy": 1, "placing": 2, "epoch": "a-killed-process"}
    redis_client.hset("hazmat:worker:w1", mapping=mapping)
    worker = start_worker(tmp_path, redis_url, "w1", 1)
    try:
        entry = redis_client.hmget("hazmat:worker:w1", "busy", "placing", "epoch")
        assert entry[:2] == [b"0", b"0"] and entry[2] != b"a-killed-process"
    finally:
        worker.terminate()
        worker.communicate(timeout=120)


def wait_for_event(client: Any, kind: str) -> dict[str, bytes]:
    """The first entry of `kind` in any run's stream (a bounded wait on a condition: the broker
    gives a dead worker's run back once its heartbeat is 5 s old)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for key in client.scan_iter("hazmat:run:*:events"):
            for _id, fields in client.xrange(key):
                if fields[b"kind"].decode() == kind:
                    return {k.decode(): v for k, v in fields.items()}
        time.sleep(0.2)
    raise AssertionError(f"no {kind!r} event within 60 s")


def started_on(tmp: Path, names: list[str], script: str) -> str:
    """The worker whose audit log has the run's start (a bounded wait on a condition)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for name in names:
            folder = tmp / f"audit-{name}"
            if (folder / "origin").exists() and any(
                r["kind"] == "run.started" and r["data"]["script"] == script
                for r in audit_records(folder)
            ):
                return name
        time.sleep(0.1)
    raise AssertionError(f"run {script} did not start within 60 s")


def test_with_retry_a_run_whose_worker_died_runs_again_on_another(
    tmp_path: Path, redis_url: str, redis_client: Any
) -> None:
    """`--on-lost retry`: the worker running it is SIGKILLed; the run is placed again on the
    other worker and the caller gets its result. Both attempts are in the audit logs."""
    workers = {name: start_worker(tmp_path, redis_url, name, 1) for name in ("w1", "w2")}
    server = start_server(tmp_path / "service", "--redis", redis_url, "--on-lost", "retry")
    code = "import time\nprint('begun', flush=True)\ntime.sleep(2)\nprint('done')\n"
    try:
        with (
            server.client("trusted") as client,
            anyio.from_thread.start_blocking_portal() as portal,
        ):
            body = {"code": code, "timeout": 30, "script": "twice"}
            answer = portal.start_task_soon(lambda: client.post("/v1/runs", json=body))
            first = started_on(tmp_path, ["w1", "w2"], "twice")
            workers[first].kill()
            workers[first].communicate(timeout=60)
            result = answer.result(timeout=120)
        assert result.status_code == 200, result.text
        assert result.json()["stdout"] == "begun\ndone\n"
    finally:
        stop_server(server)
        for process in workers.values():
            if process.poll() is None:
                process.terminate()
                process.communicate(timeout=120)
    other = "w2" if first == "w1" else "w1"
    origins = {
        name: [
            r["data"]["origin"]
            for r in audit_records(tmp_path / f"audit-{name}")
            if r["kind"] == "run.started" and r["data"]["script"] == "twice"
        ]
        for name in (first, other)
    }
    assert len(origins[first]) == 1 and origins[first][0]["attempt"] == 1
    assert len(origins[other]) == 1 and origins[other][0]["attempt"] == 2
    assert origins[first][0]["worker"] == first and origins[other][0]["worker"] == other
    run_ids = {o["run"] for os in origins.values() for o in os}
    assert len(run_ids) == 1  # one run of the service's, two attempts


def test_with_retry_a_streamed_run_says_retry_before_the_new_attempts_output(
    tmp_path: Path, redis_url: str, redis_client: Any
) -> None:
    """Output of the lost attempt had reached the client: a `retry` event tells it so, then
    the new attempt's output and its result follow."""
    workers = {name: start_worker(tmp_path, redis_url, name, 1) for name in ("w1", "w2")}
    server = start_server(tmp_path / "service", "--redis", redis_url, "--on-lost", "retry")
    code = "import time\nprint('begun', flush=True)\ntime.sleep(2)\nprint('done')\n"
    try:
        with server.client("trusted") as client:
            body = {"code": code, "timeout": 30, "script": "streamed"}
            with client.stream("POST", "/v1/runs", json=body, headers=EVENTS) as response:
                lines = response.iter_lines()
                assert next(lines) == "event: stdout"
                assert next(lines) == 'data: {"text":"begun\\n"}'
                first = started_on(tmp_path, ["w1", "w2"], "streamed")
                workers[first].kill()
                workers[first].communicate(timeout=60)
                rest = [line for line in lines if line]
    finally:
        stop_server(server)
        for process in workers.values():
            if process.poll() is None:
                process.terminate()
                process.communicate(timeout=120)
    retry = json.loads(rest[rest.index("event: retry") + 1][len("data: ") :])
    assert retry["attempt"] == 2 and f"worker {first} stopped answering" in retry["reason"]
    after = rest[rest.index("event: retry") + 2 :]
    result = json.loads(after[after.index("event: result") + 1][len("data: ") :])
    assert result["outcome"] == "ok" and result["stdout"] == "begun\ndone\n"


def test_a_batch_is_graded_by_the_clusters_worker(cluster: LiveServer, tmp_path: Path) -> None:
    """POST /v1/batches with the service on a cluster: each task goes to the worker as one
    message (a slot for its whole kept build), with back-pressure from its single slot; each result
    names the worker whose audit log holds its receipt."""
    tasks = [
        {
            "id": f"t{n}",
            "language": "python",
            "code": "print(sum(map(int, input().split())))",
            "tests": [{"stdin": f"{n} {k}", "expected_stdout": str(n + k)} for k in range(3)],
        }
        for n in range(3)
    ]
    # a task with subtasks: right on its first group, wrong on its second
    tasks[1]["code"] = "a, b = map(int, input().split())\nprint(a + b if b < 2 else 0)"
    tasks[1]["groups"] = [{"name": "a", "points": 1}, {"name": "b", "points": 3, "after": ["a"]}]
    for k, test in enumerate(tasks[1]["tests"]):
        test["group"] = "a" if k < 2 else "b"
    with cluster.client() as client:
        made = client.post("/v1/batches", json={"tasks": tasks, "jobs": 2})
        assert made.status_code == 202, made.text
        with client.stream("GET", f"/v1/batches/{made.json()['id']}/results", timeout=300) as got:
            lines = {r["id"]: r for r in (json.loads(line) for line in got.iter_lines() if line)}
    assert {k: v["verdict"] for k, v in lines.items()} == {
        "t0": "accepted",
        "t1": "wrong_answer",
        "t2": "accepted",
    }
    assert [g["points"] for g in lines["t1"]["groups"]] == [1, 0]
    assert lines["t1"]["score"] == 0.25
    assert {v["worker"] for v in lines.values()} == {"w1"}
    records = {r["seq"]: r for r in audit_records(tmp_path / "audit-w1")}
    for line in lines.values():
        assert records[line["receipt"]]["data"]["task"] == line["id"]
    started = [r for r in records.values() if r["kind"] == "run.started"]
    assert len(started) == 9 and all(r["data"]["origin"]["worker"] == "w1" for r in started)
