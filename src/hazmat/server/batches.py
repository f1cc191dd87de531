"""The batch endpoints of the HTTP API (docs/batch.md#over-http): grading, for a tenant's key.

    POST   /v1/batches               tasks in (JSON, or JSON Lines), 202 with the batch's id
    GET    /v1/batches               the tenant's batches
    GET    /v1/batches/{id}          its state and counts (done, running, verdicts)
    GET    /v1/batches/{id}/results  its result lines as JSON Lines, as tasks finish, until
                                     it ends (?wait=false: those finished now)
    DELETE /v1/batches/{id}          cancel: no task starts after; the running ones finish

Every task is checked before the batch is accepted (its schema and languages, and each run it
would make against the key's trust level): a bad one is a 400 naming it, and nothing runs. A
batch belongs to the tenant whose key made it (any other key gets 404, as for an id that never
existed). Its tasks are graded `jobs` at a time, at most the key's concurrent quota, by the
service's own threads; each task holds one of the service's places for runs (`--max-running`),
is admitted by the tenant's quotas like a run, and is graded where the service's runs go
(`Executor.grade`: this sandbox, or a cluster worker with `hazmat serve --redis`). When there is
no room (no place, the tenant's quota in use, every worker busy), the task waits and tries
again: back-pressure, never an unbounded queue. A tenant has at most `MAX_OPEN` unfinished
batches; a finished batch is kept for `KEEP_S`.
"""

from __future__ import annotations

import json
import logging
import secrets
import threading
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from hazmat._exceptions import BatchNotFound, HazmatError, InputError, QuotaExceeded, quoted
from hazmat.grade.grader import Grader, TaskResult, TestResult
from hazmat.grade.tasks import Task, parse_entries
from hazmat.json_input import loads
from hazmat.sandbox import Sandbox
from hazmat.server.fields import parse_body, run_arguments
from hazmat.service.protocols import Executor
from hazmat.service.quotas import QuotaBook
from hazmat.service.tenant_keys import Key

__all__ = ["BATCH_FIELDS", "Batch", "BatchRoutes"]

log = logging.getLogger(__name__)

BATCH_FIELDS = ("tasks", "jobs", "trust", "runtime", "override_reason", "fresh")
MAX_OPEN = 4  # unfinished batches per tenant
KEEP_S = 3600.0  # how long a finished batch stays
WAIT_S = 1.0  # how long a results stream waits for the next line before it looks again
SHOWN = 40  # the tests whose verdicts a task's row on the console's page shows
JSON_LINES = ("application/x-ndjson", "application/jsonl", "application/x-jsonlines")
Body = Callable[[Request, int], Awaitable[bytes]]


class Batch:
    """One upload's tasks, graded in the background; its result lines as they come."""

    def __init__(
        self,
        tenant: str,
        tasks: list[tuple[Task, Any]],
        jobs: int,
        options: Mapping[str, Any],
    ) -> None:
        self.id = "b-" + secrets.token_hex(8)
        self.tenant = tenant
        self.tasks = tasks
        self.jobs = jobs
        self.options = dict(options)
        self.created = time.time()
        self.finished: float | None = None
        self.state = "running"  # then done, or cancelled
        self.lines: list[bytes] = []
        # what the console's page shows of each finished task, and its receipts' numbers: kept
        # as each verdict arrives, so that the page never decodes result lines (batch_page.py)
        self.rows: list[dict[str, Any]] = []
        self.receipts: set[int] = set()
        self.verdicts: Counter[str] = Counter()
        self.running = 0
        self.cancelled = threading.Event()
        self.changed = threading.Condition()

    def info(self, waiting: int | None = None) -> dict[str, Any]:
        """Its state; `waiting`: the service's measured programs waiting for a core now."""
        with self.changed:
            return {
                "id": self.id,
                "state": self.state,
                "total": len(self.tasks),
                "done": len(self.lines),
                "running": self.running,
                "waiting_for_core": waiting,
                "verdicts": dict(sorted(self.verdicts.items())),
                "jobs": self.jobs,
                "fresh": bool(self.options.get("fresh")),
                "created_at": round(self.created, 3),
                "finished_at": None if self.finished is None else round(self.finished, 3),
                "results": f"/v1/batches/{self.id}/results",
            }

    def add(self, line: dict[str, Any]) -> None:
        encoded, row = json.dumps(line, ensure_ascii=False).encode() + b"\n", _row(line)
        with self.changed:
            self.lines.append(encoded)
            self.rows.append(row)
            if isinstance(row["receipt"], int):
                self.receipts.add(row["receipt"])
            self.verdicts[str(line.get("verdict"))] += 1
            self.changed.notify_all()

    def end(self) -> None:
        with self.changed:
            self.state = "cancelled" if len(self.lines) < len(self.tasks) else "done"
            self.finished = time.time()
            self.changed.notify_all()

    def lines_from(self, start: int, wait_s: float) -> tuple[list[bytes], bool]:
        """The result lines from `start` on, waiting up to `wait_s` for one if none is there
        yet; and whether the batch has ended (no line will follow those)."""
        with self.changed:
            if start >= len(self.lines) and self.finished is None:
                self.changed.wait(wait_s)
            return self.lines[start:], self.finished is not None


