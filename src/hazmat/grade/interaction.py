"""Interactive problems: a submission and an interactor, two sandboxed programs whose stdin and
stdout are joined to each other through the host, for one test case.

Each runs in a sandbox of its own, through the pipeline like any run, at the same time. The
host relays: what the submission writes to stdout goes to the interactor's stdin as it comes,
and the interactor's stdout to the submission's stdin (a `Watch` on each run, whose `feed` is
a pipe the other run's output is written into, hazmat/watch.py); neither program touches the
other's sandbox, and nothing else reaches either. When one of them ends, the other's stdin is
closed. The transcript (who wrote what, in the order the host relayed it) is kept up to
`TRANSCRIPT_BYTES`.

The interactor is testlib's (`registerInteraction`): it gets the files `input` (the test's
stdin) and `answer` (its `expected_stdout`), and `input output answer` as its arguments
(`output` is testlib's `tout`, unused); its exit code judges as a testlib checker's
(grade/checkers.py). It runs on the wall clock with the trust level's time limit, so that it
never waits on a core the submission holds; its failures are `infra_error`.

The verdict, in this order (each depends only on the two runs, not on which ended first):

1. the submission was blocked or did not build: that verdict;
2. the interactor failed (testlib's `_fail`, a crash, its own limits): `infra_error`;
3. the submission passed its own time, memory or output limit: that verdict (a submission
   waiting for input that never comes is `time_limit`, the idle case of the CPU clock);
4. the interactor rejected the exchange (`_wa`, `_pe`, an unexpected end, `quitp` below 1):
   `wrong_answer`, with the interactor's message;
5. the submission exited non-zero: `runtime_error`;
6. else `accepted`.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hazmat.grade.checkers import Judged, testlib_judged
from hazmat.grade.verdicts import VERDICT_OF
from hazmat.models import ExecutionResult, Outcome
from hazmat.watch import Watch

__all__ = ["TRANSCRIPT_BYTES", "Exchange", "Transcript", "interact", "verdict"]

TRANSCRIPT_BYTES = 64 * 1024
# the submission's own limits, and a run the host could not finish: before the interactor's word
_LIMITS = (
    Outcome.TIMEOUT,
    Outcome.MEMORY_LIMIT,
    Outcome.OUTPUT_LIMIT,
    Outcome.PIDS_LIMIT,
    Outcome.INFRA_ERROR,
    Outcome.CANCELLED,
)
_ENDS = (Outcome.BLOCKED, Outcome.COMPILE_ERROR, Outcome.COMPILE_TIMEOUT)


@dataclass
class Transcript:
    """What each side wrote, in the order the host relayed it, up to `most` bytes in all."""

    most: int = TRANSCRIPT_BYTES
    entries: list[tuple[str, bytes]] = field(default_factory=list)
    kept: int = 0
    cut: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, side: str, data: bytes) -> None:
        with self._lock:
            room = self.most - self.kept
            if room <= 0 or self.cut:
                self.cut = self.cut or bool(data)
                return
            part = data[:room]
            self.kept += len(part)
            self.cut = len(part) < len(data)
            if self.entries and self.entries[-1][0] == side:
                self.entries[-1] = (side, self.entries[-1][1] + part)
            else:
                self.entries.append((side, part))

    def to_list(self) -> list[dict[str, str]]:
        shown = [{"from": s, "text": d.decode("utf-8", "replace")} for s, d in self.entries]
        if self.cut:
            shown.append({"from": "hazmat", "text": f"(cut at {self.most} bytes)"})
        return shown


@dataclass(frozen=True)
class Exchange:
    """One interactive test: both runs, and the transcript."""

    program: ExecutionResult
    interactor: ExecutionResult
    transcript: Transcript


class _Pipe:
    """A pipe from one run's output (written on its watch's thread) to the other's feed."""

    def __init__(self) -> None:
        self.read, self.write = os.pipe()
        self.lock = threading.Lock()
        self.closed = False

    def send(self, data: bytes) -> None:
        """Block while the pipe is full (the other side reads it as it can); after the other
        side ended, drop it."""
        view = memoryview(data)
        while view:
            with self.lock:
                if self.closed:
                    return
                fd = self.write
            try:
                view = view[os.write(fd, view) :]
            except OSError:  # the other side ended and its end was closed
                return

    def end_writing(self) -> None:
        """The writer's run ended: the reader's program gets EOF once it has read the rest."""
        with self.lock:
            if not self.closed:
                self.closed = True
                os.close(self.write)

    def end_reading(self) -> None:
        """The reader's run ended: a writer blocked on a full pipe gets EPIPE and drops."""
        with contextlib.suppress(OSError):
            os.close(self.read)


def interact(
    run_program: Callable[[Watch], ExecutionResult],
    run_interactor: Callable[[Watch], ExecutionResult],
    transcript_bytes: int = TRANSCRIPT_BYTES,
) -> Exchange:
    """Run both at once, each given a watch that relays its stdout to the other's stdin."""
    transcript = Transcript(transcript_bytes)
    to_interactor, to_program = _Pipe(), _Pipe()

    def relay(side: str, pipe: _Pipe) -> Callable[[str, bytes], None]:
        def on_output(stream: str, data: bytes) -> None:
            if stream == "stdout":
                transcript.add(side, data)
                pipe.send(data)

        return on_output

    found: dict[str, Any] = {}

    watch = Watch(relay("interactor", to_program), feed=to_interactor.read)
    started = watch.started

    def interactor() -> None:
        try:
            found["interactor"] = run_interactor(watch)
        except BaseException as exc:
            found["error"] = exc
        finally:
            started.set()  # a run refused before it started
            to_program.end_writing()
            to_interactor.end_reading()

    thread = threading.Thread(target=interactor, name="hazmat-interactor", daemon=True)
    thread.start()
    try:
        # the submission starts once the interactor runs (after its build): the time it waits
        # for an answer is then the interactor's thinking, never its build
        started.wait()
        if "error" in found:
            raise found["error"]
        program = run_program(Watch(relay("program", to_interactor), feed=to_program.read))
    finally:
        to_interactor.end_writing()
        to_program.end_reading()
        thread.join()
    if "error" in found:
        raise found["error"]
    return Exchange(program, found["interactor"], transcript)


def verdict(program: ExecutionResult, interactor: ExecutionResult) -> Judged:
    """The test's verdict from both runs (the module's order)."""
    if program.outcome in _ENDS:
        return Judged(VERDICT_OF[program.outcome], program.error)
    said = testlib_judged(interactor)
    if said.verdict == "infra_error":
        why = (said.message or "").replace("the checker failed", "the interactor failed")
        return Judged("infra_error", why)
    if program.outcome in _LIMITS or (
        said.verdict == "accepted" and program.outcome is not Outcome.OK
    ):
        return Judged(VERDICT_OF[program.outcome], program.error)
    return said
