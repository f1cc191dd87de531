"""A session's backend (backends/kept/session.py) on an in-memory container: what a call told
to stop says it kept, and when the session ends. (On the real engine:
tests/execution/test_sessions.py.)"""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace
from typing import Any

import pytest

from hazmat import Policy, SessionClosed
from hazmat.backends.base import Job, Program, RunReport, Spec
from hazmat.backends.kept.session import SessionBackend
from hazmat.languages import get_language
from hazmat.policy import HostResources, Runtime, TrustLevel

LIMITS = Policy().settings(TrustLevel.UNTRUSTED).limits


class FakeHost:
    """Starts a pretend container and answers each call with the next report: with the bytes
    past its end (the session goes on) or None (the stream ended: the container is gone)."""

    tier = "docker"

    def __init__(self, *answers: tuple[RunReport, bytes | None]) -> None:
        self.answers = list(answers)
        self.graces: list[float | None] = []
        self.discarded = 0

    def start(self, spec: Spec, *, lifetime_s: float, pooled: bool = False) -> Any:
        return SimpleNamespace(cid="c1", cgroup=None)

    def run_kept(
        self,
        started: Any,
        job: Job,
        data: bytes,
        pending: bytes,
        ready: bool = False,
        grace_s: float | None = None,
    ) -> tuple[RunReport, bytes | None]:
        self.graces.append(grace_s)
        return self.answers.pop(0)

    def discard(self, started: Any) -> None:
        self.discarded += 1

    def kill(self, started: Any) -> None: ...

    def program_memory(self, started: Any, job: Job) -> int | None:
        return None

    def resources(self) -> HostResources:
        return HostResources(cpus=2, memory_mb=4096)


def job(language: str = "python") -> Job:
    lang = get_language(language)
    program = Program(
        files={lang.source_names[0]: b"x"}, want=(), stdin=b"", max_file_bytes=1 << 20
    )
    return Job(lang, "image", LIMITS, Runtime.RUNC, TrustLevel.UNTRUSTED, program)


def session(host: FakeHost, language: str = "python") -> SessionBackend:
    spec = Spec.of(language, "image", Runtime.RUNC, LIMITS)
    backend = SessionBackend(host, spec, lifetime_s=60.0)  # type: ignore[arg-type]
    backend.interrupt_grace_s = 2.0
    return backend


STOPPED = RunReport(130, b"", b"KeyboardInterrupt\n", 1000.0, timed_out=True, told="interrupt")


def test_an_interrupted_call_says_what_the_session_kept_and_it_goes_on() -> None:
    host = FakeHost((STOPPED, b""), (RunReport(0, b"42\n", b"", 5.0), b""))
    kept = session(host)
    stopped = kept.execute(job())
    [note] = stopped.notes
    limit = f"{LIMITS.timeout_s:g}"
    assert note == (
        f"The call ran past its time limit of {limit} s: it was interrupted; the session is "
        "still open, with its variables and files. To get further, make the work faster or "
        "split it into shorter calls."
    )
    assert kept.execute(job()).stdout == b"42\n" and kept.ended is None
    assert host.graces == [2.0, 2.0] and host.discarded == 0


@pytest.mark.parametrize(
    ("language", "report", "says"),
    [
        (
            "python",
            dataclasses.replace(STOPPED, told="kill"),
            "it did not stop within 2 s of the interrupt, so its processes were ended, the "
            "interpreter too; the session is still open with its files, but its variables "
            "are gone",
        ),
        ("bash", dataclasses.replace(STOPPED, told="kill"), "ended, the shell too"),
        ("javascript", STOPPED, "its processes were ended; the session is still open"),
        (
            "go",
            dataclasses.replace(STOPPED, timed_out=False, compile_timed_out=True),
            f"The call's build ran past its time limit of {LIMITS.compile_timeout_s:g} s",
        ),
        (
            "python",
            dataclasses.replace(STOPPED, timed_out=False, cancelled=True),
            "The call was cancelled: it was interrupted",
        ),
    ],
)
def test_the_note_says_what_stopped_and_what_stays(
    language: str, report: RunReport, says: str
) -> None:
    host = FakeHost((report, b""))
    [note] = session(host, language).execute(job(language)).notes
    assert says in note
    assert ("To get further" in note) is report.timed_out


def test_a_call_that_would_not_stop_ends_the_session_saying_so() -> None:
    host = FakeHost((dataclasses.replace(STOPPED, told="kill"), None))
    kept = session(host)
    ended = kept.execute(job())
    assert any(
        "did not stop when told to (interrupted, then killed 2 s later)" in n for n in ended.notes
    )
    assert host.discarded == 1
    with pytest.raises(SessionClosed, match="did not stop when told to"):
        kept.execute(job())


ENDED_FOR_MEMORY = RunReport(
    137, b"", b"", 400.0, stopped_by="memory", told="kill", memory_exceeded=True
)
KILLED_BY_THE_KERNEL = RunReport(137, b"", b"", 400.0, oom_killed=True)
INTERPRETER_ENDED = (
    b"\nhazmat: the interpreter ended (status 137); the next call starts a new one, without "
    b"the variables\n"
)


@pytest.mark.parametrize(
    ("language", "report", "says"),
    [
        (  # under runsc: the host's watch (backends/container/memory.py) ended it
            "python",
            dataclasses.replace(ENDED_FOR_MEMORY, stderr=INTERPRETER_ENDED),
            "its processes were ended, the interpreter too; the session is still open with "
            "its files, but its variables are gone.",
        ),
        (
            "javascript",
            ENDED_FOR_MEMORY,
            "its processes were ended; the session is still open, with its files.",
        ),
        (  # under runc: the kernel killed the largest process, not the shell
            "bash",
            KILLED_BY_THE_KERNEL,
            "the kernel killed a process of it at the limit; the session is still open, with "
            "its variables and files.",
        ),
        (
            "python",
            dataclasses.replace(
                KILLED_BY_THE_KERNEL, exit_code=1, stderr=b"Traceback...\nMemoryError\n"
            ),
            "the kernel killed a process of it at the limit; the session is still open, with "
            "its variables and files.",
        ),
        (
            "python",
            RunReport(1, b"", b"Traceback...\nMemoryError\n", 40.0, memory_exceeded=True),
            "it ended with the error above; the session is still open, with its variables "
            "and files.",
        ),
    ],
)
def test_a_call_out_of_memory_says_what_the_session_kept(
    language: str, report: RunReport, says: str
) -> None:
    host = FakeHost((report, b""), (RunReport(0, b"", b"", 1.0), b""))
    kept = session(host, language)
    [note] = kept.execute(job(language)).notes
    assert note.startswith(
        f"The call ran out of memory (the session's limit is {LIMITS.memory_mb} MB): "
    )
    assert says in note, note
    assert kept.execute(job(language)).exit_code == 0 and kept.ended is None


def test_a_call_that_reached_the_backstop_before_its_processes_ended_ends_the_session() -> None:
    host = FakeHost((ENDED_FOR_MEMORY, None))
    kept = session(host, "javascript")
    ended = kept.execute(job("javascript"))
    assert any("the session ended: the call went over the memory limit" in n for n in ended.notes)
    with pytest.raises(SessionClosed, match="went over the memory limit"):
        kept.execute(job("javascript"))


def test_a_kept_builds_test_is_never_told_to_stop() -> None:
    """A grader's test (mode again) past its time costs its container, as it always did."""
    host = FakeHost((RunReport(0, b"", b"", 1.0), b""))
    session(host, "c").call(job("c"), "again")
    assert host.graces == [None]