def _row(line: Mapping[str, Any]) -> dict[str, Any]:
    """A task's row on the console's page: its verdict, score and receipt, and the verdicts of
    its first `SHOWN` tests (a task may have 10,000)."""
    tests = line.get("tests") or []
    return {
        "id": line.get("id"),
        "verdict": line.get("verdict"),
        "score": line.get("score"),
        "receipt": line.get("receipt"),
        "tests": [{"name": t.get("name"), "verdict": t.get("verdict")} for t in tests[:SHOWN]],
        "more_tests": max(0, len(tests) - SHOWN),
    }


class BatchBook:
    """The service's batches, by id; each is graded by a thread of its own (`start`)."""

    def __init__(self, executor: Executor, quotas: QuotaBook, slots: threading.Semaphore) -> None:
        self.executor = executor
        self.quotas = quotas
        self.slots = slots  # the service's places in the pipeline, shared with its runs
        self._batches: dict[str, Batch] = {}
        self._threads: dict[str, threading.Thread] = {}
        self._lock = threading.Lock()
        self._stopping = False

    def start(self, batch: Batch, key: Key) -> None:
        """Enter `batch` and start grading it, or `QuotaExceeded` if its tenant has
        `MAX_OPEN` unfinished batches already."""
        with self._lock:
            self._forget_old()
            if self._stopping:
                raise QuotaExceeded("the service is stopping; send the batch again later", 5.0)
            open_now = [b for b in self._batches.values() if b.tenant == batch.tenant]
            if sum(b.finished is None for b in open_now) >= MAX_OPEN:
                raise QuotaExceeded(
                    f"tenant {batch.tenant!r} has {MAX_OPEN} batches running, its most; "
                    "wait for one to end or cancel one",
                    10.0,
                )
            self._batches[batch.id] = batch
            thread = threading.Thread(
                target=self._grade_all, args=(batch, key), name=f"hazmat-{batch.id}", daemon=True
            )
            self._threads[batch.id] = thread
        thread.start()

    def get(self, bid: str, key: Key) -> Batch:
        with self._lock:
            batch = self._batches.get(bid)
        if batch is None or batch.tenant != key.tenant:
            raise BatchNotFound(f"no batch {quoted(bid)}")
        return batch

    def mine(self, key: Key) -> list[Batch]:
        with self._lock:
            self._forget_old()
            return [b for b in self._batches.values() if b.tenant == key.tenant]

    def every(self) -> list[Batch]:
        """Every tenant's batches (the console, for an operator's key)."""
        with self._lock:
            self._forget_old()
            return list(self._batches.values())

    def stop(self) -> None:
        """Cancel every batch and wait for its running tasks (the service is stopping)."""
        with self._lock:
            self._stopping = True
            batches, threads = list(self._batches.values()), list(self._threads.values())
        for batch in batches:
            batch.cancelled.set()
        for thread in threads:
            thread.join()

    def _forget_old(self) -> None:
        now = time.time()
        for bid, batch in list(self._batches.items()):
            if batch.finished is not None and now - batch.finished > KEEP_S:
                del self._batches[bid]
                self._threads.pop(bid, None)

    def _grade_all(self, batch: Batch, key: Key) -> None:
        pending = iter(batch.tasks)
        lock = threading.Lock()

        def work() -> None:
            while not batch.cancelled.is_set():
                with lock:
                    entry = next(pending, None)
                if entry is None:
                    return
                line = self._grade_one(batch, key, *entry)
                if line is not None:
                    batch.add(line)

        try:
            with ThreadPoolExecutor(batch.jobs, thread_name_prefix=f"hazmat-{batch.id}") as pool:
                for future in [pool.submit(work) for _ in range(batch.jobs)]:
                    future.result()
        except Exception:  # a bug of ours: the batch still ends, and says so in its state
            log.exception("batch %s: grading failed", batch.id)
        finally:
            batch.end()

    def _grade_one(self, batch: Batch, key: Key, task: Task, raw: Any) -> dict[str, Any] | None:
        """One task's result line, graded once it has a place in the service and is admitted
        by the tenant's quotas (waiting, with back-off, while there is no room); None if the
        batch was cancelled before it started."""
        while not batch.cancelled.is_set():
            if not self.slots.acquire(timeout=WAIT_S):
                continue  # the service is busy: look at the cancel again, then wait on
            try:
                return self._graded(batch, key, task, raw)
            except QuotaExceeded as exc:
                pause = min(max(exc.retry_after_s, 0.1), 1.0)
            except HazmatError as exc:
                return _failed(task, str(exc))
            except Exception as exc:  # a bug of ours: the task gets its line all the same
                log.exception("batch %s: task %r failed", batch.id, task.id)
                return _failed(task, f"internal error ({type(exc).__name__}: {exc})")
            finally:
                self.slots.release()
            batch.cancelled.wait(pause)
        return None

    def _graded(self, batch: Batch, key: Key, task: Task, raw: Any) -> dict[str, Any]:
        with self.quotas.admit(batch.tenant, key.quotas):  # QuotaExceeded: no room now
            with batch.changed:
                batch.running += 1
            try:
                return self.executor.grade(task, raw, batch.options)
            finally:
                with batch.changed:
                    batch.running -= 1


