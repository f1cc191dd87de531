"""Many tasks at once: graded by a few threads over one `Sandbox`, each result as it comes.

`grade_many` yields `TaskResult`s in the order they finish, with at most `jobs` tasks running
and no more than `jobs` more waiting (the tasks are read lazily, so a long batch holds little
in memory). `ResultFile` is the output of `hazmat batch`: one JSON line per finished task,
written whole and synced, so that whatever stops the process (Ctrl-C, kill -9) leaves complete
lines only. When the batch is resumed, every complete line must be a result line (else the file
is refused and left as it is); only then is a partial last line (a crash of the machine
mid-write) cut off, and the ids of the lines are the tasks already done. A pipe, a FIFO or a
terminal takes the lines as they come, and cannot be resumed.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import stat
import sys
import threading
from collections.abc import Callable, Generator, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any

from hazmat._closing import Closable
from hazmat._exceptions import InfraError, InputError
from hazmat.audit.layout import write_fully
from hazmat.grade.grader import Grader, TaskResult
from hazmat.grade.tasks import Task

__all__ = ["ResultFile", "grade_many"]


def grade_many(
    grader: Grader, tasks: Iterable[Task], jobs: int = 4, stop: threading.Event | None = None
) -> Generator[TaskResult, None, None]:
    """Grade `tasks` with `jobs` threads; yield each result as it finishes. Once `stop` is
    set no task starts, and the results of those already started are still yielded (`hazmat
    batch`'s first Ctrl-C). Closing the iterator early (or an exception in the caller) cancels
    the tasks not yet started and waits for the running ones, whose results are lost."""
    if jobs < 1:
        raise InputError(f"jobs must be at least 1, not {jobs}")
    pending = iter(tasks)
    running: set[Future[TaskResult]] = set()
    with ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="hazmat-grade") as pool:
        try:
            _top_up(pool, grader, pending, running, 2 * jobs)
            while running:
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                stopping = stop is not None and stop.is_set()
                if stopping:  # the queued ones never start
                    running -= {future for future in running if future.cancel()}
                for future in done:
                    running.discard(future)
                    yield future.result()
                if not stopping:
                    _top_up(pool, grader, pending, running, 2 * jobs)
        finally:
            for future in running:
                future.cancel()


def _stderr(line: str) -> None:
    print(f"hazmat: {line}", file=sys.stderr, flush=True)


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


class ResultFile(Closable):
    """The results of a batch, one JSON line per task, safe to stop at any moment.

    `path` is a regular file (created if need be), or a pipe, a FIFO or a terminal, which get
    the lines as they come: nothing is synced there (there is nothing to sync) and nothing can
    be read back, so `resume` needs a regular file. A FIFO nobody reads yet is waited for,
    `say` told so first (never a silent block)."""

    def __init__(
        self, path: Path, resume: bool = False, say: Callable[[str], None] = _stderr
    ) -> None:
        self.path = path
        self._lock = threading.Lock()
        self.done: set[str] = set()
        if resume:
            _resumable(path)  # before the open, which waits for a FIFO's reader
        try:
            self._fd = _open_output(path, say)
        except OSError as exc:
            raise InputError(f"cannot write results to {path}: {exc.strerror or exc}") from None
        try:
            seen = os.fstat(self._fd)
            self.regular = stat.S_ISREG(seen.st_mode)
            if self.regular:
                _hold(self._fd, path)
            if self.regular and seen.st_size and not resume:
                raise InputError(
                    f"{path} already has results: give --resume to carry on with the tasks "
                    "not in it, or another output file"
                )
            if resume:
                _resumable(path, seen.st_mode)
                self.done = _finished_ids(path, self._fd)
        except BaseException:
            self.close()
            raise

    def write(self, record: dict[str, Any]) -> None:
        """One line, written whole (a short write is continued) and, in a regular file,
        synced; a write that failed is taken back, so no partial line stays behind."""
        line = (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
        with self._lock:
            size = os.fstat(self._fd).st_size if self.regular else 0
            try:
                write_fully(self._fd, line)
                if self.regular:
                    os.fsync(self._fd)
            except BrokenPipeError:
                raise  # the reader went away: the command ends quietly, as for `| head`
            except OSError as exc:
                if self.regular:
                    with contextlib.suppress(OSError):
                        os.ftruncate(self._fd, size)
                raise InfraError(
                    f"cannot write results to {self.path}: {exc.strerror or exc}"
                ) from None
            self.done.add(record["id"])

    def close(self) -> None:
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1



def _hold(fd: int, path: Path) -> None:
    """Hold the results file for this batch alone (an advisory lock, released when it closes):
    two batches on one file, one of them resuming, would both grade the tasks it lacks."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise InputError(
            f"another batch is writing its results to {path}: wait for it to end (then "
            "--resume carries on with the tasks it did not grade), or give another output file"
        ) from None


