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
