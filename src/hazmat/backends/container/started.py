"""A container that is up, checked, and waiting for its one job (backends/docker/driver.py starts
it; the warm pool holds it as a lease; a session keeps it for many calls)."""

from __future__ import annotations

import socket
import time
from dataclasses import dataclass
from typing import Any

from hazmat._waiting import readable
from hazmat.backends.base import Spec
from hazmat.backends.container.cgroup import Cgroup

__all__ = ["REAP_GRACE_S", "Started"]

# A container older than its deadline plus this is removed by any hazmat process's reaper.
REAP_GRACE_S = 120


@dataclass
class Started:
    """A container that is up, checked, and waiting on its attached stdin for one job."""

    spec: Spec
    cid: str
    uid: int  # the program's, its own among live containers (backends/container/uids.py)
    attached: Any
    sock: socket.socket
    born: float  # time.monotonic() when it became ready
    expires: float  # time.time() after which any hazmat process may reap it
    cgroup: Cgroup | None

    def healthy(self) -> bool:
        """Nothing may arrive before the job: readable means it wrote or ended."""
        try:
            return not readable(self.sock)
        except (OSError, ValueError):
            return False

    def covers(self, timeout_s: float) -> bool:
        """Whether the reaper's deadline on this container leaves room for a job of
        `timeout_s` (with the grace any reaper gives)."""
        return time.time() + timeout_s < self.expires - REAP_GRACE_S
