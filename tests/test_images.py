"""Image building's own checks (no engine): what is fetched from a registry is pinned."""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path

import pytest

from hazmat._exceptions import ImageBuildError
from hazmat.backends.recipes import ESBUILD_INTEGRITY, check_integrity


def _integrity(data: bytes) -> str:
    return "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()


def test_a_fetched_tarball_must_match_its_pinned_hash(tmp_path: Path) -> None:
    tarball = tmp_path / "esbuild.tgz"
    tarball.write_bytes(b"the real package")
    pinned = _integrity(b"the real package")
    check_integrity(tarball, pinned, "esbuild")  # accepted
    tarball.write_bytes(b"the real packagf")  # one byte changed on the way
    with pytest.raises(ImageBuildError, match="esbuild: integrity check failed"):
        check_integrity(tarball, pinned, "esbuild")
    with pytest.raises(ImageBuildError, match="integrity check failed"):
        check_integrity(tarball, "sha512-", "esbuild")


def test_every_pinned_esbuild_is_a_sha512_integrity() -> None:
    assert set(ESBUILD_INTEGRITY) == {"x64", "arm64"}
    for value in ESBUILD_INTEGRITY.values():
        algorithm, _, digest = value.partition("-")
        assert algorithm == "sha512" and len(base64.b64decode(digest)) == 64
