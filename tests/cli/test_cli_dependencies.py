"""A package hazmat needs that cannot be imported (absent, of a version hazmat was not written
for, or broken itself) is one sentence naming the package, the versions hazmat supports and
the command that installs one: never "internal error ... please report it". `hazmat run`,
whose local server cannot start for that reason, says so once and runs in its own process.

The breakage is real: a `None` entry in `sys.modules` (Python's own way to make an import
fail) or a package of that name, first on the path, whose import fails."""

from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from hazmat.cli import main

SUPPORTED = r"\(>=[\d.]+,<\d+\)"  # pyproject.toml's bounds, as the message shows them


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def forget(monkeypatch: pytest.MonkeyPatch, *packages: str) -> None:
    """Make the next import of `packages` (and their modules) happen again; the modules come
    back after the test."""
    for name in list(sys.modules):
        if name in packages or name.startswith(tuple(f"{p}." for p in packages)):
            monkeypatch.delitem(sys.modules, name)


@pytest.fixture
def broken_mcp(tmp_path: Path) -> Path:
    """A folder holding an `mcp` package whose import fails on a module of its own, as an
    installed package with a missing dependency of its own does."""
    package = tmp_path / "broken" / "mcp"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("import hazmat_test_no_such_module  # noqa: F401\n")
    return package.parent


def test_a_module_missing_from_a_dependency_names_the_package_and_the_fix(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    forget(monkeypatch, "hazmat.server.mcp_tools")
    monkeypatch.setitem(sys.modules, "mcp.server.mcpserver", None)  # as mcp 1.x lacks it
    code, out, err = run_cli(capsys, "mcp")
    assert (code, out) == (125, ""), err
    assert re.fullmatch(
        rf"hazmat: error: hazmat mcp needs the package 'mcp' {SUPPORTED}, which cannot be "
        r"imported: import of mcp\.server\.mcpserver halted; None in sys\.modules; install it: "
        rf"{re.escape(sys.executable)} -m pip install --force-reinstall 'mcp>=[\d.]+,<\d+'\n",
        err,
    ), err
    assert "internal error" not in err


def test_a_dependency_that_fails_to_import_is_named_not_what_it_lacked(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, broken_mcp: Path
) -> None:
    forget(monkeypatch, "mcp", "mcp_types", "hazmat.server.mcp_tools")
    monkeypatch.syspath_prepend(str(broken_mcp))
    code, _, err = run_cli(capsys, "mcp")
    assert code == 125, err
    assert re.search(rf"hazmat mcp needs the package 'mcp' {SUPPORTED}, which cannot", err), err
    assert "No module named 'hazmat_test_no_such_module'" in err
    assert "-m pip install --force-reinstall 'mcp>=" in err and "please report" not in err


def test_a_module_of_hazmats_own_that_cannot_be_imported_is_an_internal_error(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "hazmat.server.mcp_tools", None)
    code, _, err = run_cli(capsys, "mcp")
    assert code == 70 and "internal error (ModuleNotFoundError" in err, err
    assert "needs the package" not in err


@pytest.fixture
def own_runtime(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """This user's local servers in a folder of their own (a short path: a unix socket's is at
    most 107 bytes), with the local server wanted."""
    runtime = Path(tempfile.mkdtemp(prefix="hz-", dir="/tmp"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    monkeypatch.delenv("HAZMAT_NO_SERVER")
    try:
        yield runtime
    finally:
        assert main(["server", "stop"]) == 0
        shutil.rmtree(runtime, ignore_errors=True)


@pytest.mark.docker
def test_a_local_server_that_cannot_import_a_dependency_says_so_and_the_run_goes_on(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    broken_mcp: Path,
    own_runtime: Path,
) -> None:
    # the server's process finds the broken package first; this one keeps its own
    path = [str(broken_mcp), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(path))
    code, out, err = run_cli(capsys, "run", "-c", "print(1)")
    assert (code, out) == (0, "1\n"), err
    said = [line for line in err.splitlines() if "local server" in line]
    assert len(said) == 1, err
    assert re.match(
        rf"hazmat: the local server did not start: hazmat serve needs the package 'mcp' "
        rf"{SUPPORTED}, which cannot be imported: No module named 'hazmat_test_no_such_module';"
        r" install it: .* -m pip install --force-reinstall 'mcp>=[\d.]+,<\d+' \(see .*server"
        r"\.log\); running in this process instead$",
        said[0],
    ), said[0]
    assert "internal error" not in err
