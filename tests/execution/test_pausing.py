"""Pausing a session and resuming it (pausing.py) on the real engine, runc and runsc: the files
come back in a new container, and a Python session's variables that can be pickled; a new
Sandbox (a restarted service) resumes it; only its owner can; a failed resume keeps it."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from hazmat import Outcome, Sandbox
from hazmat._exceptions import InfraError, SessionClosed, SessionNotFound
from hazmat.backends.container.engine import Engine
from hazmat.backends.docker.driver import DockerBackend
from hazmat.policy import Policy, SessionSettings
from hazmat.testing import as_asked

pytestmark = pytest.mark.docker

SETUP = """\
import os, pickle, json
numbers = list(range(10))
name = "kept"
def twice(x):
    return 2 * x
handle = open("notes.txt", "w")
handle.write("a note")
handle.close()
os.makedirs("data/deep", exist_ok=True)
open("data/deep/blob.bin", "wb").write(bytes(range(256)))
"""


def _sandbox(engine: Engine, store: Path) -> Sandbox:
    policy = dataclasses.replace(Policy(), sessions=SessionSettings(store=str(store)))
    return Sandbox(as_asked(policy), backend=DockerBackend(engine))


def test_a_paused_session_comes_back_after_a_restart(
    engine: Engine, runtime: str, tmp_path: Path
) -> None:
    with _sandbox(engine, tmp_path) as sandbox:
        session = sandbox.session("python", runtime=runtime, trust="unknown")
        first_container = session.info()["id"], session._backend.container_id
        assert session.run(SETUP).outcome is Outcome.OK
        paused = session.pause()
        assert paused.id == session.id
        assert paused.saved == ("json", "name", "numbers", "os", "pickle")
        assert set(paused.lost) == {"handle", "twice"}
        assert "defined in the session" in paused.lost["twice"]
        with pytest.raises(SessionClosed, match="it was paused"):
            session.run("print(1)")
        assert sandbox.sessions.all() == []
    with _sandbox(engine, tmp_path) as restarted:  # a new process would see the same store
        resumed = restarted.resume_session(paused.id)
        assert resumed.id == paused.id and resumed.info()["runtime"] == runtime
        assert resumed._backend.container_id != first_container[1]
        assert resumed.resumed is not None
        assert resumed.resumed["loaded"] == ["json", "name", "numbers", "os", "pickle"]
        assert set(resumed.resumed["lost"]) == {"handle", "twice"}
        result = resumed.run(
            "print(sum(numbers), name, open('notes.txt').read())\n"
            "print(open('data/deep/blob.bin', 'rb').read() == bytes(range(256)))\n"
            "print(sorted(os.listdir('.')), 'twice' in globals())"
        )
        assert result.stdout == "45 kept a note\nTrue\n['data', 'main.py', 'notes.txt'] False\n"
        forgotten = resumed.run("print(twice(2))")  # a bare NameError, but for its note
        assert forgotten.exception is not None and forgotten.exception.name == "NameError"
        assert "'twice' was not kept when this session was paused (defined in the session" in (
            " ".join(forgotten.notes)
        )
        again = resumed.pause()  # and once more
        resumed_twice = restarted.resume_session(again.id)
        assert resumed_twice.run("print(name)").stdout == "kept\n"
        resumed_twice.close()
        with pytest.raises(SessionNotFound):
            restarted.resume_session(paused.id)  # taken by its resume


def test_a_shell_session_keeps_its_files(engine: Engine, tmp_path: Path) -> None:
    with _sandbox(engine, tmp_path) as sandbox:
        session = sandbox.session("bash", trust="unknown")
        session.run("mkdir -p out && echo hi > out/a.txt && X=1")
        paused = session.pause()
        assert (paused.saved, dict(paused.lost)) == ((), {})
        resumed = sandbox.resume_session(paused.id)
        result = resumed.run('cat out/a.txt; echo "X=${X:-gone}"')
        resumed.close()
    assert result.stdout == "hi\nX=gone\n"


def test_only_the_owner_resumes_it(engine: Engine, tmp_path: Path) -> None:
    with _sandbox(engine, tmp_path) as sandbox:
        session = sandbox.session("python", trust="unknown")
        paused = session.pause(owner="tenant:a")
        for stranger in ("tenant:b", None):
            with pytest.raises(SessionNotFound):
                sandbox.resume_session(paused.id, owner=stranger)
        sandbox.resume_session(paused.id, owner="tenant:a").close()


def test_a_failed_resume_keeps_the_paused_session(engine: Engine, tmp_path: Path) -> None:
    with _sandbox(engine, tmp_path) as sandbox:
        session = sandbox.session("python", trust="unknown")
        session.run("x = 1")
        paused = session.pause()
        kept, archive = sandbox.session_store.get(paused.id, None)
        sandbox.session_store.put(kept, b"not a tar archive" * 40)
        with pytest.raises(InfraError, match="could not be restored"):
            sandbox.resume_session(paused.id)
        assert sandbox.sessions.all() == []  # the new container went
        sandbox.session_store.put(kept, archive)
        resumed = sandbox.resume_session(paused.id)
        assert resumed.run("x").stdout == "1\n"
        resumed.close()


def test_an_idle_session_is_paused_when_the_policy_says_so(engine: Engine, tmp_path: Path) -> None:
    rules = SessionSettings(store=str(tmp_path), on_idle="pause", idle_s=60)
    policy = dataclasses.replace(Policy(), sessions=rules)
    with Sandbox(as_asked(policy), backend=DockerBackend(engine)) as sandbox:
        session = sandbox.session("python", trust="unknown")
        session.run("x = 5")
        session.owner = "tenant:a"
        session.last_used -= 61  # idle, as far as the janitor can tell
        assert sandbox.sessions.sweep() == [session.id]
        with pytest.raises(SessionClosed, match="it was paused"):
            session.run("x")
        resumed = sandbox.resume_session(session.id, owner="tenant:a")
        assert resumed.run("x").stdout == "5\n"
        resumed.close()