class BatchRoutes:
    """The handlers; `body` reads a request body within the key's cap."""

    def __init__(
        self,
        sandbox: Sandbox,
        executor: Executor,
        quotas: QuotaBook,
        body: Body,
        slots: threading.Semaphore,
    ) -> None:
        self.sandbox = sandbox
        self.body = body
        self.book = BatchBook(executor, quotas, slots)

    async def create(self, request: Request, key: Key) -> Response:
        raw = await self.body(request, key.quotas.max_request_bytes)
        kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
        data, entries = _parse(raw, kind in JSON_LINES, dict(request.query_params))
        _, _, options = run_arguments({**_options_of(data), "code": ""}, key, self.sandbox.policy)
        wanted = ("trust", "runtime", "caller", "override_reason")
        options = {k: options[k] for k in wanted if options.get(k) is not None}
        if _fresh(data.get("fresh")):
            options["fresh"] = True
        jobs = _jobs(data.get("jobs"), key)
        tasks = await anyio.to_thread.run_sync(lambda: self._checked(entries, options))
        batch = Batch(key.tenant, tasks, jobs, options)
        self.book.start(batch, key)
        return JSONResponse(batch.info(), status_code=202)

    async def index(self, request: Request, key: Key) -> Response:
        return JSONResponse({"batches": [b.info() for b in self.book.mine(key)]})

    async def show(self, request: Request, key: Key) -> Response:
        waiting = self.book.executor.waiting_for_core()
        return JSONResponse(self._get(request, key).info(waiting))

    async def cancel(self, request: Request, key: Key) -> Response:
        batch = self._get(request, key)
        batch.cancelled.set()
        return JSONResponse(batch.info())

    async def results(self, request: Request, key: Key) -> Response:
        batch = self._get(request, key)
        wait = request.query_params.get("wait", "true")
        if wait not in ("true", "false"):
            raise InputError(f"wait must be true or false, not {quoted(wait)}")

        pause = WAIT_S if wait == "true" else 0.0

        async def lines() -> AsyncIterator[bytes]:
            sent = 0
            while True:
                more, ended = await anyio.to_thread.run_sync(batch.lines_from, sent, pause)
                for line in more:
                    yield line
                sent += len(more)
                if ended or wait == "false":
                    return

        return StreamingResponse(lines(), media_type="application/x-ndjson")

    def _get(self, request: Request, key: Key) -> Batch:
        return self.book.get(str(request.path_params["batch"]), key)

    def _checked(
        self, entries: list[tuple[str, Any]], options: Mapping[str, Any]
    ) -> list[tuple[Task, Any]]:
        """The tasks, each checked as `hazmat batch` checks them before anything runs."""
        tasks = parse_entries(entries, "tasks")
        grader = Grader(self.sandbox, **options)
        for task, _ in tasks:
            grader.check(task)
        return tasks


