"""Which agent runs a single run or a session on the Docker tier, and the shell agents' own work.

The compiled agent (backends/agent/compiled.py) runs every single run and every session of both
tiers on a machine with a C compiler and a local engine, so the matrix's cells no longer reach
the shell agents (agent.sh with its stage and collect scripts, session.sh): their one remaining
use (a remote engine, no compiler, an engine that cannot mount the binary) is tested here, once,
on runc.
"""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

import pytest

from hazmat import Outcome, Sandbox
from hazmat.backends.agent.compiled import AGENT_PATH
from hazmat.backends.base import Spec
from hazmat.backends.container.engine import Engine
from hazmat.backends.container.seccomp import load_profile
from hazmat.backends.docker.driver import DockerBackend, container_config
from hazmat.languages import get_language
from hazmat.policy import PRESETS, Policy, Runtime
from hazmat.testing import as_asked

pytestmark = [pytest.mark.docker]

# the program's parent: the agent (a runner replaces its shell with the interpreter)
PARENT = "import os; print(open(f'/proc/{os.getppid()}/cmdline', 'rb').read().split(b'\\0')[0])"


def _parent(sandbox: Sandbox) -> str:
    result = sandbox.run(PARENT, runtime="runc")
    assert result.outcome is Outcome.OK, result.stderr
    return result.stdout.strip()


def test_a_single_run_and_a_session_get_the_compiled_agent_mounted(tmp_path: Path) -> None:
    spec = Spec.of("python", get_language("python").image, Runtime.RUNC, PRESETS["strict"])
    agent = str(tmp_path / "hazmat-agent")
    single = container_config(spec, {}, "1.41", load_profile(), 1_500_000_000, agent)
    assert single["command"] == [AGENT_PATH]
    assert f"{agent}:{AGENT_PATH}:ro" in single["host_config"]["Binds"]
    kept = container_config(
        dataclasses.replace(spec, session=True), {}, "1.41", load_profile(), 1_500_000_000, agent
    )
    assert kept["command"] == [AGENT_PATH, "session"]
    assert f"{agent}:{AGENT_PATH}:ro" in kept["host_config"]["Binds"]
    shell = container_config(spec, {}, "1.41", load_profile(), 1_500_000_000, None)
    assert shell["command"][:2] == ["/bin/sh", "-c"] and not shell["host_config"].get("Binds")


def test_the_docker_tier_runs_the_compiled_agent_on_a_local_engine(engine: Engine) -> None:
    with Sandbox(Policy(), backend=DockerBackend(engine)) as sandbox:
        assert _parent(sandbox) == repr(AGENT_PATH.encode())


def test_an_engine_that_cannot_mount_the_agent_gets_the_shell_agent(
    engine: Engine, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """An engine that cannot run the binary it was given (here: a path that is not there, which
    the engine makes a folder of; a confined engine may not see the user's cache): the run goes
    on with the shell agent, and the log says why once."""
    backend = DockerBackend(engine)
    backend.driver.agent = lambda: str(tmp_path / "not-there" / "hazmat-agent")  # type: ignore[method-assign]
    with caplog.at_level(logging.WARNING), Sandbox(Policy(), backend=backend) as sandbox:
        assert _parent(sandbox) == repr(b"/bin/sh")
        assert not backend.driver.compiled
        assert _parent(sandbox) == repr(b"/bin/sh")
    said = [r.getMessage() for r in caplog.records if "compiled agent" in r.getMessage()]
    assert len(said) == 1 and "not-there" in said[0], said


C_CODE = """#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    char line[64] = "";
    FILE *in = fopen("data/in.txt", "r");
    if (!in || !fgets(line, sizeof line, in)) return 1;
    FILE *out = fopen("out.txt", "w");
    fprintf(out, "%s|%s|%s", line, getenv("GREETING"), argc > 1 ? argv[1] : "");
    fclose(out);
    printf("%s", line);
    return 0;
}
"""


def test_the_shell_agent_unpacks_builds_runs_and_collects(engine: Engine) -> None:
    """What the compiled agent does everywhere else, by the shell agent's scripts: input files
    in folders, a build, env and args, stdin, output files (one missing) and a runner."""
    with Sandbox(Policy(), backend=DockerBackend(engine, compiled=False)) as sandbox:
        assert _parent(sandbox) == repr(b"/bin/sh")
        built = sandbox.run(
            C_CODE,
            "c",
            files={"data/in.txt": "hello\n"},
            env={"GREETING": "hi 'there'"},
            args=["two words"],
            output_files=["out.txt", "absent.txt"],
            runtime="runc",
        )
        assert built.outcome is Outcome.OK, built.stderr
        assert built.stdout == "hello\n"
        assert dict(built.files) == {"out.txt": b"hello\n|hi 'there'|two words"}
        assert any("'absent.txt' not collected" in note for note in built.notes), built.notes
        echoed = sandbox.run('read -r x; echo "$x $1"', "bash", stdin="in\n", args=["a"])
        assert (echoed.outcome, echoed.stdout) == (Outcome.OK, "in a\n"), echoed.stderr


def test_the_shell_session_agent_keeps_state_interrupts_and_warms_a_runner(engine: Engine) -> None:
    """What the compiled agent does for sessions everywhere else, by session.sh: Python's
    interpreter kept between calls, its files and stdin; a call past its time interrupted and
    the session going on; JavaScript's node started ahead of each call."""
    with Sandbox(as_asked(), backend=DockerBackend(engine, compiled=False)) as sandbox:
        with sandbox.session("python", runtime="runc") as session:
            assert session.run(PARENT).stdout.strip() == repr(b"/bin/sh")
            session.run("total = 41", files={"data/in.txt": "kept"})
            slow = session.run("n = 0\nwhile True:\n    n += 1", timeout=1)
            assert slow.outcome is Outcome.TIMEOUT
            after = session.run("print(total + 1, open('data/in.txt').read(), input())", stdin="in")
            assert (after.outcome, after.stdout) == (Outcome.OK, "42 kept in\n"), after.stderr
        with sandbox.session("javascript", runtime="runc") as session:
            for _ in range(2):
                done = session.run("console.log(process.argv.length, 6 * 7)")
                assert (done.outcome, done.stdout) == (Outcome.OK, "2 42\n"), done.stderr
