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
(grade/checkers.py), and only when it chose it (grade/harness.py: an interactor that
crashes, or does not compile, failed). It runs on the wall clock, so that it never waits on a
core the submission holds, with a limit past the latest moment the submission can be stopped
at (`harness.harness_timeout`, derived from the submission's own checked limit and clock);
once the submission has ended it has `harness.MARGIN_S` more to end, then it is cancelled.
Its failures are `infra_error`.

The verdict, in this order (each depends only on the two runs, not on which ended first):

1. the submission was blocked or did not build: that verdict;
2. the interactor failed (testlib's `_fail`, a crash, its own limits): `infra_error`;
3. the submission passed its own time, memory or output limit: that verdict (a submission
   waiting for input that never comes is `idleness_limit`, the idle case of the CPU clock), but
   for one stopped as idle after the interactor had rejected the exchange and ended: it waited
   on nothing, and the rejection (4) is the verdict. The interactor ended it when it rejected
   what it read (not the end of its input: testlib's `_unexpected_eof`, which is what a
   program stopped mid-exchange leaves it), however late its end is seen;
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

from hazmat.grade.checkers import TESTLIB_EOF, Judged, RunningSandbox, testlib_judged
from hazmat.grade.harness import MARGIN_S, as_judge, guarded, harness_timeout, marked
from hazmat.grade.tasks import Interactor
from hazmat.grade.verdicts import verdict_of
from hazmat.models import ExecutionRequest, ExecutionResult, Outcome
from hazmat.policy import Clock
from hazmat.run.intake import Checked, for_harness
from hazmat.watch import Watch

__all__ = [
    "TRANSCRIPT_BYTES",
    "Interaction",
    "Transcript",
    "interact",
    "run_interactor",
    "verdict",
]

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
    _lock: threading.Lock = field(default_factory=threading.Lock, compare=False, repr=False)

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
class Interaction:
    """One interactive test: both runs, and the transcript."""

    program: ExecutionResult
    interactor: ExecutionResult
    transcript: Transcript
    # the interactor's output had ended when the program's did: it ended the exchange, and a
    # program still waiting on it after that waited on nothing (`verdict`)
    interactor_first: bool = False


class _Pipe:
    """A pipe from one run's output (written on its watch's thread) to the other's feed."""

    def __init__(self) -> None:
        self.read, self.write = os.pipe()
        self.lock = threading.Lock()  # end_writing comes from two threads (see interact)
        self.closed = False

    def send(self, data: bytes) -> None:
        """Block while the pipe is full (the other side reads it as it can); after the other
        side ended, drop it. Only the writer's watch thread sends, and it has handed over
        everything before the pipe's write end is closed (the watch's `ended`)."""
        view = memoryview(data)
        while view and not self.closed:
            try:
                view = view[os.write(self.write, view) :]
            except OSError:  # the other side ended and its end was closed
                return

    def end_writing(self) -> None:
        """The writer's program ended: the reader's program gets EOF once it has read the rest."""
        with self.lock:
            if not self.closed:
                self.closed = True
                os.close(self.write)

    def end_reading(self) -> None:
        """The reader's run ended: a writer blocked on a full pipe gets EPIPE and drops."""
        with contextlib.suppress(OSError):
            os.close(self.read)


def run_interactor(
    sandbox: RunningSandbox,
    interactor: Interactor,
    options: dict[str, Any],
    beside: ExecutionRequest,
    watch: Watch,
) -> ExecutionResult:
    """The interactor's run (`options`: runs.interactor_options) beside the submission's
    request `beside`: its code guarded and its wall-clock limit past the submission's
    (harness.py), its own failures made `infra_error` outcomes."""
    code, language = interactor.code, interactor.language
    checked = beside.checked
    if not isinstance(checked, Checked):
        raise TypeError("the submission's request must come from Sandbox.request")
    timeout = harness_timeout(checked.limits.timeout_s, beside.clock or Clock.WALL)
    request = sandbox.request(guarded(code, language), language, **options)
    run = sandbox.execute(marked(for_harness(request, timeout)), on_output=watch)
    return as_judge(run, code, language, "interactor")


def interact(
    run_program: Callable[[Watch], ExecutionResult],
    run_interactor: Callable[[Watch], ExecutionResult],
    transcript_bytes: int = TRANSCRIPT_BYTES,
    grace_s: float = MARGIN_S,
) -> Interaction:
    """Run both at once, each given a watch that relays its stdout to the other's stdin. Once
    the program has ended, the interactor has `grace_s` to end, then it is cancelled."""
    transcript = Transcript(transcript_bytes)
    to_interactor, to_program = _Pipe(), _Pipe()

    def relay(side: str, pipe: _Pipe) -> Callable[[str, bytes], None]:
        def on_output(stream: str, data: bytes) -> None:
            if stream == "stdout":
                transcript.add(side, data)
                pipe.send(data)

        return on_output

    # both start together: each is built, and the submission holds its core, before either
    # gets its go, so neither's time counts the other's build or wait
    gate = threading.Event()
    program_watch = Watch(relay("program", to_interactor), feed=to_program.read, gate=gate)
    interactor_watch = Watch(relay("interactor", to_program), feed=to_interactor.read, gate=gate)
    # a side's end closes the other's stdin as soon as its pump is done (all of its output
    # handed over), not once its whole run has returned (the engine's checks, the audit)
    interactor_first = threading.Event()  # its output had ended when the program's did
    helpers = [
        threading.Thread(
            target=_close_after,
            args=(program_watch, to_interactor, interactor_watch, interactor_first),
        ),
        threading.Thread(target=_close_after, args=(interactor_watch, to_program)),
    ]
    for helper in helpers:
        helper.daemon = True
    helpers.append(
        threading.Thread(
            target=_open_when_ready, args=(gate, program_watch, interactor_watch), daemon=True
        )
    )
    done: list[ExecutionResult | BaseException] = []

    def interactor() -> None:
        try:
            done.append(run_interactor(interactor_watch))
        except BaseException as exc:
            done.append(exc)
        finally:
            interactor_watch.ready.set()  # a run refused, or that never got to its start
            interactor_watch.ended.set()
            to_interactor.end_reading()

    thread = threading.Thread(target=interactor, name="hazmat-interactor", daemon=True)
    try:
        for helper in helpers:
            helper.start()
        thread.start()
        program = run_program(program_watch)
    finally:
        program_watch.ready.set()
        program_watch.ended.set()
        to_program.end_reading()
        if not interactor_watch.ended.wait(grace_s):
            interactor_watch.cancel(f"the program ended {grace_s:g} s ago and it did not")
        thread.join()
        for helper in helpers:
            helper.join()
    if isinstance(done[0], BaseException):
        raise done[0]
    return Interaction(program, done[0], transcript, interactor_first.is_set())


def _open_when_ready(gate: threading.Event, *watches: Watch) -> None:
    for watch in watches:
        watch.ready.wait()
    gate.set()


def _close_after(
    watch: Watch,
    pipe: _Pipe,
    other: Watch | None = None,
    other_first: threading.Event | None = None,
) -> None:
    """Once `watch`'s output has ended, close `pipe` (the other side's stdin); with `other`,
    set `other_first` if its output had ended before."""
    watch.ended.wait()
    if other is not None and other_first is not None and other.ended.is_set():
        other_first.set()
    pipe.end_writing()


def verdict(
    program: ExecutionResult, interactor: ExecutionResult, interactor_first: bool = False
) -> Judged:
    """The test's verdict from both runs (the module's order). A program stopped as idle after
    the interactor had ended the exchange by rejecting it waited on nothing: the rejection is
    the verdict, as it is when the program sees its stdin close and ends, whichever comes
    first on a busy machine. That the interactor ended it is read from what it said (a
    rejection of what it read, not testlib's `_unexpected_eof`), not only from which side's
    end was seen first (`interactor_first`), which a loaded machine can delay past the
    program's idle backstop."""
    if program.outcome in _ENDS:
        return Judged(verdict_of(program), program.error)
    said = testlib_judged(interactor, "the interactor")
    if said.verdict == "infra_error":
        return said
    idle = program.outcome is Outcome.TIMEOUT and program.stopped_by == "idle"
    # the interactor ended the exchange itself: it was seen to end first, or it rejected what
    # it read (anything but the end of its input, which a program stopped mid-exchange leaves)
    decided = interactor_first or interactor.exit_code != TESTLIB_EOF
    if idle and decided and said.verdict != "accepted":
        return said
    if program.outcome in _LIMITS or (
        said.verdict == "accepted" and program.outcome is not Outcome.OK
    ):
        return Judged(verdict_of(program), program.error)
    if program.outcome is not Outcome.OK:  # no share for a program that crashed
        return Judged(said.verdict, said.message)
    return said
