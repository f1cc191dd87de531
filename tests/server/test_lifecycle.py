"""The server's life: SIGTERM lets a run in flight finish and leaves no container; a server
killed with SIGKILL leaves its warm containers, and the next start removes them."""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from server_helpers import owned_by, start_server, stop_server

pytestmark = pytest.mark.docker


def wait_until(condition: Callable[[], object], what: str, timeout_s: float = 120) -> None:
    """Poll `condition` (a state, not a delay) until it holds."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def test_sigterm_lets_a_run_in_flight_finish(tmp_path: Path) -> None:
    server = start_server(tmp_path)
    answers: list[dict[str, object]] = []
    with server.client("trusted") as client:
        code = "import sys, time\nprint('started', flush=True)\ntime.sleep(2)\nprint('done')\n"
        thread = threading.Thread(
            target=lambda: answers.append(client.post("/v1/runs", json={"code": code}).json())
        )
        thread.start()
        # the run is in flight once its container holds the job: wait for the started record
        wait_until(
            lambda: any(r["kind"] == "run.started" for r in server.audit_records()),
            "the run.started record",
        )
        rest = stop_server(server)  # SIGTERM while the program sleeps
        thread.join()
    assert answers and answers[0]["outcome"] == "ok", answers
    assert answers[0]["stdout"] == "started\ndone\n"
    assert "stopped; every container removed" in rest
    assert owned_by(server.process.pid) == []


def test_sigterm_lets_a_streamed_run_finish_its_stream(tmp_path: Path) -> None:
    server = start_server(tmp_path)
    code = "import time\nprint('started', flush=True)\ntime.sleep(2)\nprint('done')\n"
    headers = {"Accept": "text/event-stream"}
    with (
        server.client("trusted") as client,
        client.stream("POST", "/v1/runs", json={"code": code}, headers=headers) as response,
    ):
        lines = response.iter_lines()
        assert next(lines) == "event: stdout"
        assert next(lines) == 'data: {"text":"started\\n"}'  # the run is in flight
        server.process.send_signal(signal.SIGTERM)
        rest = list(lines)
    assert 'data: {"text":"done\\n"}' in rest
    assert rest[-3] == "event: result" and '"outcome":"ok"' in rest[-2], rest
    leftover, _ = server.process.communicate(timeout=120)
    assert server.process.returncode == 0 and "every container removed" in leftover
    assert owned_by(server.process.pid) == []


def test_a_killed_servers_containers_are_reaped_by_the_next(tmp_path: Path) -> None:
    first = start_server(tmp_path / "first")
    try:
        with first.client("trusted") as client:
            assert client.post("/v1/runs", json={"code": "print(1)"}).json()["outcome"] == "ok"
        # the pool refills after a run; wait until the dead-to-be server holds warm containers
        wait_until(lambda: owned_by(first.process.pid), "the pool to refill")
    finally:  # killed whatever happened: its pipe closed, its containers for the next start
        first.process.send_signal(signal.SIGKILL)
        first.process.communicate()
    assert owned_by(first.process.pid)
    second = start_server(tmp_path / "second")
    try:
        assert owned_by(first.process.pid) == []
    finally:
        stop_server(second)


@pytest.mark.allow_traceback(
    "CancelledError: Task cancelled, timeout graceful shutdown exceeded",
    reason="uvicorn logs the request it cancels past --grace with its traceback: the lost "
    "answer is what this test is about",
)
def test_a_run_past_a_short_grace_period_loses_its_answer_not_its_record(
    tmp_path: Path,
) -> None:
    # past the grace period uvicorn cancels the request; the run inside the pipeline is not
    # abandoned: it ends by its own limits and is recorded before the server exits
    server = start_server(tmp_path, "--grace", "1")
    answers: list[object] = []

    def call() -> None:
        with server.client("trusted") as client:
            code = "import time\ntime.sleep(4)\nprint(1)\n"
            try:
                answers.append(client.post("/v1/runs", json={"code": code}).status_code)
            except httpx.HTTPError as exc:
                answers.append(exc)

    thread = threading.Thread(target=call)
    thread.start()
    wait_until(
        lambda: any(r["kind"] == "run.started" for r in server.audit_records()),
        "the run.started record",
    )
    stop_server(server)
    thread.join()
    assert answers and answers[0] != 200, answers
    finished = [r["data"] for r in server.audit_records() if r["kind"] == "run.finished"]
    assert len(finished) == 1 and finished[0]["outcome"] == "ok"
    assert owned_by(server.process.pid) == []
