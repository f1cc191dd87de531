"""Where hazmat keeps what it makes once per user and reuses: one folder, one rule."""

from __future__ import annotations

import os
from pathlib import Path


def cache_folder(part: str = "") -> Path:
    """`$HAZMAT_CACHE_DIR/<part>`, else `$XDG_CACHE_HOME/hazmat/<part>` (~/.cache/hazmat/...).

    The parts in use: `packages` (the wheel cache), `semgrep` (its rule cache) and `agent` (the
    compiled agent the Docker backend binds into its sandboxes)."""
    named = os.environ.get("HAZMAT_CACHE_DIR")
    if named:
        base = Path(named)
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "hazmat"
    return base / part if part else base
