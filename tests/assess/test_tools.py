"""Bandit and Semgrep are called so that they cannot fail open."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from hazmat.assess.assessor import Assessor
from hazmat.assess.bandit import BanditAnalyzer, scratch_folder
from hazmat.assess.base import AnalyzerSkipped
from hazmat.assess.semgrep import Semgrep
from hazmat.models import RiskLevel

SHELL = 'import subprocess\nsubprocess.call("ls " + x, shell=True)  # nosec\n'


def test_bandit_ignores_nosec() -> None:
    bandit = BanditAnalyzer()
    try:
        rules = {f.rule.split(":")[0] for f in bandit.analyze(SHELL, "python")}
    finally:
        bandit.close()
    assert "B602" in rules


def test_bandit_reads_no_configuration_from_where_it_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / ".bandit").write_text("[bandit]\nskips: B602,B404\n")
    (tmp_path / "pyproject.toml").write_text("[tool.bandit]\nskips = ['B602']\n")
    monkeypatch.chdir(tmp_path)
    bandit = BanditAnalyzer()
    try:
        rules = {f.rule.split(":")[0] for f in bandit.analyze(SHELL, "python")}
        assert sorted(os.listdir(bandit._dir)) == []  # the private copy is gone afterwards
    finally:
        bandit.close()
    assert "B602" in rules


def test_no_bandit_folder_outlives_its_child(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The assessment child's Bandit folder goes with the child, closed or dead (the child
    ends killed, so its own clean-up never ran: every run in process left an empty
    hazmat-bandit-* folder in the temporary directory, 420 after half an hour)."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where mkdtemp makes them

    def folders() -> list[Path]:
        return list(tmp_path.glob("hazmat-bandit-*"))

    with Assessor(timeout_s=30) as assessor:
        assert assessor.assess(SHELL, "python").complete
        [first] = folders()
        child = assessor._child
        assert child is not None
        child.process.kill()  # a child that dies is replaced at the next assessment
        child.process.wait()
        assert assessor.assess("print(2)\n", "python").complete
        assert first not in folders() and len(folders()) == 1
    assert folders() == []
    BanditAnalyzer().close()  # one of its own: removed by close
    assert folders() == []


def test_bandit_skipping_the_code_is_an_error_not_a_clean_result() -> None:
    bandit = BanditAnalyzer()
    try:
        with pytest.raises(AnalyzerSkipped, match="syntax error"):
            bandit.analyze("def f(:", "python")
    finally:
        bandit.close()


def test_bandit_state_does_not_leak_between_calls() -> None:
    bandit = BanditAnalyzer()
    try:
        assert bandit.analyze(SHELL, "python")
        assert [f for f in bandit.analyze("print(1)\n", "python")] == []
    finally:
        bandit.close()


@pytest.fixture(scope="module")
def semgrep(tmp_path_factory: pytest.TempPathFactory) -> Semgrep:
    tool = Semgrep(cache_dir=tmp_path_factory.mktemp("semgrep-cache"))
    if not tool.available:
        pytest.fail("semgrep is not installed in the venv (make venv installs it)")
    return tool


@pytest.mark.slow
def test_semgrep_ignores_nosemgrep_and_caches(semgrep: Semgrep) -> None:
    code = 'import os\nos.system("id")  # nosemgrep\n'
    first = semgrep.scan(code, "python")
    assert first.problem is None and not first.cached
    assert {f.rule for f in first.findings} == {"py-shell-command"}
    again = semgrep.scan(code, "python")
    assert again.cached and again.findings == first.findings
    assert again.duration_ms < first.duration_ms


@pytest.mark.slow
@pytest.mark.parametrize(
    ("code", "language", "rule"),
    [
        ("().__class__.__base__.__subclasses__()", "python", "py-dunder-escape"),
        ("const p = process.binding('fs')", "javascript", "js-process-binding"),
        ("const m = require(name)", "typescript", "js-dynamic-require"),
        ('package main\nimport "plugin"\nfunc main() { plugin.Open("x") }', "go", "go-plugin-open"),
    ],
)
def test_semgrep_rules_in_every_language(
    semgrep: Semgrep, code: str, language: str, rule: str
) -> None:
    report = semgrep.scan(code, language, use_cache=False)
    assert report.problem is None
    assert rule in {f.rule for f in report.findings}


def test_semgrep_that_cannot_run_is_a_problem(tmp_path: Path) -> None:
    broken = Semgrep(binary=str(tmp_path / "no-such-semgrep"), cache_dir=tmp_path)
    report = broken.scan("print(1)", "python", use_cache=False)
    assert report.problem and "cannot run" in report.problem


def test_semgrep_that_skips_the_target_is_a_problem(tmp_path: Path) -> None:
    # A stand-in that answers like Semgrep but lists nothing as scanned.
    fake = tmp_path / "semgrep"
    fake.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = --version ]; then echo 0.0; exit 0; fi\n'
        'echo \'{"results": [], "errors": [], "paths": {"scanned": []}}\'\n'
    )
    fake.chmod(0o755)
    report = Semgrep(binary=str(fake), cache_dir=tmp_path).scan("print(1)", "python")
    assert report.problem and "not scanned" in report.problem


def test_an_incomplete_semgrep_scan_lifts_the_assessment(tmp_path: Path) -> None:
    broken = Semgrep(binary=str(tmp_path / "missing"), cache_dir=tmp_path)
    with Assessor(semgrep=broken) as assessor:
        assessment = assessor.assess("print(1)", "python", semgrep=True)
    assert not assessment.complete and assessment.level is RiskLevel.HIGH


def test_semgrep_cache_entries_are_authenticated(tmp_path: Path) -> None:
    """A planted empty result, or a real entry moved to another program's key, is a miss."""
    from hazmat.models import Finding, Severity

    tool = Semgrep(binary="/nonexistent", cache_dir=tmp_path / "cache")
    finding = Finding("os-system", "semgrep", Severity.HIGH, "runs a shell", 3, 1, 78)
    bad, good = tool.cache_key("os.system(x)", "python"), tool.cache_key("print(1)", "python")
    tool._store(bad, (finding,))
    tool._store(good, ())
    assert tool._cached(bad) == (finding,) and tool._cached(good) == ()
    path = tmp_path / "cache" / bad[:2] / f"{bad}.json"
    path.write_text("[]")  # the old, unauthenticated format: suppress Semgrep for one program
    assert tool._cached(bad) is None
    moved = (tmp_path / "cache" / good[:2] / f"{good}.json").read_bytes()
    path.write_bytes(moved)  # a genuine entry, under another program's key
    assert tool._cached(bad) is None
    forged = json.loads(moved)
    forged["mac"] = "0" * 64
    path.write_text(json.dumps(forged))
    assert tool._cached(bad) is None
    assert (tmp_path / "cache" / "key").stat().st_mode & 0o777 == 0o600
    other = Semgrep(binary="/nonexistent", cache_dir=tmp_path / "other")
    other._store(bad, ())
    path.write_bytes((tmp_path / "other" / bad[:2] / f"{bad}.json").read_bytes())
    assert tool._cached(bad) is None  # another user's key does not count


def test_a_bandit_folder_of_a_process_that_was_killed_outright_is_removed_by_the_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process killed with SIGKILL never cleans up: the next folder made removes the folders
    of this user's processes that are gone, and leaves those of live ones and any other."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    gone = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    gone.kill()
    gone.wait()
    dead = tmp_path / f"hazmat-bandit-{gone.pid}-abc"
    live = tmp_path / f"hazmat-bandit-{os.getpid()}-def"
    other = tmp_path / "hazmat-bandit-notapid"
    for folder in (dead, live, other):
        folder.mkdir()
        (folder / "code.py").write_text("print(1)\n")
    made = scratch_folder()
    assert made.name.startswith(f"hazmat-bandit-{os.getpid()}-") and made.is_dir()
    assert not dead.exists() and live.exists() and other.exists()
