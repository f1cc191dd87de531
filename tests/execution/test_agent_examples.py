"""examples/agents/: the agent loops with OpenAI's and Anthropic's function calling, their models
scripted, run as a user runs them, on the real engine (hazmat.Sandbox()'s default backend)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from hazmat import Sandbox
from hazmat.backends.container.engine import Engine
from hazmat.backends.docker.driver import DockerBackend
from hazmat.tools import CodeTools

pytestmark = pytest.mark.docker

EXAMPLES = Path(__file__).parents[2] / "examples" / "agents"


def run_example(name: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / name)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def said(line: str) -> dict[str, object]:
    return dict(json.loads(line.split(": ", 1)[1]))


def test_the_openai_loop_runs_its_tool_calls_in_one_session() -> None:
    lines = run_example("openai_tools.py")
    written, total, best, answer = lines
    assert said(written) == {"written": "sales.csv"}
    assert said(total)["stdout"] == "49\n"  # the file the first call wrote, read by the second
    assert said(best)["stdout"] == "'south'\n"  # the variables of the call before
    assert answer == "'south' sold the most units, of 49 in all."


def test_the_anthropic_loop_survives_a_call_past_its_time() -> None:
    first, slow, after, answer = run_example("anthropic_tools.py")
    assert said(first)["stdout"] == "285\n"
    stopped = said(slow)
    assert stopped["outcome"] == "timeout"
    assert any("still open, with its variables" in n for n in stopped["notes"])  # type: ignore[attr-defined]
    assert said(after)["stdout"] == "81\n"  # the variables outlived the interrupted call
    assert answer == "The sum is 285 and the largest square 81."


@pytest.mark.parametrize(
    ("language", "define", "use", "kept"),
    [
        ("python", "x = 41", "x + 1", "42\n"),
        ("bash", "x=41", "echo $((x + 1))", "42\n"),
        ("javascript", "var x = 41", "console.log(typeof x)", "undefined\n"),
    ],
)
def test_a_session_keeps_what_run_codes_description_says(
    engine: Engine, language: str, define: str, use: str, kept: str
) -> None:
    with Sandbox(backend=DockerBackend(engine)) as sandbox, CodeTools(sandbox, language) as tools:
        said = tools.anthropic()[0]["description"]
        assert ("keeps its files only" in said) is (kept == "undefined\n")
        tools.handle("run_code", {"code": define})
        assert json.loads(tools.handle("run_code", {"code": use}).text)["stdout"] == kept
        if language != "python":
            return
        data = tools.handle("run_code", {"code": "import pandas\nx", "image": "python-data"})
        assert json.loads(data.text)["outcome"] == "error"  # its own session: no x there
        back = tools.handle("run_code", {"code": use, "image": "python"})
        assert json.loads(back.text)["stdout"] == kept  # the first session, as it was


def test_a_print_loop_is_shown_to_the_model_in_part_and_read_back_whole(engine: Engine) -> None:
    # the 308 KB print loop of the agents' issue, at the level whose output cap holds it whole
    loop = "for n in range(20_000):\n    print(f'{n:05d} ' + 'x' * 8)\n"
    with (
        Sandbox(backend=DockerBackend(engine)) as sandbox,
        CodeTools(sandbox, trust="unknown") as tools,
    ):
        output = tools.handle("run_code", {"code": loop})
        stdout = json.loads(output.text)["stdout"]
        name = stdout.split("is the file ", 1)[1].split(":", 1)[0]
        parts, offset = [], 0
        while offset is not None:
            part = json.loads(tools.handle("read_file", {"name": name, "offset": offset}).text)
            parts.append(part["text"])
            offset = part["next_offset"]
        listed = json.loads(tools.handle("run_code", {"code": "import os\nos.listdir('.')"}).text)
    whole = "".join(f"{n:05d} {'x' * 8}\n" for n in range(20_000))
    assert len(whole) == 300_000 and len(output.text) < 20 * 1024  # JSON: \n is two bytes
    assert stdout.startswith("00000 x") and stdout.endswith("19999 xxxxxxxx\n")
    assert "lines) of stdout cut here" in stdout
    assert "".join(parts) == whole
    assert ".hazmat" in listed["stdout"]  # the kept output, under a folder of its own
