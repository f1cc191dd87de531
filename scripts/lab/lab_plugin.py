"""A pytest plugin for the cgroup v2 lab's guest (docs/cgroup-v2-lab.md), loaded there alone.

The guest gets only the images the lab uses (`LAB_REFS`: a `docker save` of a few, not all
nine), so tests/conftest.py's check that every recipe's image is current is narrowed to those:
a test that needs another image fails on the engine's own error instead of being refused.
The compiled agent built on the host (run-lab.sh, beside this file) is put in the session's
own cache (tests/conftest.py names one), where the Docker tier would build it again under
software emulation.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest


@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    refs = set(os.environ.get("LAB_REFS", "").split())
    for module in list(sys.modules.values()):
        if str(getattr(module, "__file__", "")).endswith("tests/conftest.py"):
            recipes = getattr(module, "RECIPES")  # noqa: B009 (a module's global, untyped)
            module.RECIPES = {k: r for k, r in recipes.items() if r.ref in refs}  # type: ignore[attr-defined]
    from hazmat._cache import cache_folder  # after tests/conftest.py has named the cache

    shutil.copytree(Path(__file__).parent / "agent", cache_folder() / "agent", dirs_exist_ok=True)
