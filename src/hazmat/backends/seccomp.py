"""hazmat's seccomp profile: the engine's own default profile, minus ptrace.

Docker's default profile allows `ptrace` on kernels from 4.8 on. The program runs as the same
uid as PID 1 (docker-init) and the agent, so without Yama it could attach to them. hazmat drops
every rule that allows `ptrace`, `process_vm_readv` or `process_vm_writev` unconditionally;
rules that need a capability never apply, since every capability is dropped.

The default profile is not shipped with hazmat: `scripts/ensure-engine.sh` extracts the one that
matches the installed engine from Debian's golang-github-docker-docker-dev package into
`/var/lib/hazmat/seccomp/docker-default.json` (`HAZMAT_SECCOMP_BASE` names another file). When
no base profile is found, containers get Docker's built-in default and every result says so.
"""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path
from typing import Any

__all__ = ["DENIED", "SeccompProfile", "load_profile"]

DENIED = frozenset({"ptrace", "process_vm_readv", "process_vm_writev"})
BASE_PATHS = (
    Path("/var/lib/hazmat/seccomp/docker-default.json"),
    Path("/usr/share/gocode/src/github.com/docker/docker/profiles/seccomp/default.json"),
)
MISSING_NOTE = (
    "seccomp: Docker's built-in default profile (ptrace allowed); "
    "run scripts/ensure-engine.sh to install the base profile hazmat derives its own from"
)


class SeccompProfile:
    """A profile ready for `security_opt`, or None's stand-in when no base was found."""

    def __init__(self, text: str | None, source: str) -> None:
        self.text = text
        self.source = source

    @property
    def security_opt(self) -> list[str]:
        return [f"seccomp={self.text}"] if self.text else []


@functools.cache
def load_profile(base: str | None = None) -> SeccompProfile:
    """Derive hazmat's profile from the first base profile found (cached per process)."""
    candidates = [Path(base)] if base else _candidates()
    for path in candidates:
        if path.is_file():
            profile = json.loads(path.read_text(encoding="utf-8"))
            return SeccompProfile(json.dumps(derive(profile), separators=(",", ":")), str(path))
    return SeccompProfile(None, "")


def _candidates() -> list[Path]:
    override = os.environ.get("HAZMAT_SECCOMP_BASE")
    return [Path(override)] if override else list(BASE_PATHS)


def derive(profile: dict[str, Any]) -> dict[str, Any]:
    """`profile` without any unconditional allow rule for the DENIED syscalls."""
    rules = []
    for rule in profile.get("syscalls", []):
        needs_cap = bool((rule.get("includes") or {}).get("caps"))
        if rule.get("action") == "SCMP_ACT_ALLOW" and not needs_cap:
            names = [n for n in rule.get("names", []) if n not in DENIED]
            if not names:
                continue
            rule = {**rule, "names": names}
        rules.append(rule)
    return {**profile, "syscalls": rules}