def _open_output(path: Path, say: Callable[[str], None]) -> int:
    """A descriptor to append to `path` (made if missing), in blocking mode. The first open
    does not block: a FIFO without a reader fails it (ENXIO), and is then waited for."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC
    try:
        fd = os.open(path, flags | os.O_NONBLOCK, 0o644)
    except OSError as exc:
        if exc.errno != errno.ENXIO:
            raise
        mode = os.stat(path).st_mode
        if not stat.S_ISFIFO(mode):
            raise InputError(
                f"cannot write results to {path}: it is {_kind(mode)} (give a file, a FIFO or "
                "a pipe)"
            ) from None
        say(f"waiting for a reader on {path} (a FIFO nobody reads yet)")
        fd = os.open(path, flags, 0o644)
    os.set_blocking(fd, True)
    return fd


def _resumable(path: Path, mode: int | None = None) -> None:
    """`--resume` reads the finished tasks back: a regular file, or one not made yet."""
    if mode is None:
        try:
            mode = os.stat(path).st_mode
        except OSError:
            return  # made by the open (or its error said there)
    if not stat.S_ISREG(mode):
        raise InputError(
            f"--resume reads the finished tasks back from the output, and {path} is "
            f"{_kind(mode)}, not a regular file: what it took cannot be read back"
        )


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a pipe"
    if stat.S_ISCHR(mode):
        return "a terminal or a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a directory" if stat.S_ISDIR(mode) else "a special file"


def _finished_ids(path: Path, fd: int) -> set[str]:
    """The ids of the result lines. Every complete line must be one, or the file is refused
    untouched. A last line without its newline is then either a whole result line (its
    newline is added) or the start of one, torn by a crash mid-write (it is cut off);
    anything else is refused too."""
    data = path.read_bytes()
    *lines, last = data.split(b"\n")
    ids = set()
    for number, line in enumerate(lines, 1):
        if line.strip():
            ids.add(_result_id(line, path, number))
    if not last.strip():
        return ids
    number = len(lines) + 1
    if _json(last) is not None:  # a whole line whose newline was lost
        ids.add(_result_id(last, path, number))
        write_fully(fd, b"\n")
    elif last.startswith(_LINE_START) or _LINE_START.startswith(last):
        os.ftruncate(fd, len(data) - len(last))  # the start of a line, torn by a crash
        os.fsync(fd)
    else:
        raise InputError(f"{path}:{number} {_NOT_OURS}")
    return ids


_LINE_START = b'{"id":"'  # how every line `write` makes begins (the result's id comes first)
_NOT_OURS = (
    "is not a result line (a JSON object with an id and a verdict): the file cannot be "
    "resumed, and was left as it is"
)


def _json(line: bytes) -> Any:
    """The line's JSON value, or None."""
    try:
        return json.loads(line)
    except (ValueError, RecursionError):
        return None


def _result_id(line: bytes, path: Path, number: int) -> str:
    record = _json(line)
    if isinstance(record, dict):
        found, verdict = record.get("id"), record.get("verdict")
        if isinstance(found, str) and isinstance(verdict, str):
            return found
    raise InputError(f"{path}:{number} {_NOT_OURS}")
