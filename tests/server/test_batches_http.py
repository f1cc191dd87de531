"""Batches through a live `hazmat serve` on the real engine: part of the example sets uploaded
as JSON Lines, graded, streamed back with the verdicts their ids name (and a subtask problem's
points), each with a receipt in the service's audit log."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from server_helpers import LiveServer

pytestmark = pytest.mark.docker

GRADING = Path(__file__).resolve().parents[2] / "examples" / "grading"
CHOSEN = {
    "sum-python-right",
    "sum-python-wrong-wrong_answer",
    "sum-c-right",
    "sum-c-wrong-compile_error",
    "evens-python-check-wrong-wrong_answer",
    # test 1 leaves a process that would answer tests 2 and 3 (nothing of a test may survive)
    "survivor-c-wrong-wrong_answer",
    # judging.jsonl: a testlib checker's, a subtask problem's 20 points of 100, and an
    # interactive problem's (the submission and the interactor joined through the service)
    "pair-javascript-wrong-wrong_answer",
    "triangle-c-wrong-wrong_answer",
    "guess-javascript-wrong-wrong_answer",
    # a C++ submission right only when built with the task's -DONLINE_JUDGE (build_flags)
    "judge-cpp-right",
}


def expected(task_id: str) -> str:
    """The verdict a task of the example set deserves: its id ends with it."""
    return "accepted" if task_id.endswith("-right") else task_id.rsplit("-", 1)[1]


def test_a_batch_of_the_example_set_is_graded_through_the_service(
    live_server: LiveServer,
) -> None:
    every = [(GRADING / name).read_text().splitlines() for name in ("tasks.jsonl", "judging.jsonl")]
    lines = [line for line in every[0] + every[1] if json.loads(line)["id"] in CHOSEN]
    with live_server.client("trusted") as client:
        made = client.post(
            "/v1/batches?jobs=2&trust=unknown",
            content="\n".join(lines),
            headers={"Content-Type": "application/x-ndjson"},
        )
        assert made.status_code == 202, made.text
        bid = made.json()["id"]
        with client.stream("GET", f"/v1/batches/{bid}/results", timeout=600) as streamed:
            got = [json.loads(line) for line in streamed.iter_lines() if line]
        status = client.get(f"/v1/batches/{bid}").json()
    assert {r["id"]: r["verdict"] for r in got} == {t: expected(t) for t in CHOSEN}
    assert (status["state"], status["done"], status["total"]) == ("done", 10, 10)
    triangle = next(r for r in got if r["id"] == "triangle-c-wrong-wrong_answer")
    assert (triangle["points"], triangle["max_points"], triangle["score"]) == (20, 100, 0.2)
    guess = next(r for r in got if r["id"] == "guess-javascript-wrong-wrong_answer")
    assert guess["tests"][1]["message"] == "wrong answer more than 30 questions"
    assert guess["tests"][1]["transcript"][0] == {"from": "program", "text": "? 1\n"}
    judged = next(r for r in got if r["id"] == "judge-cpp-right")
    assert judged["build_flags"] == ["-O2", "-std=c++17", "-DONLINE_JUDGE"]
    records = {r["seq"]: r for r in live_server.audit_records()}
    assert records[judged["receipt"]]["data"]["build_flags"] == judged["build_flags"]
    for result in got:
        receipt = records[result["receipt"]]
        assert receipt["kind"] == "grade.verdict"
        assert (receipt["data"]["task"], receipt["data"]["verdict"]) == (
            result["id"],
            result["verdict"],
        )