def _parse(
    body: bytes, lines: bool, query: dict[str, str]
) -> tuple[dict[str, Any], list[tuple[str, Any]]]:
    """The batch's options and its tasks as (where, JSON) pairs: from a JSON object with a
    `tasks` list, or from JSON Lines with the options in the query string."""
    if not lines:
        data = parse_body(body)
        unknown = sorted(set(data) - set(BATCH_FIELDS))
        if unknown:
            raise InputError(
                f"unknown field {quoted(unknown[0])} (fields: {', '.join(BATCH_FIELDS)})"
            )
        tasks = data.get("tasks")
        if not isinstance(tasks, list):
            raise InputError("field 'tasks' must be a list of task objects (docs/batch.md)")
        return data, [(f"tasks[{i}]", task) for i, task in enumerate(tasks)]
    unknown = sorted(set(query) - (set(BATCH_FIELDS) - {"tasks"}))
    if unknown:
        raise InputError(f"unknown query parameter {quoted(unknown[0])}")
    given: dict[str, Any] = dict(query)
    if "jobs" in given:
        given["jobs"] = _whole(given["jobs"], "jobs")
    entries = []
    for number, line in enumerate(body.split(b"\n"), 1):
        if line.strip():  # decoded as every body is (json_input.py): depth, numbers, text
            try:
                entries.append((f"line {number}", loads(line)))
            except InputError as exc:
                raise InputError(f"line {number}: {exc}") from None
    return given, entries


def _whole(text: str, name: str) -> int:
    """A whole number from the query string: ASCII digits, a few of them (int() takes other
    scripts' digits and refuses 4,301 of them with an error of its own)."""
    if not (text.isascii() and text.isdigit() and len(text) <= 9):
        raise InputError(f"{name} must be a whole number, not {quoted(text)}")
    return int(text)


def _options_of(data: Mapping[str, Any]) -> dict[str, Any]:
    return {k: data[k] for k in ("trust", "runtime", "override_reason") if k in data}


def _jobs(value: object, key: Key) -> int:
    """Tasks graded at once: at most the key's concurrent quota (its default)."""
    most = key.quotas.concurrent
    if value is None:
        return most
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= most:
        raise InputError(f"jobs must be a whole number in 1..{most} (this key's concurrent runs)")
    return value


def _fresh(value: object) -> bool:
    """Every test case in a fresh container of its own (`hazmat batch --fresh`)."""
    if value is None or isinstance(value, bool):
        return bool(value)
    if value in ("true", "false"):  # from the query string
        return value == "true"
    raise InputError(f"fresh must be true or false, not {quoted(value)}")


def _failed(task: Task, message: str) -> dict[str, Any]:
    """The line of a task the infrastructure could not grade: every verdict `infra_error`."""
    return TaskResult(task.id, (TestResult("infra_error", message),), task.total).to_dict()
