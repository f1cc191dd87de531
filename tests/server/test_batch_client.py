"""`hazmat batch`'s client for a service's batch API (cli/batch_remote.py), over a scripted
service: what it sends, that every result line comes back, that leaving early cancels the
batch there, and that a batch the service ended short is an error saying how many are
missing. The real service is in test_local_server.py and test_cli_remote.py."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, cast

import pytest

from hazmat._exceptions import InfraError, ServiceUnavailable
from hazmat.cli.batch_remote import RemoteBatch
from hazmat.cli.remote import Service


class ScriptedService:
    """Accepts one batch and streams `lines` back for it."""

    def __init__(self, lines: list[dict[str, Any]], gone: bool = False) -> None:
        self.lines_out = [json.dumps(line).encode() + b"\n" for line in lines]
        self.gone = gone  # its DELETE finds nothing to cancel
        self.sent: dict[str, Any] = {}
        self.deleted: list[str] = []
        self.waiting: int | None = 3  # the service's measured programs waiting for a core
        self.asked = 0

    def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        assert path == "/v1/batches"
        self.sent = body
        return {"id": "b-1", "state": "running"}

    def lines(self, path: str) -> Iterator[bytes]:
        assert path == "/v1/batches/b-1/results"
        yield from self.lines_out
        yield b"\n"  # a blank line is no result

    def get(self, path: str, timeout_s: float = 10.0) -> bytes:
        assert path == "/v1/batches/b-1"
        self.asked += 1
        if self.gone:
            raise ServiceUnavailable("the service does not answer")
        return json.dumps({"id": "b-1", "waiting_for_core": self.waiting}).encode()

    def delete(self, path: str) -> dict[str, Any]:
        if self.gone:
            raise ServiceUnavailable("the service does not answer")
        self.deleted.append(path)
        return {"id": "b-1", "state": "cancelled"}


def task(tid: str) -> dict[str, Any]:
    tests = [{"expected_stdout": "1"}]
    return {"id": tid, "language": "python", "code": "print(1)", "tests": tests}


def send(service: ScriptedService, tasks: list[Any], jobs: int = 1, **options: Any) -> RemoteBatch:
    return RemoteBatch(cast(Service, service), tasks, jobs, options)


def test_the_tasks_and_options_go_and_every_line_comes_back() -> None:
    service = ScriptedService([{"id": "a", "verdict": "accepted"}, {"id": "b", "verdict": "x"}])
    options = {"trust": "unknown", "fresh": True}
    with send(service, [task("a"), task("b")], 3, **options) as batch:
        got = list(batch)
    assert [line["id"] for line in got] == ["a", "b"]
    assert service.sent == {"tasks": [task("a"), task("b")], "jobs": 3, **options}
    assert service.deleted == []  # it ended: nothing to cancel


def test_leaving_early_cancels_the_batch_on_the_service() -> None:
    service = ScriptedService([{"id": "a", "verdict": "accepted"}, {"id": "b", "verdict": "x"}])
    with pytest.raises(KeyboardInterrupt), send(service, [task("a"), task("b")]) as batch:
        for _ in batch:
            raise KeyboardInterrupt
    assert service.deleted == ["/v1/batches/b-1"]


def test_a_service_gone_before_the_cancel_leaves_the_first_error() -> None:
    service = ScriptedService([{"id": "a", "verdict": "accepted"}], gone=True)
    with pytest.raises(OSError, match="disk full"), send(service, [task("a"), task("b")]) as b:
        for _ in b:
            raise OSError("disk full")


def test_a_batch_the_service_ended_short_says_how_many_are_missing() -> None:
    service = ScriptedService([{"id": "a", "verdict": "accepted"}])
    tasks = [task("a"), task("b"), task("c")]
    said = r"ended batch b-1 with 2 of 3 tasks not graded.*--resume"
    with pytest.raises(InfraError, match=said), send(service, tasks) as batch:
        list(batch)


def test_the_programs_waiting_for_a_core_are_asked_at_most_once_a_second() -> None:
    service = ScriptedService([])
    batch = send(service, [task("a")])
    assert [batch.waiting(), batch.waiting()] == [3, 3]
    assert service.asked == 1  # the second answer is the first's
    service.waiting = None  # a cluster's front does not know
    batch._asked -= 1.0  # as if a second had passed
    assert batch.waiting() == 0
    service.gone = True
    batch._asked -= 1.0
    assert batch.waiting() == 0  # a service that does not answer: nothing to show
