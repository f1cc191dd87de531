"""Small facts about the Debian host that image building needs."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

__all__ = ["debian_mirror", "unmount_below"]

_SOURCES = Path("/etc/apt/sources.list")
_SOURCES_DIR = Path("/etc/apt/sources.list.d")


def debian_mirror() -> str | None:
    """The Debian archive this host's apt uses, so images come from the same place.

    `HAZMAT_DEBIAN_MIRROR` overrides it. None means debootstrap's own default.
    """
    override = os.environ.get("HAZMAT_DEBIAN_MIRROR", "").strip()
    if override:
        return override
    for uri in _apt_uris():
        if "/debian" in uri and "security" not in uri:
            return uri
    return None


def _apt_uris() -> list[str]:
    uris: list[str] = []
    if _SOURCES_DIR.is_dir():
        for path in sorted(_SOURCES_DIR.glob("*.sources")):
            text = _read(path)
            uris += re.findall(r"^URIs:\s*(\S+)", text, flags=re.MULTILINE)
    for path in (
        [_SOURCES, *sorted(_SOURCES_DIR.glob("*.list"))] if _SOURCES_DIR.is_dir() else [_SOURCES]
    ):
        for line in _read(path).splitlines():
            match = re.match(r"^deb\s+(?:\[[^\]]*\]\s+)?(\S+)", line.strip())
            if match:
                uris.append(match.group(1))
    return uris


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def unmount_below(path: Path) -> None:
    """Unmount anything mounted under `path` (a failed debootstrap can leave /proc mounted),
    deepest first, so that removing the folder never reaches into a live filesystem."""
    root = str(path.resolve())
    try:
        mounts = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return
    targets = [line.split()[1] for line in mounts if len(line.split()) > 1]
    below = [t for t in targets if t == root or t.startswith(root + "/")]
    for target in sorted(below, key=len, reverse=True):
        subprocess.run(["umount", "-l", target], capture_output=True, check=False)
