"""Interactive problems' own logic, without an engine: the host's relay between two runs (each
side's output to the other's stdin, EOF when one ends, the transcript in order and cut at its
cap, the submission started only once the interactor runs), the verdict's order from both
runs, and the tasks refused before anything runs. (On the real engine, under runc and gVisor:
tests/execution/test_judging.py.)"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import cast

import pytest

from hazmat import InputError, Sandbox
from hazmat.backends.base import Job
from hazmat.grade.grader import Grader
from hazmat.grade.interaction import Transcript, interact, verdict
from hazmat.grade.tasks import parse_task
from hazmat.models import ExecutionResult
from hazmat.testing import RecordingBackend, report
from hazmat.watch import Watch


def lines_from(fd: int) -> Callable[[], bytes]:
    """Read a line at a time from `fd` (b"" at its end)."""
    pending = bytearray()

    def line() -> bytes:
        while b"\n" not in pending:
            data = os.read(fd, 4096)
            if not data:
                taken = bytes(pending)
                pending.clear()
                return taken
            pending.extend(data)
        at = pending.index(b"\n") + 1
        taken = bytes(pending[:at])
        del pending[:at]
        return taken

    return line


def fake_run(body: Callable[[Watch, Callable[[], bytes]], object]) -> Callable[[Watch], object]:
    """A run as the pump drives one: ready at its gate, then its go (`started`), its output
    handed to the watch, its stdin the watch's feed, the watch flushed at its end."""

    def run(watch: Watch) -> object:
        assert watch.gate is not None and watch.feed is not None
        watch.ready.set()
        watch.gate.wait()
        watch.started.set()
        try:
            return body(watch, lines_from(watch.feed))
        finally:
            watch.flush()
            watch.ended.set()

    return run


def test_each_side_hears_the_other_and_the_transcript_keeps_the_order() -> None:
    heard: dict[str, list[bytes]] = {"program": [], "interactor": []}

    def interactor(watch: Watch, read: Callable[[], bytes]) -> str:
        watch.write("stdout", b"n=3\n")
        heard["interactor"].append(read())
        watch.write("stderr", b"not relayed\n")
        watch.write("stdout", b"got it\n")
        return "interactor's result"

    def program(watch: Watch, read: Callable[[], bytes]) -> str:
        heard["program"].append(read())
        watch.write("stdout", b"answer 3\n")
        heard["program"].append(read())
        heard["program"].append(read())  # EOF: the interactor has ended
        return "program's result"

    exchange = interact(
        cast(Callable[[Watch], ExecutionResult], fake_run(program)),
        cast(Callable[[Watch], ExecutionResult], fake_run(interactor)),
    )
    assert (exchange.program, exchange.interactor) == ("program's result", "interactor's result")
    assert heard == {"program": [b"n=3\n", b"got it\n", b""], "interactor": [b"answer 3\n"]}
    assert exchange.interactor_first  # the program read its EOF: the interactor ended first
    assert exchange.transcript.to_list() == [
        {"from": "interactor", "text": "n=3\n"},
        {"from": "program", "text": "answer 3\n"},
        {"from": "interactor", "text": "got it\n"},
    ]


def test_both_start_together_and_a_flood_after_the_interactor_ended_is_dropped() -> None:
    watches: dict[str, Watch] = {}

    def interactor(watch: Watch, read: Callable[[], bytes]) -> bool:
        watches["interactor"] = watch
        read()  # one line, then it ends, whatever comes after
        return watches["program"].ready.is_set()

    def program(watch: Watch, read: Callable[[], bytes]) -> bool:
        watches["program"] = watch
        for _ in range(2000):  # far more than a pipe holds, after the interactor is gone
            watch.write("stdout", b"x" * 1000 + b"\n")
        return watches.get("interactor") is None or watches["interactor"].ready.is_set()

    exchange = interact(
        cast(Callable[[Watch], ExecutionResult], fake_run(program)),
        cast(Callable[[Watch], ExecutionResult], fake_run(interactor)),
        transcript_bytes=4000,
    )
    # neither began before the other was ready (built, its core held)
    assert (exchange.program, exchange.interactor) == (True, True)
    shown = exchange.transcript.to_list()
    assert shown[-1] == {"from": "hazmat", "text": "(cut at 4000 bytes)"}
    assert sum(len(e["text"]) for e in shown[:-1]) == 4000


