"""`hazmat doctor`'s host check: whether this host is one of the setups hazmat is tested on.

Tested on every change (`.ci/run`): cgroup v1 with Docker's `cgroupfs` driver (the test
machines), and cgroup v2 with Docker's `systemd` driver (the cgroup v2 lab, a Debian 13 guest:
docs/cgroup-v2-lab.md); cgroup v2 with the `cgroupfs` driver is checked in the lab on demand
(`LAB_DRIVER=cgroupfs make v2-test`). Not tested: rootless Docker, Docker Desktop (macOS,
Windows), a Docker engine inside a Kubernetes pod. docs/architecture.md ("The hosts hazmat is
tested on") names the versions.

A warning, never a failure: an untested setup may well work; it is said so that nobody takes
it for a tested one.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from hazmat.cli.doctor_check import Check

__all__ = ["TESTED", "host_check"]

# (cgroup version, Docker's cgroup driver)
TESTED = frozenset({("1", "cgroupfs"), ("2", "systemd"), ("2", "cgroupfs")})
_WHERE = "docs/architecture.md, 'The hosts hazmat is tested on'"


def host_check(
    raw: Mapping[str, Any], cgroup: str, environ: Mapping[str, str] = os.environ
) -> Check:
    """What the engine's info (`raw`, Docker's /info) and the cgroup version say of this host."""
    driver = str(raw.get("CgroupDriver") or "unknown")
    setup = f"cgroup v{cgroup} with Docker's {driver} cgroup driver"
    untested = []
    if any("name=rootless" in str(option) for option in raw.get("SecurityOptions") or ()):
        untested.append("rootless Docker")
    if "Docker Desktop" in str(raw.get("OperatingSystem") or ""):
        untested.append("Docker Desktop")
    if environ.get("KUBERNETES_SERVICE_HOST"):
        untested.append("inside a Kubernetes pod")
    if (cgroup, driver) not in TESTED:
        untested.append(setup)
    if untested:
        return Check(
            "host setup",
            False,
            f"{setup}: not tested ({', '.join(untested)})",
            f"the setups hazmat is tested on are listed in {_WHERE}",
            needed=False,
        )
    return Check("host setup", True, f"{setup}, rootful Docker: tested ({_WHERE})")
