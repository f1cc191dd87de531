"""A worker process and a service process on one Redis and the real engine: the run goes
through the worker (recorded in the worker's audit log), output streams back, and a cluster
with no free slot answers 429."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))
from server_helpers import LiveServer, audit_records, start_server, stop_server  # noqa: E402

pytestmark = pytest.mark.docker
EVENTS = {"Accept": "text/event-stream"}


def start_worker(tmp: Path, redis_url: str, name: str, slots: int) -> subprocess.Popen[str]:
    env = {**os.environ, "HAZMAT_AUDIT_DIR": str(tmp / f"audit-{name}")}
    cmd = [sys.executable, "-m", "hazmat", "worker", "--redis", redis_url, "--name", name]
    process = subprocess.Popen(
        [*cmd, "--slots", str(slots)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    assert process.stdout is not None
    for line in process.stdout:
        if "taking runs" in line:
            return process
    raise AssertionError(f"hazmat worker did not start: {process.wait()}")


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
    assert len(started) == 1 and "worker:w1 attempt:1" in started[0]["data"]["caller"]


def test_output_streams_back_through_the_worker_and_a_full_cluster_says_429(
    cluster: LiveServer,
) -> None:
    spin = "print('first', flush=True)\nwhile True:\n    pass\n"
    with cluster.client("trusted") as client:
        body = {"code": spin, "timeout": 60}
        with client.stream("POST", "/v1/runs", json=body, headers=EVENTS) as response:
            lines = response.iter_lines()
            assert next(lines) == "event: stdout"
            assert next(lines) == 'data: {"text":"first\\n"}'  # the worker's one slot is busy
            full = client.post("/v1/runs", json={"code": "print(1)"})
            assert full.status_code == 429, full.text
        # leaving cancels the run on the worker; its slot comes back with the result
