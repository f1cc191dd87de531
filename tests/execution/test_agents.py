"""Which agent runs a single run on the Docker tier, and the shell agent's own work.

The compiled agent (backends/agent/compiled.py) runs every single run of both tiers on a machine
with a C compiler and a local engine, so the matrix's cells no longer reach the shell agent's
stage and collect scripts: its one remaining use (a remote engine, no compiler, an engine that
cannot mount the binary) is tested here, once, on runc. Sessions keep the shell session agent
(tests/execution/test_sessions.py).
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

pytestmark = [pytest.mark.docker]

# the program's parent: the agent (a runner replaces its shell with the interpreter)
PARENT = "import os; print(open(f'/proc/{os.getppid()}/cmdline', 'rb').read().split(b'\\0')[0])"


def _parent(sandbox: Sandbox) -> str:
    result = sandbox.run(PARENT, runtime="runc")
    assert result.outcome is Outcome.OK, result.stderr
    return result.stdout.strip()


def test_a_single_run_gets_the_compiled_agent_mounted_and_a_session_the_shell_agent(
    tmp_path: Path,
) -> None:
    spec = Spec.of("python", get_language("python").image, Runtime.RUNC, PRESETS["strict"])
    agent = str(tmp_path / "hazmat-agent")
    single = container_config(spec, {}, "1.41", load_profile(), 1_500_000_000, agent)
    assert single["command"] == [AGENT_PATH]
    assert f"{agent}:{AGENT_PATH}:ro" in single["host_config"]["Binds"]
    kept = container_config(
        dataclasses.replace(spec, session=True), {}, "1.41", load_profile(), 1_500_000_000, agent
    )
    assert kept["command"][:2] == ["/bin/sh", "-c"] and not kept["host_config"].get("Binds")


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
