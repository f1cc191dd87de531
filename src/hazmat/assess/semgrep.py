"""Semgrep as a subprocess, with hazmat's own rules (rules/*.yaml), fully offline.

Called so that it cannot fail open: `--disable-nosem` (a `# nosemgrep` comment changes
nothing), explicit configuration from the package only, no metrics, no version check, `HOME`
and the XDG directories pointed at a scratch directory (no user settings, no login token), one
explicit target in a private directory, and a check that the target is listed in
`paths.scanned`: a file Semgrep skipped (too large, unknown language) or any error it reports
makes the scan a problem, which makes the assessment incomplete.

A scan takes seconds, so results are cached on disk by SHA-256 of language, code, rules and
Semgrep version. Each entry carries an HMAC-SHA256 over its key and findings, made with a
private per-user key (`<cache>/key`, mode 0600): an entry planted or moved by anyone without
that key is a miss, so it can cost a scan but never hide a finding.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from hazmat._cache import cache_folder
from hazmat.models import Finding, Severity

__all__ = ["RULES_DIR", "Semgrep", "SemgrepReport"]

SOURCE = "semgrep"
RULES_DIR = Path(__file__).with_name("rules")
_EXTENSIONS = {"python": "py", "javascript": "js", "typescript": "ts", "go": "go"}
_SEVERITY = {"ERROR": Severity.HIGH, "WARNING": Severity.MEDIUM, "INFO": Severity.LOW}


@dataclass(frozen=True)
class SemgrepReport:
    """One scan: its findings, or the problem that made it incomplete."""

    findings: tuple[Finding, ...]
    problem: str | None
    cached: bool
    duration_ms: float


class Semgrep:
    """Runs the `semgrep` command that HAZMAT_SEMGREP names, else the one next to this Python,
    else the one on PATH. Semgrep cannot share hazmat's environment (it pins mcp 1.x, hazmat
    needs 2.x): it is installed in one of its own (docs/assessment.md, "Semgrep")."""

    def __init__(
        self,
        *,
        binary: str | None = None,
        rules_dir: Path = RULES_DIR,
        cache_dir: Path | None = None,
        timeout_s: float = 60.0,
        memory_mb: int = 2048,
    ) -> None:
        self.binary = binary or _find_binary()
        self.rules_dir = rules_dir
        self.cache_dir = cache_dir or cache_folder("semgrep")
        self.timeout_s = timeout_s
        self.memory_mb = memory_mb

    @property
    def available(self) -> bool:
        return self.binary is not None

    @cached_property
    def rules_version(self) -> str:
        digest = hashlib.sha256()
        for path in sorted(self.rules_dir.glob("*.yaml")):
            digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
        return digest.hexdigest()[:16]

    @cached_property
    def version(self) -> str:
        if self.binary is None:
            return "missing"
        with tempfile.TemporaryDirectory(prefix="hazmat-semgrep-") as scratch:
            try:
                done = subprocess.run(
                    [self.binary, "--version"],
                    capture_output=True,
                    text=True,
                    env=_environment(Path(scratch)),
                    timeout=self.timeout_s,
                    check=False,
                )
            except (OSError, subprocess.TimeoutExpired):
                return "unavailable"
        return done.stdout.strip() or "unknown"

    def cache_key(self, code: str, language: str) -> str:
        digest = hashlib.sha256()
        for part in (language, code, self.rules_version, self.version):
            digest.update(part.encode("utf-8") + b"\0")
        return digest.hexdigest()

    def scan(self, code: str, language: str, *, use_cache: bool = True) -> SemgrepReport:
        started = time.perf_counter()
        if self.binary is None:
            return SemgrepReport(
                (),
                "semgrep: not found (install it in an environment of its own and set "
                "HAZMAT_SEMGREP to its `semgrep`: docs/assessment.md)",
                False,
                0.0,
            )
        if language not in _EXTENSIONS:
            return SemgrepReport((), f"semgrep: no rules for {language}", False, 0.0)
        key = self.cache_key(code, language)
        cached = self._cached(key) if use_cache else None
        if cached is not None:
            elapsed = (time.perf_counter() - started) * 1000
            return SemgrepReport(cached, None, True, elapsed)
        findings, problem = self._run(code, language)
        if problem is None:
            self._store(key, findings)
        elapsed = (time.perf_counter() - started) * 1000
        return SemgrepReport(findings, problem, False, elapsed)

    def _run(self, code: str, language: str) -> tuple[tuple[Finding, ...], str | None]:
        assert self.binary is not None
        with tempfile.TemporaryDirectory(prefix="hazmat-semgrep-") as scratch_name:
            scratch = Path(scratch_name)
            target = scratch / "target" / f"code.{_EXTENSIONS[language]}"
            target.parent.mkdir()
            target.write_text(code, encoding="utf-8")
            command = [
                self.binary, "scan",
                "--config", str(self.rules_dir),
                "--json", "--quiet",
                "--metrics=off", "--disable-version-check", "--disable-nosem",
                "--no-git-ignore",
                "--jobs", "1",
                "--timeout", str(max(1, int(self.timeout_s))),
                "--timeout-threshold", "1",
                "--max-memory", str(self.memory_mb),
                "--max-target-bytes", str(len(code.encode("utf-8")) + 1024),
                "--", str(target),
            ]  # fmt: skip
            try:
                done = subprocess.run(
                    command,
                    capture_output=True,
                    env=_environment(scratch),
                    cwd=scratch,
                    timeout=self.timeout_s + 10,
                    check=False,
                )
            except subprocess.TimeoutExpired:
                return (), f"semgrep: timed out after {self.timeout_s + 10:g}s"
            except OSError as exc:
                return (), f"semgrep: cannot run {self.binary}: {exc}"
            return _parse_output(done, str(target))

    def _cached(self, key: str) -> tuple[Finding, ...] | None:
        """The findings stored for `key`, if their MAC proves this user's hazmat stored them
        for exactly this key. Anything else (a planted `[]`, an entry moved from another key,
        a torn write) is a miss: it costs a scan, never a finding."""
        path = self.cache_dir / key[:2] / f"{key}.json"
        try:
            entry = json.loads(path.read_bytes())
            findings = entry["findings"]
            body = json.dumps(findings, sort_keys=True, separators=(",", ":")).encode()
            if not hmac.compare_digest(str(entry["mac"]), self._mac(key, body)):
                return None
            return tuple(_finding_from_cache(item) for item in findings)
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None

    def _store(self, key: str, findings: tuple[Finding, ...]) -> None:
        path = self.cache_dir / key[:2] / f"{key}.json"
        data = [f.to_dict() for f in findings]
        try:
            body = json.dumps(data, sort_keys=True, separators=(",", ":")).encode()
            entry = json.dumps({"mac": self._mac(key, body), "findings": data}).encode()
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".", suffix=".tmp")
        except OSError:
            return  # a cache that cannot be written only costs time
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(entry)
            os.replace(tmp, path)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(tmp)  # a full disk must not leave a temporary file per scan

    def _mac(self, key: str, body: bytes) -> str:
        return hmac.new(self._mac_key, key.encode() + b"\n" + body, hashlib.sha256).hexdigest()

    @cached_property
    def _mac_key(self) -> bytes:
        """A private per-user key (`<cache>/key`, mode 0600), made on first use."""
        path = self.cache_dir / "key"
        try:
            return _read_key(path)
        except FileNotFoundError:
            pass
        try:
            self.cache_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(secrets.token_bytes(32))
        except FileExistsError:
            pass  # another process made it first
        except OSError:
            return secrets.token_bytes(32)  # no usable cache: entries never verify, scans run
        try:
            return _read_key(path)
        except OSError:
            return secrets.token_bytes(32)


def _read_key(path: Path) -> bytes:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        data = f.read()
    if st.st_uid != os.geteuid() or st.st_mode & 0o077 or len(data) != 32:
        raise OSError(f"{path} is not a private 32-byte key of this user")
    return data


def _parse_output(
    done: subprocess.CompletedProcess[bytes], target: str
) -> tuple[tuple[Finding, ...], str | None]:
    try:
        report: dict[str, Any] = json.loads(done.stdout)
    except ValueError:
        tail = done.stderr.decode("utf-8", "replace").strip()[-300:]
        return (), f"semgrep: exit status {done.returncode}, no JSON report ({tail})"
    errors = report.get("errors") or []
    if errors:
        first = errors[0]
        what = first.get("message") or first.get("type") or "error"
        return (), f"semgrep: {len(errors)} error(s), first: {str(what)[:300]}"
    if done.returncode != 0:
        return (), f"semgrep: exit status {done.returncode}"
    scanned = report.get("paths", {}).get("scanned", [])
    if target not in scanned:
        return (), "semgrep: the code was not scanned (skipped target)"
    findings = tuple(_finding(result) for result in report.get("results", []))
    return findings, None


def _finding(result: dict[str, Any]) -> Finding:
    extra = result.get("extra", {})
    metadata = extra.get("metadata", {}) or {}
    severity = metadata.get("hazmat-severity")
    cwe = metadata.get("cwe-id")
    return Finding(
        rule=str(result.get("check_id", "?")).rsplit(".", 1)[-1],
        source=SOURCE,
        severity=Severity(severity)
        if severity
        else _SEVERITY.get(extra.get("severity"), Severity.MEDIUM),
        message=str(extra.get("message", "")).strip(),
        line=int(result.get("start", {}).get("line", 0)),
        column=int(result.get("start", {}).get("col", 0)),
        cwe=int(cwe) if cwe else None,
    )


def _finding_from_cache(item: dict[str, Any]) -> Finding:
    return Finding(
        rule=str(item["rule"]),
        source=str(item["source"]),
        severity=Severity(item["severity"]),
        message=str(item["message"]),
        line=int(item["line"]),
        column=int(item["column"]),
        cwe=item.get("cwe"),
    )


def _environment(scratch: Path) -> dict[str, str]:
    """A closed environment: no user configuration, no token, no telemetry."""
    home = scratch / "home"
    home.mkdir(exist_ok=True)
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "LANG": "C.UTF-8",
        "SEMGREP_ENABLE_VERSION_CHECK": "0",
        "SEMGREP_SEND_METRICS": "off",
        "SEMGREP_SETTINGS_FILE": str(home / "settings.yml"),
    }


def _find_binary() -> str | None:
    named = os.environ.get("HAZMAT_SEMGREP")
    if named:  # as named, even if it cannot run: the scan then says why
        return named
    beside = Path(sys.executable).with_name("semgrep")
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("semgrep")