def test_a_program_that_ends_first_is_not_waiting_on_the_interactor() -> None:
    def interactor(watch: Watch, read: Callable[[], bytes]) -> bytes:
        return read() + read()  # its line, then the EOF of the program's end

    def program(watch: Watch, read: Callable[[], bytes]) -> None:
        watch.write("stdout", b"! 7\n")

    exchange = interact(
        cast(Callable[[Watch], ExecutionResult], fake_run(program)),
        cast(Callable[[Watch], ExecutionResult], fake_run(interactor)),
    )
    assert exchange.interactor == b"! 7\n" and not exchange.interactor_first


def test_an_error_on_the_interactors_side_is_raised_on_the_callers() -> None:
    def interactor(watch: Watch) -> ExecutionResult:
        raise InputError("no such language")

    heard: list[bytes] = []

    def program(watch: Watch, read: Callable[[], bytes]) -> None:
        heard.append(read())  # its stdin ends: nobody will ever write to it

    with pytest.raises(InputError, match="no such language"):
        interact(cast(Callable[[Watch], ExecutionResult], fake_run(program)), interactor)
    assert heard == [b""]


def test_a_transcript_keeps_whole_chunks_of_one_side_together() -> None:
    transcript = Transcript(most=8)
    transcript.add("program", b"ab")
    transcript.add("program", b"cd")
    transcript.add("interactor", b"efghij")
    assert transcript.to_list() == [
        {"from": "program", "text": "abcd"},
        {"from": "interactor", "text": "efgh"},
        {"from": "hazmat", "text": "(cut at 8 bytes)"},
    ]


def result(**facts: object) -> ExecutionResult:
    """A real result, of a run the scripted backend answers with `facts`."""
    with Sandbox(backend=RecordingBackend(report(**facts))) as sandbox:
        return sandbox.run("pass", "python")


OK = {"exit_code": 0}
IDLE = {"exit_code": 124, "timed_out": True}
CRASHED = {"exit_code": 1, "stderr": b"EOFError\n"}


@pytest.mark.parametrize(
    ("program", "interactor", "expected"),
    [
        (OK, {"exit_code": 0, "stderr": b"ok\n"}, ("accepted", None)),
        (OK, {"exit_code": 1, "stderr": b"wrong answer 5\n"}, ("wrong_answer", "wrong answer 5")),
        # the interactor's failure first: never the submission's fault
        (IDLE, {"exit_code": 3, "stderr": b"FAIL bad test\n"}, ("infra_error", None)),
        (OK, {"exit_code": 124, "timed_out": True}, ("infra_error", None)),
        # then the submission's own limits, whatever the interactor made of its silence
        (IDLE, {"exit_code": 8, "stderr": b"unexpected eof\n"}, ("time_limit", None)),
        # on the CPU clock, a program stopped as idle: a judge's idleness limit
        (IDLE | {"stopped_by": "idle"}, {"exit_code": 8}, ("idleness_limit", None)),
        # then the interactor's word, before a crash that followed it
        (CRASHED, {"exit_code": 1, "stderr": b"wrong answer 5\n"}, ("wrong_answer", None)),
        # and a crash the interactor did not see
        (CRASHED, {"exit_code": 0, "stderr": b"ok\n"}, ("runtime_error", None)),
        (OK, {"exit_code": 7, "stderr": b"points 0.5 close\n"}, ("partially_correct", None)),
    ],
)
def test_the_verdict_comes_from_both_runs_in_a_fixed_order(
    program: dict[str, object], interactor: dict[str, object], expected: tuple[str, str | None]
) -> None:
    judged = verdict(result(**program), result(**interactor))
    assert judged.verdict == expected[0]
    if expected[1] is not None:
        assert judged.message == expected[1]
    if expected[0] == "infra_error":
        assert judged.message is not None and judged.message.startswith("the interactor failed")


