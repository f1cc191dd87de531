"""`hazmat doctor`'s runc check: whether the runc the engine runs and the one the direct OCI
tier runs carry the fixes for runc's November 2025 vulnerabilities.

CVE-2025-31133 (masked paths), CVE-2025-52565 (/dev/console) and CVE-2025-52881 (writes to
/proc redirected) let a hostile image, or a container racing runc as it starts, write to the
host's procfs: they matter where an operator runs an image that is not hazmat's. Upstream fixed
all three in 1.2.8, 1.3.3 and 1.4.0-rc.3. Debian 12's runc (1.1.5+ds1-1+deb12u1) has none of
the fixes; Debian 13's security update 1.1.15+ds1-2+deb13u1 backports the first two only (its
changelog); Debian's unstable has 1.3.6. `scripts/ensure-engine.sh` installs that one where
it can (docs/security.md).

A warning, never a failure: hazmat's own images hold nothing that could exploit them.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hazmat.cli.doctor_check import Check

__all__ = ["CVES", "RuncVersion", "missing_fixes", "parse_runc_version", "runc_check"]

CVES = ("CVE-2025-31133", "CVE-2025-52565", "CVE-2025-52881")
# the first release of each upstream line with all three fixes; a later line has them too
FIXED_IN = {(1, 2): (1, 2, 8), (1, 3): (1, 3, 3), (1, 4): (1, 4, 0)}
# Debian packages that backport some of them (from each package's changelog.Debian)
BACKPORTED = {"1.1.15+ds1-2+deb13u1": CVES[:2]}
_VERSION = re.compile(r"v?(\d+)\.(\d+)\.(\d+)(?:[-~]rc\.?(\d+))?")
_DEBIAN = re.compile(r"\d+\.\d+\.\d+\S*-[^-\s]+$")  # upstream+ds1-revision
_FIX = (
    "bash scripts/ensure-engine.sh installs Debian unstable's runc 1.3.6 in /var/lib/hazmat/runc "
    "for the OCI tier and the engine it starts; an engine already running uses it once it is "
    "stopped and started by that script (docs/security.md, runc)"
)


@dataclass(frozen=True)
class RuncVersion:
    """A runc's upstream release and, for Debian's builds, the package's version (which
    Debian's runc prints as its `commit`)."""

    release: tuple[int, int, int]
    rc: int | None  # a release candidate's number
    package: str = ""

    def __str__(self) -> str:
        text = ".".join(map(str, self.release)) + (f"-rc.{self.rc}" if self.rc else "")
        return f"{text} ({self.package})" if self.package else text


def parse_runc_version(text: str) -> RuncVersion | None:
    """`runc --version`'s output (`runc version 1.1.5+ds1`, `commit: 1.1.5+ds1-1+deb12u1`),
    or the engine's `RuncCommit` alone (Debian's package version, or upstream's `v1.2.8-0-g...`);
    None when no version is in it (a bare git hash)."""
    fields = dict(line.strip().partition(" ")[::2] for line in text.strip().splitlines())
    if "runc" in fields:
        version = fields["runc"].removeprefix("version").strip()
        commit = fields.get("commit:", "").strip()
    else:
        version = commit = text.strip()
    found = _VERSION.match(version)
    if not found:
        return None
    major, minor, patch, rc = found.groups()
    package = commit if _DEBIAN.match(commit) else ""
    return RuncVersion((int(major), int(minor), int(patch)), int(rc) if rc else None, package)


def missing_fixes(version: RuncVersion) -> tuple[str, ...]:
    """The CVEs whose fixes `version` lacks: none from 1.2.8, 1.3.3 and 1.4.0-rc.3 on; for
    an older Debian package, those its changelog does not name (BACKPORTED)."""
    line, rc = version.release[:2], version.rc
    if version.release == (1, 4, 0) and rc is not None:
        fixed = rc >= 3
    elif line >= (1, 4):
        fixed = True
    else:
        first = FIXED_IN.get(line)
        fixed = first is not None and version.release >= first and rc is None
    if fixed:
        return ()
    return tuple(cve for cve in CVES if cve not in BACKPORTED.get(version.package, ()))


def runc_check(info: dict[str, Any], binary: Path | None) -> Check:
    """The engine's runc (its `RuncCommit`, from `docker info`) and the OCI tier's (`binary
    --version`): OK when each carries every fix, else a warning naming what is missing."""
    parts, lacking = [], False
    commit = str((info.get("RuncCommit") or {}).get("ID") or "")
    for where, text in (("engine", commit), ("oci tier", _version_text(binary))):
        version = parse_runc_version(text) if text else None
        if version is None:
            parts.append(f"{where}: runc of unknown version ({text.strip() or 'none'})")
            lacking = True
            continue
        missing = missing_fixes(version)
        lacking = lacking or bool(missing)
        said = f"lacks the fixes for {', '.join(missing)}" if missing else "has the 2025 fixes"
        parts.append(f"{where}: runc {version}, {said}")
    if binary is not None:
        parts[-1] += f" ({binary})"
    return Check("runc version", not lacking, "; ".join(parts), _FIX if lacking else "", False)


def _version_text(binary: Path | None) -> str:
    if binary is None:
        return ""
    try:
        proc = subprocess.run(
            [str(binary), "--version"], capture_output=True, text=True, check=False, timeout=10
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return proc.stdout
