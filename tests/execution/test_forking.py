"""Forking a session (sessions/forking.py) on the real engine, on both tiers (the shell agent of
the Docker tier, the compiled agent of the OCI tier) under runc and runsc: each fork is a new
container with the source's files and Python's variables as they were at the fork, the forks
and the source go on apart, and the source keeps nothing of the save (no variables file in its
working directory, no archive in its /tmp)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from hazmat import Outcome, Sandbox
from hazmat.backends.base import Backend
from hazmat.backends.container.engine import Engine
from hazmat.backends.docker.driver import DockerBackend
from hazmat.backends.oci.driver import OciBackend
from hazmat.policy import Policy, SessionSettings
from hazmat.testing import as_asked

pytestmark = pytest.mark.docker

SETUP = """\
import os
numbers = list(range(10))
def twice(x):
    return 2 * x
os.makedirs("data", exist_ok=True)
open("data/blob.bin", "wb").write(bytes(range(256)))
open("/tmp/scratch", "w").write("not kept")
"""
LOOK = """\
import os
print(sum(numbers), sorted(os.listdir('.')), sorted(os.listdir('data')))
print(open('data/blob.bin', 'rb').read() == bytes(range(256)), os.path.exists('/tmp/scratch'))
"""


def _sandbox(engine: Engine, tier: str, store: Path) -> Sandbox:
    backend: Backend = DockerBackend(engine) if tier == "docker" else OciBackend(engine)
    policy = dataclasses.replace(Policy(), sessions=SessionSettings(store=str(store)))
    return Sandbox(as_asked(policy), backend=backend)


@pytest.mark.parametrize("tier", ["docker", "oci"])
def test_forks_start_from_the_source_s_state_and_go_on_apart(
    engine: Engine, runtime: str, tier: str, tmp_path: Path
) -> None:
    with _sandbox(engine, tier, tmp_path) as sandbox:
        source = sandbox.session("python", runtime=runtime, trust="unknown")
        assert source.run(SETUP).outcome is Outcome.OK
        forks = source.fork(2)
        containers = {s._backend.container_id for s in (source, *forks)}
        assert len(containers) == 3 and None not in containers
        for fork in forks:
            assert fork.info()["runtime"] == runtime
            assert fork.forked is not None and fork.forked["from"] == source.id
            assert fork.forked["loaded"] == ["numbers", "os"]
            assert set(fork.forked["lost"]) == {"twice"}
            seen = fork.run(LOOK)
            assert seen.stdout == "45 ['data', 'main.py'] ['blob.bin']\nTrue False\n"
        # the source goes on as it was, with nothing of the save left in it
        seen = source.run(LOOK + "print(twice(2), os.path.exists('/tmp/.hazmat-save.tar'))")
        assert seen.stdout == "45 ['data', 'main.py'] ['blob.bin']\nTrue True\n4 False\n"
        # and each goes on apart
        forks[0].run("numbers.append(100)\nopen('data/mine.txt', 'w').write('0')")
        assert forks[1].run("print(sum(numbers), os.listdir('data'))").stdout == (
            "45 ['blob.bin']\n"
        )
        assert source.run("print(sum(numbers), os.listdir('data'))").stdout == (
            "45 ['blob.bin']\n"
        )
        lost = forks[1].run("twice(2)")
        assert "'twice' was not kept when this session was forked" in " ".join(lost.notes)
        for session in (source, *forks):
            session.close()


def test_a_shell_session_s_forks_get_its_files(engine: Engine, tmp_path: Path) -> None:
    with _sandbox(engine, "oci", tmp_path) as sandbox:
        source = sandbox.session("bash")
        source.upload({"notes/a.txt": "first\n"})
        (fork,) = source.fork()
        assert fork.forked is not None and fork.forked["loaded"] == []
        assert fork.run("cat notes/a.txt; ls -A").stdout == "first\nmain.sh\nnotes\n"
        fork.run("echo second >> notes/a.txt")
        assert source.download(["notes/a.txt"]) == {"notes/a.txt": b"first\n"}
        for session in (source, fork):
            session.close()
