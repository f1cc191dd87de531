"""Running the building host's tools, and commands inside an image being built."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path

from hazmat._exceptions import ImageBuildError

__all__ = ["Progress", "in_chroot", "run_tool"]

Progress = Callable[[str], None]


def run_tool(cmd: list[str], cwd: Path | None = None, env: dict[str, str] | None = None) -> str:
    proc = subprocess.run(
        cmd, cwd=cwd, env=env, capture_output=True, text=True, errors="replace", check=False
    )
    if proc.returncode != 0:
        raise ImageBuildError(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr.strip()}")
    return proc.stdout


def in_chroot(rootfs: Path, *command: str, env: Mapping[str, str] | None = None) -> str:
    """Run a command in the image being built, with /proc mounted and a clean environment."""
    proc = rootfs / "proc"
    run_tool(["mount", "-t", "proc", "proc", str(proc)])
    try:
        settings = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8"}
        settings.update(env or {})
        assignments = [f"{name}={value}" for name, value in settings.items()]
        return run_tool(["chroot", str(rootfs), "/usr/bin/env", "-i", *assignments, *command])
    finally:
        run_tool(["umount", "-l", str(proc)])
