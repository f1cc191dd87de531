"""hazmat.testing: the example its docstring (and docs/api.md) gives users runs as written."""

from __future__ import annotations

import json
import os
import re
import sys
import textwrap
from pathlib import Path

import pytest

import hazmat
import hazmat.testing
from hazmat.testing import invoke

DOCS = Path(__file__).parent.parent / "docs" / "api.md"


def docstring_example() -> str:
    """The indented block after the docstring's `::` line."""
    doc = hazmat.testing.__doc__ or ""
    block = re.search(r"::\n\n((?:    .*\n|\n)+)", doc)
    assert block is not None, "hazmat.testing's docstring has no example"
    return textwrap.dedent(block.group(1))


def test_the_docstring_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    example = docstring_example()
    namespace: dict[str, object] = {}
    exec(compile(example, "hazmat.testing example", "exec"), namespace)
    tests = [name for name in namespace if name.startswith("test_")]
    assert tests == ["test_grade_accepts_the_answer"]
    namespace[tests[0]](tmp_path, monkeypatch)  # type: ignore[operator]


def test_the_docs_show_the_same_example() -> None:
    assert docstring_example().strip() in DOCS.read_text()


def test_invoke_runs_the_command_here_and_puts_everything_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HAZMAT_TEST_KEPT", "before")
    streams = (sys.stdin, sys.stdout, sys.stderr)
    bad = invoke(["run", "-c", "print(1)", "--lang", "cobol", "--json"])
    assert bad.exit_code == 2
    assert json.loads(bad.stdout)["error"]["type"] == "UnknownLanguage"
    assert bad.stderr.startswith("hazmat: error: unknown language 'cobol'")
    assert bad.stdout_bytes == bad.stdout.encode()
    version = invoke(["--version"], env={"HAZMAT_TEST_KEPT": None, "HAZMAT_TEST_NEW": "x"})
    assert version.exit_code == 0 and version.stdout == f"hazmat {hazmat.__version__}\n"
    assert (sys.stdin, sys.stdout, sys.stderr) == streams
    assert os.environ["HAZMAT_TEST_KEPT"] == "before" and "HAZMAT_TEST_NEW" not in os.environ



@pytest.mark.docker
def test_invoke_gives_the_command_its_stdin() -> None:
    """`hazmat run --stdin -` feeds the program this command's standard input."""
    ran = invoke(["run", "-c", "print(input()[::-1])", "--stdin", "-", "--local"], stdin="olleh\n")
    assert ran.exit_code == 0, ran.stderr
    assert ran.stdout == "hello\n"


def test_a_session_on_the_recording_backend_records_each_call_of_its_kept_container(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HAZMAT_AUDIT_DIR", str(tmp_path))
    backend = hazmat.testing.RecordingBackend(hazmat.testing.report(stdout=b"2\n"))
    with hazmat.Sandbox(backend=backend) as sandbox:
        with sandbox.session("python") as session:
            session.upload({"data.txt": "1"})
            assert session.run("x = 1\nprint(x + 1)").stdout == "2\n"
        [kept] = backend.kept
        assert kept.ended is not None and kept.container_id == "recorded-1"
    assert [mode for mode, _ in kept.calls] == ["files", "run"]
    assert kept.calls[1][1].program.files["main.py"] == b"x = 1\nprint(x + 1)"
    assert [job for _, job in kept.calls] == backend.jobs
