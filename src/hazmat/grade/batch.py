"""Many tasks at once: graded by a few threads over one `Sandbox`, each result as it comes.

`grade_many` yields `TaskResult`s in the order they finish, with at most `jobs` tasks running
and no more than `jobs` more waiting (the tasks are read lazily, so a long batch holds little
in memory). `ResultFile` is the output of `hazmat batch`: one JSON line per finished task,
written with a single `write` and synced, so that whatever stops the process (Ctrl-C, kill -9)
leaves complete lines only; a partial last line (a crash of the machine mid-write) is cut off
when the batch is resumed, and the ids of the complete lines are the tasks already done.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Generator, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any

from hazmat._exceptions import InputError
from hazmat.grade.grader import Grader, TaskResult
from hazmat.grade.tasks import Task

__all__ = ["ResultFile", "grade_many"]


def grade_many(
    grader: Grader, tasks: Iterable[Task], jobs: int = 4
) -> Generator[TaskResult, None, None]:
    """Grade `tasks` with `jobs` threads; yield each result as it finishes. Closing the
    iterator early (or an exception in the caller) cancels the tasks not yet started and
    waits for the running ones."""
    if jobs < 1:
        raise InputError(f"jobs must be at least 1, not {jobs}")
    pending = iter(tasks)
    running: set[Future[TaskResult]] = set()
    with ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="hazmat-grade") as pool:
        try:
            _top_up(pool, grader, pending, running, 2 * jobs)
            while running:
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in done:
                    running.discard(future)
                    yield future.result()
                _top_up(pool, grader, pending, running, 2 * jobs)
        finally:
            for future in running:
                future.cancel()


def _top_up(
    pool: ThreadPoolExecutor,
    grader: Grader,
    pending: Iterator[Task],
    running: set[Future[TaskResult]],
    most: int,
) -> None:
    while len(running) < most:
        task = next(pending, None)
        if task is None:
            return
        running.add(pool.submit(grader.grade, task))


class ResultFile:
    """The results of a batch, one JSON line per task, safe to stop at any moment."""

    def __init__(self, path: Path, resume: bool = False) -> None:
        self.path = path
        self._lock = threading.Lock()
        self.done: set[str] = set()
        try:
            if path.exists() and path.stat().st_size and not resume:
                raise InputError(
                    f"{path} already has results: give --resume to carry on with the tasks "
                    "not in it, or another output file"
                )
            if resume and path.exists():
                self.done = _finished_ids(path)
            self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        except OSError as exc:
            raise InputError(f"cannot write results to {path}: {exc.strerror or exc}") from None

    def write(self, record: dict[str, Any]) -> None:
        line = (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
        with self._lock:
            os.write(self._fd, line)
            os.fsync(self._fd)
            self.done.add(record["id"])

    def close(self) -> None:
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1

    def __enter__(self) -> ResultFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _finished_ids(path: Path) -> set[str]:
    """The ids of the complete lines; a partial last line is cut off."""
    data = path.read_bytes()
    end = data.rfind(b"\n") + 1
    if end < len(data):
        with open(path, "r+b") as f:
            f.truncate(end)
    ids = set()
    for number, line in enumerate(data[:end].splitlines(), 1):
        try:
            ids.add(json.loads(line)["id"])
        except (ValueError, KeyError, TypeError):
            raise InputError(
                f"{path}:{number} is not a result line; the file cannot be resumed"
            ) from None
    return ids
