"""The console's page of a large batch does not grow with the batch (docs/console.md): one page
of tasks, the batch's counts from what it keeps as verdicts arrive, and only that page's result
lines read. The time it takes is a benchmark's (benchmarks/console_batch.py), not a test's."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from starlette.testclient import TestClient

from hazmat import Sandbox
from hazmat.audit.log import AuditLog
from hazmat.grade.grader import TaskResult, TestResult
from hazmat.grade.tasks import Task, parse_task
from hazmat.server.batches import SHOWN, Batch
from hazmat.server.console.batch_page import PAGE, batch_page
from hazmat.server.console.headers import CSP
from hazmat.server.console.views import templates
from hazmat.server.executor import Direct, LocalExecutor
from hazmat.server.http import create_app
from hazmat.service.quotas import Quotas
from hazmat.service.tenant_keys import KeyStore
from hazmat.testing import RecordingBackend

TASKS = 10_000
TASK = {"language": "python", "code": "print(input())", "tests": [{"expected_stdout": "1"}]}


class Instant:
    """An executor (the seam the service grades batches through) that answers each task at
    once: task i's verdict is `wrong_answer` when i is a multiple of 7, else `accepted`."""

    def __init__(self, sandbox: Sandbox) -> None:
        self.local = LocalExecutor(sandbox)

    def reserve(self, request: Any) -> Direct:
        return self.local.reserve(request)

    def grade(
        self, task: Task, raw: Mapping[str, Any], options: Mapping[str, Any]
    ) -> dict[str, Any]:
        verdict = "wrong_answer" if int(task.id[1:]) % 7 == 0 else "accepted"
        return TaskResult(task.id, (TestResult(verdict),), 1).to_dict()

    def waiting_for_core(self) -> int | None:
        return None

    def sessions(self, sandbox: Sandbox) -> None:
        return None


@pytest.fixture(scope="module")
def graded(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[TestClient, dict[str, str], str, list[str]]]:
    """A service whose one batch of 10,000 tasks is graded: its id, and its tasks' ids in the
    order they finished (its results' order). Made once: the tests only read it."""
    tmp_path = tmp_path_factory.mktemp("graded")
    store = KeyStore(tmp_path / "keys.json")
    quotas = Quotas(concurrent=4, per_minute=100_000, max_request_bytes=16 << 20)
    auth = {"Authorization": f"Bearer {store.create('acme', 'unknown', quotas)[1]}"}
    audit = AuditLog(tmp_path / "audit")
    with Sandbox(backend=RecordingBackend(), audit=audit) as sandbox:
        app = create_app(sandbox, store, max_running=4, executor=Instant(sandbox))
        with TestClient(app) as client:
            tasks = [{**TASK, "id": f"t{i}"} for i in range(TASKS)]
            made = client.post("/v1/batches", json={"tasks": tasks, "jobs": 4}, headers=auth)
            assert made.status_code == 202, made.text
            bid = made.json()["id"]
            results = client.get(f"/v1/batches/{bid}/results", headers=auth)  # until it ends
            order = [json.loads(line)["id"] for line in results.text.splitlines()]
            yield client, auth, bid, order
    audit.close()


def rows(fragment: str) -> list[str]:
    body = fragment.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    return [row.split("<td>", 1)[1].split("</td>", 1)[0] for row in body.split("<tr ")[1:]]


def test_a_10000_task_batch_shows_one_page_and_its_whole_counts(
    graded: tuple[TestClient, dict[str, str], str, list[str]],
) -> None:
    client, auth, bid, order = graded
    assert len(order) == TASKS
    wrong = sum(int(task[1:]) % 7 == 0 for task in order)
    pages = -(-TASKS // PAGE)
    first = client.get(f"/console/f/batches/{bid}", headers=auth)
    assert first.status_code == 200 and first.headers["content-security-policy"] == CSP
    assert rows(first.text) == order[:PAGE]
    assert f"{TASKS} of {TASKS}</span> graded" in first.text
    assert f"accepted: {TASKS - wrong}" in first.text and f"wrong_answer: {wrong}" in first.text
    assert f"tasks 1–{PAGE} of {TASKS} graded" in first.text
    assert f"page 1 of {pages}" in first.text and f"?page={pages}" in first.text
    middle = client.get(f"/console/f/batches/{bid}?page=7", headers=auth).text
    assert rows(middle) == order[6 * PAGE : 7 * PAGE]
    assert "?page=6" in middle and "?page=8" in middle
    for asked in (pages, pages + 1, 999_999_999):  # past the end: the last page
        last = client.get(f"/console/f/batches/{bid}?page={asked}", headers=auth).text
        assert rows(last) == order[(pages - 1) * PAGE :] and f"page {pages} of {pages}" in last


@pytest.mark.parametrize("asked", ["0", "x", "-1", "1.5", "\u0661", "1" * 10, ""])
def test_a_page_that_is_not_a_number_is_a_fragment_that_says_so(
    graded: tuple[TestClient, dict[str, str], str, list[str]], asked: str
) -> None:
    client, auth, bid, _ = graded
    answer = client.get(f"/console/f/batches/{bid}", params={"page": asked}, headers=auth)
    assert answer.status_code == 400
    assert answer.headers["content-security-policy"] == CSP
    assert "page must be a whole number from 1" in answer.text


def test_the_page_decodes_no_result_line_and_shows_a_bounded_row_of_each_task() -> None:
    """A running batch of 10,000 tasks of 20 tests: every page renders with every result line
    unreadable (the rows and counts are the batch's own, kept as verdicts arrived), and a task
    of 10,000 tests shows the first SHOWN of them and how many more."""
    task = parse_task({**TASK, "id": "t"}, "t")
    batch = Batch("acme", [(task, {})] * TASKS, 4, {})
    verdicts: Counter[str] = Counter()
    for i in range(TASKS - 3):  # 3 still running
        verdict = "accepted" if i % 5 else "time_limit"
        tests = tuple(TestResult(verdict) for _ in range(10_000 if i == 1 else 20))
        batch.add(TaskResult(f"t{i}", tests, 20).to_dict())
        verdicts[verdict] += 1
    with batch.changed:
        batch.lines[:] = [b"{not json"] * len(batch.lines)  # never decoded
    shown = batch_page(batch, 1)
    assert [line["id"] for line in shown["lines"]] == [f"t{i}" for i in range(PAGE)]
    assert shown["info"]["verdicts"] == dict(verdicts) and shown["info"]["state"] == "running"
    html = templates().get_template("batch.html").render(**shown)
    assert len(rows(html)) == PAGE and html.count('class="verdict-accepted" title=') <= PAGE * 40
    assert f"+{10_000 - SHOWN} more" in html
    assert f"{TASKS - 3} of {TASKS}" in html and "every 1s" in html and "?page=1" in html
    assert [line["id"] for line in batch_page(batch, 2)["lines"]][:1] == [f"t{PAGE}"]
