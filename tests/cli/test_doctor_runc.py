"""`hazmat doctor`'s runc check: which runc versions carry the fixes for CVE-2025-31133,
CVE-2025-52565 and CVE-2025-52881, read from `runc --version` and the engine's RuncCommit."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from hazmat.cli.doctor_runc import CVES, missing_fixes, parse_runc_version, runc_check

DEBIAN_12 = "runc version 1.1.5+ds1\ncommit: 1.1.5+ds1-1+deb12u1\nspec: 1.0.2-dev\ngo: go1.19.8\n"
SID = "runc version 1.3.6+ds1\ncommit: 1.3.6+ds1-1\nspec: 1.2.1\ngo: go1.26.5\nlibseccomp: 2.6.0\n"


@pytest.mark.parametrize(
    ("text", "missing"),
    [
        (DEBIAN_12, CVES),  # Debian 12's, as `runc --version` prints it
        ("1.1.5+ds1-1+deb12u1", CVES),  # the same, as the engine's RuncCommit
        ("1.1.15+ds1-2+deb13u1", ("CVE-2025-52881",)),  # Debian 13's security update
        ("1.1.15+ds1-2", CVES),
        (SID, ()),
        ("runc version 1.2.7\ncommit: v1.2.7-0-g1b2c3d4", CVES),
        ("runc version 1.2.8\ncommit: v1.2.8-0-g1b2c3d4", ()),
        ("v1.2.8-0-g1b2c3d4", ()),
        ("runc version 1.3.2", CVES),
        ("runc version 1.3.3", ()),
        ("runc version 1.4.0-rc.2", CVES),
        ("runc version 1.4.0-rc.3", ()),
        ("1.4.0~rc3+ds1-1", ()),
        ("runc version 1.4.1", ()),
        ("runc version 1.0.0-rc93", CVES),
    ],
)
def test_which_versions_carry_the_2025_fixes(text: str, missing: tuple[str, ...]) -> None:
    version = parse_runc_version(text)
    assert version is not None
    assert missing_fixes(version) == missing


def test_a_bare_commit_hash_is_no_version() -> None:
    assert parse_runc_version("51d5e94601ceffbbd85688df1c928ecccbfa4685") is None


def _fake_runc(tmp_path: Path, output: str) -> Path:
    binary = tmp_path / "runc"
    binary.write_text(f"#!/bin/sh\ncat <<'EOF'\n{output}EOF\n")
    binary.chmod(binary.stat().st_mode | stat.S_IXUSR)
    assert os.access(binary, os.X_OK)
    return binary


def test_doctor_warns_about_an_unfixed_runc_of_the_engine_or_the_oci_tier(tmp_path: Path) -> None:
    old = runc_check({"RuncCommit": {"ID": "1.1.5+ds1-1+deb12u1"}}, _fake_runc(tmp_path, SID))
    assert not old.ok and not old.needed  # a warning: hazmat's own images cannot exploit it
    assert "engine: runc 1.1.5 (1.1.5+ds1-1+deb12u1), lacks the fixes for " in old.detail
    assert ", ".join(CVES) in old.detail and "ensure-engine.sh" in old.fix
    assert "oci tier: runc 1.3.6 (1.3.6+ds1-1), has the 2025 fixes" in old.detail
    fixed = runc_check({"RuncCommit": {"ID": "1.3.6+ds1-1"}}, _fake_runc(tmp_path, SID))
    assert fixed.ok, fixed.detail
    unknown = runc_check({"RuncCommit": {"ID": "51d5e946"}}, None)
    assert not unknown.ok and "unknown version" in unknown.detail, unknown.detail
