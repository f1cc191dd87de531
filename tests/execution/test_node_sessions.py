"""A JavaScript or TypeScript session's calls run in a node started before the call (the
session agent's warm runner): each call is still a new process with its own stdin, arguments,
environment and exit status, and nothing of the last call's; on the real engine, runc and
runsc."""

from __future__ import annotations

import json

import pytest

from hazmat import Outcome, Sandbox
from hazmat.backends.container.engine import Engine
from hazmat.backends.docker.driver import DockerBackend
from hazmat.testing import as_asked

pytestmark = pytest.mark.docker

CALL = """\
const fs = require('fs');
const cmdline = fs.readFileSync('/proc/self/cmdline', 'utf8').split('\\0');
console.log(JSON.stringify({
  warm: cmdline.some((part) => part.endsWith('.hazmat-runner.js')),
  left: typeof globalThis.leftover,
  stdin: fs.readFileSync(0, 'utf8'),
  args: process.argv.slice(2),
  greet: process.env.GREET,
  hazmat: Object.keys(process.env).filter((name) => name.startsWith('HAZMAT_')),
}));
globalThis.leftover = 1;
process.exitCode = 3;
"""


def test_each_call_is_a_fresh_node_started_ahead(engine: Engine, runtime: str) -> None:
    with (
        Sandbox(as_asked(), backend=DockerBackend(engine)) as sandbox,
        sandbox.session("javascript", trust="unknown", runtime=runtime) as session,
    ):
        results = [
            session.run(CALL, stdin=f"in {n}", args=["a", f"{n}"], env={"GREET": "hi"})
            for n in range(3)
        ]
    for n, result in enumerate(results):
        assert (result.outcome, result.exit_code) == (Outcome.ERROR, 3), result.stderr
        assert json.loads(result.stdout) == {
            "warm": True,
            "left": "undefined",
            "stdin": f"in {n}",
            "args": ["a", f"{n}"],
            "greet": "hi",
            "hazmat": [],
        }


def test_a_typescript_call_runs_its_own_build(engine: Engine) -> None:
    with (
        Sandbox(as_asked(), backend=DockerBackend(engine)) as sandbox,
        sandbox.session("typescript", trust="unknown") as session,
    ):
        first = session.run("const a: number = 1; console.log(a)")
        second = session.run("const b: string = 'two'; console.log(b)")
        broken = session.run("throw new Error('boom')")
    assert (first.stdout, second.stdout) == ("1\n", "two\n")
    assert broken.outcome is Outcome.ERROR and "boom" in broken.stderr
