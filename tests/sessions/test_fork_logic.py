"""Forking a session (sessions/forking.py), its logic with a recording backend: one save of the
source, which goes on; one new container per fork, each given the archive; the forks' record;
a bad count refused before anything is saved; a fork that cannot be opened leaves none open.
On the engine: tests/execution/test_forking.py."""

from __future__ import annotations

import dataclasses
import hashlib
import threading

import pytest

from hazmat import Sandbox
from hazmat._exceptions import InfraError, InputError, QuotaExceeded, SessionClosed
from hazmat.backends.base import Job, RunReport
from hazmat.policy import Policy, SessionSettings
from hazmat.sessions.pausing import SAVE_FILE
from hazmat.testing import RecordingBackend, as_asked, audit_records, report

ARCHIVE = b"the working directory, as tar"
SAVED = (
    b'{"saved": ["frame", "np"], "lost": {"f": "defined in the session: its code is not kept"}}\n'
)


def _answer(failing_restore: int | None = None) -> tuple[RecordingBackend, list[int]]:
    """A backend whose save answers with ARCHIVE, and whose restores load what it saved; the
    `failing_restore`-th restore (1-based) fails. Returns it and the restores counted."""
    restores = [0]
    lock = threading.Lock()

    def answer(job: Job) -> RunReport:
        if job.program.want == (SAVE_FILE,):
            return report(files={SAVE_FILE: ARCHIVE}, stdout=SAVED)
        if job.program.stdin == ARCHIVE:
            with lock:
                restores[0] += 1
                number = restores[0]
            if number == failing_restore:
                return report(exit_code=2, stderr=b"tar: short read")
            return report(stdout=b'{"loaded": ["frame", "np"], "lost": {}}\n')
        return report(stdout=b"ran\n")

    return RecordingBackend(answer=answer), restores


def _sandbox(backend: RecordingBackend, max_open: int = 8) -> Sandbox:
    policy = dataclasses.replace(Policy(), sessions=SessionSettings(max_open=max_open))
    return Sandbox(as_asked(policy), backend=backend)


def test_each_fork_is_a_new_container_given_the_source_s_archive() -> None:
    backend, _ = _answer()
    with _sandbox(backend) as sandbox:
        source = sandbox.session("python", trust="unknown", runtime="runsc")
        source.owner = "tenant-a"
        forks = source.fork(3)
        assert len({fork.id for fork in forks} | {source.id}) == 4
        source_calls = [mode for mode, _ in backend.kept[0].calls]
        assert source_calls == ["save"]  # saved once, not ended
        assert source.ended is None and source.run("print(1)").stdout == "ran\n"
        for fork, kept in zip(forks, backend.kept[1:], strict=True):
            assert [mode for mode, _ in kept.calls] == ["restore"]
            assert kept.calls[0][1].program.stdin == ARCHIVE
            assert kept.spec.runtime == backend.kept[0].spec.runtime
            assert fork.owner == "tenant-a" and fork.trust == "unknown"
            assert fork.forked == {
                "from": source.id,
                "archive_bytes": len(ARCHIVE),
                "loaded": ["frame", "np"],
                "lost": {"f": "defined in the session: its code is not kept"},
            }
            assert fork.info()["forked"]["from"] == source.id
        assert sorted(s.id for s in sandbox.sessions.all()) == sorted(
            [source.id, *(f.id for f in forks)]
        )
        forked = [data for kind, data in audit_records(sandbox) if kind == "session.forked"]
        assert forked == [
            {
                "session": source.id,
                "into": [fork.id for fork in forks],
                "archive": {
                    "bytes": len(ARCHIVE),
                    "sha256": hashlib.sha256(ARCHIVE).hexdigest(),
                },
                "saved": ["frame", "np"],
                "lost": {"f": "defined in the session: its code is not kept"},
            }
        ]


@pytest.mark.parametrize("n", [0, -1, 9, True, "2", 1.5, None])
def test_a_bad_count_is_refused_before_anything_is_saved(n: object) -> None:
    backend, _ = _answer()
    with _sandbox(backend) as sandbox:
        source = sandbox.session("python")
        with pytest.raises(InputError, match=r"n must be a whole number of sessions from 1 to 8"):
            source.fork(n)  # type: ignore[arg-type]
        assert backend.kept[0].calls == [] and len(backend.kept) == 1


def test_a_fork_that_fails_leaves_none_open_and_the_source_goes_on() -> None:
    backend, restores = _answer(failing_restore=2)
    with _sandbox(backend) as sandbox:
        source = sandbox.session("python")
        with pytest.raises(InfraError, match=r"could not be restored: tar: short read"):
            source.fork(3)
        assert restores[0] == 3
        assert [s.id for s in sandbox.sessions.all()] == [source.id]
        assert all(kept.ended for kept in backend.kept[1:])
        assert source.run("print(1)").stdout == "ran\n"


def test_forks_past_the_policy_s_most_sessions_leave_none_open() -> None:
    backend, _ = _answer()
    with _sandbox(backend, max_open=3) as sandbox:
        source = sandbox.session("python")
        with pytest.raises(QuotaExceeded, match=r"sessions.max_open = 3"):
            source.fork(3)
        assert [s.id for s in sandbox.sessions.all()] == [source.id]
        assert len(source.fork(2)) == 2


def test_an_ended_session_cannot_be_forked() -> None:
    backend, _ = _answer()
    with _sandbox(backend) as sandbox:
        source = sandbox.session("python")
        source.close()
        with pytest.raises(SessionClosed):
            source.fork(1)
        assert len(backend.kept) == 1


def test_a_name_the_fork_did_not_keep_is_noted() -> None:
    def answer(job: Job) -> RunReport:
        if job.program.want == (SAVE_FILE,):
            return report(files={SAVE_FILE: ARCHIVE}, stdout=SAVED)
        if job.program.stdin == ARCHIVE:
            return report(stdout=b'{"loaded": [], "lost": {}}\n')
        stderr = b"Traceback (most recent call last):\nNameError: name 'f' is not defined\n"
        return report(exit_code=1, stderr=stderr)

    backend = RecordingBackend(answer=answer)
    with _sandbox(backend) as sandbox:
        (fork,) = sandbox.session("python").fork()
        result = fork.run("f(2)")
        assert result.notes[-1] == (
            "'f' was not kept when this session was forked (defined in the session: its code "
            "is not kept): run the code that defined it again"
        )