def test_a_program_idle_after_the_interactor_rejected_and_ended_gets_the_rejection() -> None:
    """Whether the program sees its stdin close before its idle backstop is the machine's
    load; which of the two ended the exchange is not: the interactor's rejection of what it
    read says it, even when its end was seen after the program's (CI run 2 of stop 76: a
    JavaScript guesser past 30 questions, `idleness_limit` on a loaded machine)."""
    idle = result(exit_code=124, timed_out=True, stopped_by="idle")
    rejected = result(exit_code=1, stderr=b"wrong answer more than 30 questions\n")
    accepted = result(exit_code=0, stderr=b"ok 7 in 3 questions\n")
    cut_off = result(exit_code=8, stderr=b"unexpected eof\n")
    assert verdict(idle, rejected, interactor_first=True).verdict == "wrong_answer"
    assert verdict(idle, rejected, interactor_first=False).verdict == "wrong_answer"
    # the program idled first (it never flushed), and the interactor's "unexpected eof" came
    # after it was stopped: the program's idleness is the verdict
    assert verdict(idle, cut_off).verdict == "idleness_limit"
    # the interactor accepted and closed its side; a program that waits on after that idles
    assert verdict(idle, accepted, interactor_first=True).verdict == "idleness_limit"
    assert verdict(idle, accepted).verdict == "idleness_limit"


def interactive(**extra: object) -> dict[str, object]:
    return {
        "id": "t",
        "language": "python",
        "code": "print('? 1')",
        "interactor": {"code": "int main() {}"},
        "tests": [{"stdin": "7"}],
        **extra,
    }


def test_an_interactive_task_is_judged_by_its_interactor_alone() -> None:
    task = parse_task(interactive())
    assert task.interactor is not None and task.interactor.language == "cpp"
    assert task.tests[0].expected_stdout == ""  # the answer file may be empty
    with pytest.raises(InputError, match=r"\.comparator: an interactive task is judged by"):
        parse_task(interactive(comparator="exact"))
    parse_task(interactive(comparator={"name": "testlib", "code": "x"}))  # after the interactor
    with pytest.raises(InputError, match=r"tests\[0\]\.comparator: an interactive task"):
        parse_task(interactive(tests=[{"stdin": "7", "comparator": "exact"}]))
    with pytest.raises(InputError, match=r"interactor\.language: unknown language"):
        parse_task(interactive(interactor={"code": "x", "language": "cobol"}))
    plain = {k: v for k, v in interactive().items() if k != "interactor"}
    with pytest.raises(InputError, match=r"tests\[0\]: 'expected_stdout' is a required"):
        parse_task(plain)


def test_a_checker_judges_the_interactors_output_file_once_it_accepts() -> None:
    """Polygon's way, on the scripted backend: the interactor writes its log to `output`; the
    task's testlib checker gets that log as its output, with the test's input and answer."""

    def answer(job: Job) -> object:
        files = job.program.files
        if "answer" in files and "output" not in files:  # the interactor
            return report(files={"output": b"log of " + files["input"]})
        if "output" in files:  # the checker
            right = files["output"] == b"log of 7"
            return report(exit_code=0 if right else 1, stderr=b"wrong answer bad log\n")
        return report()  # the submission

    backend = RecordingBackend(answer=answer)  # type: ignore[arg-type]
    checker = {"name": "testlib", "code": "int main() {}"}
    with Sandbox(backend=backend) as sandbox:
        task = parse_task(interactive(comparator=checker, tests=[{"stdin": "7"}, {"stdin": "8"}]))
        result = Grader(sandbox).grade(task)
    assert [t.verdict for t in result.tests] == ["accepted", "wrong_answer"]
    assert result.tests[1].message == "wrong answer bad log"
    checked = [j.program for j in backend.jobs if "output" in j.program.files]
    assert [dict(p.files)["output"] for p in checked] == [b"log of 7", b"log of 8"]
    assert list(checked[0].args) == ["input", "output", "answer"]
