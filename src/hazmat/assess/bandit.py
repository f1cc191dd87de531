"""Bandit, in-process and kept warm: its plugins load once, each call scans one private copy.

Bandit fails open when used naively: `# nosec` silences a finding, a `.bandit` file or a
`pyproject.toml` in the scanned tree reconfigures it, and a file it cannot parse is merely
"skipped". Here `# nosec` is ignored, the code is copied into a fresh private directory with
nothing else in it and Bandit's default configuration is built in memory (no file is read), and
any skipped file raises `AnalyzerSkipped`, which makes the assessment incomplete.
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
import tempfile
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hazmat.assess.base import AnalyzerSkipped
from hazmat.models import Finding, Severity

__all__ = ["NOT_RUN", "BanditAnalyzer", "scratch_folder"]

SOURCE = "bandit"

_SEVERITY = {"LOW": Severity.LOW, "MEDIUM": Severity.MEDIUM, "HIGH": Severity.HIGH}

# Tests about code quality or secrets hygiene, not about what code can do inside a sandbox:
# not run at all (each test Bandit runs costs time on every node of every program).
NOT_RUN = {
    "B101",  # assert used
    "B105",  # hardcoded password string
    "B106",  # hardcoded password argument
    "B107",  # hardcoded password default
    "B108",  # hardcoded temporary directory
    "B110",  # try/except/pass
    "B112",  # try/except/continue
    "B324",  # weak hash (md5/sha1 for checksums)
}
# Findings kept as information that adds nothing to the score.
_INFO_ONLY = {
    "B311",  # random is not cryptographic (a blacklist entry: cannot be excluded alone)
    "B404",  # import subprocess (hazmat's own rules rate it)
}


_PREFIX = "hazmat-bandit-"


def scratch_folder() -> Path:
    """A new private folder for Bandit's copies, named after this process
    (`hazmat-bandit-<pid>-...`). The first time in a process, folders of this user's
    processes that are gone are removed first: a process killed outright (SIGKILL, the OOM
    killer) never ran its clean-up, and nothing else would ever remove its folder. A reused
    pid only keeps a folder longer."""
    _sweep(tempfile.gettempdir())
    return Path(tempfile.mkdtemp(prefix=f"{_PREFIX}{os.getpid()}-"))


@functools.cache
def _sweep(top: str) -> None:
    """Remove the folders of this user's processes that are gone, once per process and
    temporary folder (a child restarted many times sweeps once)."""
    for folder in Path(top).glob(f"{_PREFIX}*"):
        pid = folder.name[len(_PREFIX) :].split("-", 1)[0]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists() and _ours(folder):
            shutil.rmtree(folder, ignore_errors=True)


def _ours(folder: Path) -> bool:
    try:
        return folder.lstat().st_uid == os.getuid() and folder.is_dir() and not folder.is_symlink()
    except OSError:
        return False


class BanditAnalyzer:
    """Runs Bandit's test set on one program at a time. Not thread-safe: one per child."""

    name = SOURCE
    languages = frozenset({"python"})

    def __init__(self, directory: Path | None = None) -> None:
        """`directory`: the private folder each program is copied into, the caller's to
        remove (the assessing process: its child ends killed); else one of its own,
        removed by `close`."""
        with warnings.catch_warnings():
            # Bandit's plugin loader (stevedore) passes an argument it has deprecated.
            warnings.simplefilter("ignore", DeprecationWarning)
            from bandit.core import config, manager, meta_ast, metrics, tester

            # `# nosec` never skips a finding here: Bandit's per-test lookup of nosec
            # comments (a fifth of its time) always answers "none".
            tester.BanditTester._get_nosecs_from_contexts = _no_nosec

            self._manager = manager.BanditManager(
                config.BanditConfig(),
                "file",
                quiet=True,
                ignore_nosec=True,
                profile={"exclude": sorted(NOT_RUN)},
            )
        logging.getLogger("bandit").setLevel(logging.CRITICAL)
        self._meta_ast = meta_ast
        self._metrics = metrics
        self._owned = directory is None
        self._dir = scratch_folder() if directory is None else directory
        os.chmod(self._dir, 0o700)

    def analyze(self, code: str, language: str) -> Sequence[Finding]:
        target = self._dir / "code.py"
        target.write_text(code, encoding="utf-8")
        m: Any = self._manager
        m.ignore_nosec = True  # a plugin cannot switch it back between calls
        m.results, m.skipped, m.scores = [], [], []
        m.files_list, m.excluded_files = [str(target)], []
        m.b_ma = self._meta_ast.BanditMetaAst()
        m.metrics = self._metrics.Metrics()
        try:
            m.run_tests()
        finally:
            target.unlink(missing_ok=True)
        if m.skipped:
            reasons = "; ".join(str(reason) for _, reason in m.skipped)
            raise AnalyzerSkipped(f"bandit skipped the code: {reasons}")
        return [_finding(issue) for issue in m.results]

    def close(self) -> None:
        if self._owned:
            shutil.rmtree(self._dir, ignore_errors=True)


def _no_nosec(self: Any, context: Any, test_result: Any = None) -> None:
    return None


def _finding(issue: Any) -> Finding:
    severity = _SEVERITY.get(str(issue.severity), Severity.MEDIUM)
    if issue.test_id in _INFO_ONLY:
        severity = Severity.INFO
    cwe = getattr(getattr(issue, "cwe", None), "id", None)
    return Finding(
        rule=f"{issue.test_id}:{issue.test}",
        source=SOURCE,
        severity=severity,
        message=str(issue.text),
        line=int(issue.lineno or 0),
        column=int(getattr(issue, "col_offset", -1)) + 1,
        cwe=int(cwe) if cwe else None,
    )
