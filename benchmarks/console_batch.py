"""The console's page of a running batch: how long the service takes to render the fragment
the page asks for every second (`GET /console/f/batches/{id}`), for batches of 100 to 10,000
tasks of 20 tests each, 9,990 of 10,000 graded and the rest still running. The render runs on
the service's event loop: nothing else the service answers moves while it runs.

The service is the real app (`create_app`) in process; the batch is posted over HTTP and
graded by an executor that answers each task at once with 20 tests' results (the engine is not
what is measured). Medians of `--runs` requests after 2 not counted.

    .venv/bin/python benchmarks/console_batch.py --runs 20 --write
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from docs_section import write_section
from starlette.testclient import TestClient

from hazmat import Sandbox
from hazmat.audit.log import AuditLog
from hazmat.grade.grader import TaskResult, TestResult
from hazmat.grade.tasks import Task
from hazmat.server.executor import Direct, LocalExecutor
from hazmat.server.http import create_app
from hazmat.service.quotas import Quotas
from hazmat.service.tenant_keys import KeyStore
from hazmat.testing import RecordingBackend

TESTS = 20
SIZES = (100, 1_000, 10_000)
RUNNING = 10  # tasks of each batch held running while the page is measured


class Instant:
    """An executor that grades a task at once: 20 tests, one in ten wrong; the last `held`
    tasks wait until `release` is set (the batch stays running)."""

    def __init__(self, sandbox: Sandbox, tasks: int) -> None:
        self.local = LocalExecutor(sandbox)
        self.release = threading.Event()
        self._count = 0
        self._lock = threading.Lock()
        self._hold_from = tasks - RUNNING

    def reserve(self, request: Any) -> Direct:
        return self.local.reserve(request)

    def grade(self, task: Task, raw: Mapping[str, Any], options: Mapping[str, Any]) -> Any:
        with self._lock:
            self._count += 1
            held = self._count > self._hold_from
        if held:
            self.release.wait()
        tests = [
            TestResult(
                "wrong_answer" if i == 3 and int(task.id[1:]) % 10 == 0 else "accepted",
                exit_code=0,
                time_ms=12.5,
                memory_bytes=8 << 20,
                wall_ms=20.1,
            )
            for i in range(TESTS)
        ]
        return TaskResult(task.id, tuple(tests), TESTS, receipt=self._count).to_dict()

    def waiting_for_core(self) -> int | None:
        return None

    def sessions(self, sandbox: Sandbox) -> None:
        return None


@contextmanager
def running_batch(size: int) -> Iterator[tuple[TestClient, dict[str, str], str]]:
    """A service with one batch of `size` tasks, all but `RUNNING` of them graded."""
    folder = Path(tempfile.mkdtemp(prefix="hz-bench-"))
    store = KeyStore(folder / "keys.json")
    quotas = Quotas(concurrent=8, per_minute=100_000, max_request_bytes=64 << 20)
    _, key = store.create("bench", "unknown", quotas)
    auth = {"Authorization": f"Bearer {key}"}
    audit = AuditLog(folder / "audit")
    with Sandbox(backend=RecordingBackend(), audit=audit) as sandbox:
        executor = Instant(sandbox, size)
        app = create_app(sandbox, store, max_running=8, executor=executor)  # type: ignore[arg-type]
        with TestClient(app) as client:
            task = {
                "language": "python",
                "code": "print(input())",
                "tests": [{"stdin": "1", "expected_stdout": "1"}] * TESTS,
            }
            tasks = [{**task, "id": f"t{i:05d}"} for i in range(size)]
            made = client.post("/v1/batches", json={"tasks": tasks, "jobs": 8}, headers=auth)
            assert made.status_code == 202, made.text
            bid = made.json()["id"]
            while client.get(f"/v1/batches/{bid}", headers=auth).json()["done"] < size - RUNNING:
                time.sleep(0.05)
            try:
                yield client, auth, bid
            finally:
                executor.release.set()
    audit.close()


def render_ms(size: int, runs: int) -> tuple[float, int]:
    """The median time of the batch's fragment, and its size in bytes."""
    with running_batch(size) as (client, auth, bid):
        times, length = [], 0
        for i in range(2 + runs):
            began = time.perf_counter()
            answer = client.get(f"/console/f/batches/{bid}", headers=auth)
            elapsed = (time.perf_counter() - began) * 1000
            assert answer.status_code == 200 and 'data-state="running"' in answer.text
            length = len(answer.content)
            if i >= 2:
                times.append(elapsed)
    return statistics.median(times), length


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--label", default="", help="a note for the table's heading")
    parser.add_argument("--write", action="store_true", help="write docs/benchmarks.md")
    args = parser.parse_args()
    rows = []
    for size in SIZES:
        ms, length = render_ms(size, args.runs)
        rows.append(f"| {size:,} | {size * TESTS:,} | {ms:.1f} | {length / 1024:,.0f} |")
        print(rows[-1], flush=True)
    day = datetime.now(UTC).date().isoformat()
    table = "\n".join(
        [
            f"`benchmarks/console_batch.py --runs {args.runs}`, {day}{args.label}: the fragment "
            f"of a running batch ({RUNNING} tasks still running), median of {args.runs} "
            "requests to the app in process.",
            "",
            "| tasks | tests | median ms | fragment KiB |",
            "|---:|---:|---:|---:|",
            *rows,
        ]
    )
    print(table)
    if args.write:
        write_section("console-batch", "The console's page of a large batch", table)


if __name__ == "__main__":
    main()
