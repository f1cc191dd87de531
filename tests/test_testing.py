"""hazmat.testing: the example its docstring (and docs/api.md) gives users runs as written."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

import hazmat.testing

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
