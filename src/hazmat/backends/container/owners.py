"""Who owns a hazmat container, and when any hazmat process may remove it (the reaper).

Every container carries the `hazmat` label and its owner: host, pid, the process's start time
(a reused pid has another), PID namespace and a random per-process instance id, and a deadline
(`hazmat.deadline`, set by backends/docker/driver.py). `abandoned` decides from those labels alone.
"""

from __future__ import annotations

import os
import secrets
import socket
import time
from pathlib import Path

__all__ = ["INSTANCE", "LABEL", "abandoned", "owner_labels", "pid_namespace", "start_time"]

LABEL = "hazmat"
INSTANCE = secrets.token_hex(6)  # this process's containers, among any other hazmat's


def owner_labels() -> dict[str, str]:
    """The labels that name this process as a container's owner."""
    return {
        LABEL: "1",
        f"{LABEL}.owner": f"{socket.gethostname()}:{os.getpid()}",
        f"{LABEL}.owner_start": start_time(os.getpid()),
        f"{LABEL}.pidns": pid_namespace(),
        f"{LABEL}.instance": INSTANCE,
    }


def abandoned(labels: dict[str, str]) -> bool:
    """Whether a hazmat container may be removed by any hazmat process.

    Never without a valid deadline (it may not be ours at all). An owner this process can see
    (same host, same PID namespace, same process start time) decides: gone, the container is
    abandoned; alive, it is in use, however late, and its owner removes it. An owner it cannot
    see (another host or PID namespace) is judged by the deadline alone."""
    try:
        deadline = float(labels[f"{LABEL}.deadline"])
    except (KeyError, ValueError):
        return False
    host, _, pid = labels.get(f"{LABEL}.owner", "").rpartition(":")
    visible = (
        host == socket.gethostname()
        and pid.isdigit()
        and labels.get(f"{LABEL}.pidns") == pid_namespace()
    )
    if visible:
        start = labels.get(f"{LABEL}.owner_start")
        return not (_alive(int(pid)) and (start is None or start == start_time(int(pid))))
    return time.time() > deadline


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def start_time(pid: int) -> str:
    """The process's start time in clock ticks since boot (a reused pid has another)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rpartition(")")[2].split()[19]
    except (OSError, IndexError):
        return ""


def pid_namespace() -> str:
    try:
        return str(os.stat("/proc/self/ns/pid").st_ino)
    except OSError:
        return ""
