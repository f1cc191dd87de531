"""The programs that run inside the sandbox (src/hazmat/backends/inside/): every file reaches a
program, no placeholder is left, the loader refuses what it cannot fill, every file ships, and
each assembled program has the bytes tests/backends/inside_digests.json pins."""

from __future__ import annotations

import fnmatch
import json
import runpy
import tomllib
from pathlib import Path

import pytest

from hazmat.backends.inside import fill, placeholders, program, read

ROOT = Path(__file__).resolve().parents[2]
FOLDER = ROOT / "src" / "hazmat" / "backends" / "inside"
TOOL = runpy.run_path(str(ROOT / "scripts" / "inside_digests.py"))
REGENERATE = "PYTHONPATH=src .venv/bin/python scripts/inside_digests.py --write"


def programs() -> dict[str, str]:
    found: dict[str, str] = TOOL["programs"]()
    return found


def sandbox_files() -> list[Path]:
    """The folder's programs: every file but the loader and the linters' settings."""
    return [
        path
        for path in sorted(FOLDER.iterdir())
        if path.is_file() and path.name != "__init__.py" and not path.name.startswith(".")
    ]


def pieces(text: str) -> list[str]:
    """A template's text between its placeholders (a stand-in line counts as one)."""
    cut = "\0"
    return fill(text, **dict.fromkeys(placeholders(text), cut)).split(cut)


def test_the_folder_has_the_programs() -> None:
    names = {path.name for path in sandbox_files()}
    assert {"agent.sh", "session.sh", "python_runner.py", "node_runner.js"} <= names
    assert len(names) >= 14


@pytest.mark.parametrize("path", sandbox_files(), ids=lambda path: path.name)
def test_every_file_reaches_a_program(path: Path) -> None:
    """Each piece of the file, between its placeholders, is in a program that goes into a
    sandbox or an image: no file lies in the folder unused."""
    found = programs().values()
    missing = [
        part for part in pieces(read(path.name)) if part and not any(part in p for p in found)
    ]
    assert missing == [], f"{path.name} is not (all) in any program scripts/inside_digests.py lists"


def test_no_placeholder_is_left_in_a_program() -> None:
    left = {name: placeholders(text) for name, text in programs().items() if placeholders(text)}
    assert left == {}


def test_the_files_with_placeholders_are_the_templates_we_fill() -> None:
    with_placeholders = {
        path.name: placeholders(path.read_text())
        for path in sandbox_files()
        if placeholders(path.read_text())
    }
    assert with_placeholders == {
        "agent.c": {"RELAY_PORT", "RELAY_HEX"},
        "agent.sh": {"RELAY_PORT", "RELAY_HEX"},
        "preload.py": {"PRELOAD_FILE"},
        "python_runner.py": {"DISPLAY", "PRELOAD"},
        "repl.py": {"DISPLAY", "PRELOAD"},
        "session_unpack.sh": {"SOURCES"},
        "shell_session.bash": {"UNPACK", "WORKDIR"},
    }


def test_fill_replaces_each_placeholder_in_one_pass() -> None:
    assert fill("a @X@ b @X@ @Y_2@", X="1", Y_2="@X@") == "a 1 b 1 @X@"
    assert fill('$@ "$@" @x@ me@host @ X@') == '$@ "$@" @x@ me@host @ X@'


def test_a_line_stands_in_for_a_placeholder_where_a_bare_one_would_not_parse() -> None:
    text = "a = 1\nfrom .display import f  # @DISPLAY@\nf()\n"
    assert fill(text, DISPLAY="def f():\n    pass") == "a = 1\ndef f():\n    pass\nf()\n"


def test_the_loader_refuses_a_placeholder_without_a_value_or_a_value_without_one() -> None:
    with pytest.raises(ValueError, match=r"no value for \['PORT'\]"):
        fill("listen @PORT@")
    with pytest.raises(ValueError, match=r"not used: \['HEX'\]"):
        fill("listen @PORT@", PORT="3128", HEX="0C38")
    with pytest.raises(ValueError, match=r"no value for \['RELAY_HEX', 'RELAY_PORT'\]"):
        program("agent.sh")
    with pytest.raises(FileNotFoundError):
        read("no-such-program.sh")


def test_every_file_ships_with_the_package() -> None:
    """A plain `pip install` copies the .py files as modules, the rest by package-data."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    globs = pyproject["tool"]["setuptools"]["package-data"]["hazmat"]
    for path in sandbox_files():
        inside = f"backends/inside/{path.name}"
        shipped = path.suffix == ".py" or any(fnmatch.fnmatch(inside, glob) for glob in globs)
        assert shipped, f"{inside} is not in [tool.setuptools.package-data] (pyproject.toml)"


def test_each_program_has_the_pinned_bytes() -> None:
    pinned = json.loads((ROOT / "tests" / "backends" / "inside_digests.json").read_text())
    now = TOOL["digests"]()
    changed = sorted(k for k in pinned.keys() | now.keys() if pinned.get(k) != now.get(k))
    assert changed == [], (
        f"what runs inside the sandbox changed: {changed}. If you meant to change it, run "
        f"`{REGENERATE}` and commit tests/backends/inside_digests.json with the change."
    )
