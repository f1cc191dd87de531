"""The cluster tests' workers: `hazmat worker` processes on the test's Redis."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from server_helpers import STARTED, Logged

EVENTS = {"Accept": "text/event-stream"}


def start_worker(
    tmp: Path, redis_url: str, name: str, slots: int, sessions: Path | None = None
) -> subprocess.Popen[str]:
    """`hazmat worker` with its own audit log (and, given, the session folder whose key seals
    its paused sessions)."""
    env = {**os.environ, "HAZMAT_AUDIT_DIR": str(tmp / f"audit-{name}")}
    env["HAZMAT_SESSIONS_DIR"] = str(sessions or tmp / f"sessions-{name}")
    cmd = [sys.executable, "-m", "hazmat", "worker", "--redis", redis_url, "--name", name]
    log_path = tmp / f"worker-{name}.stderr"  # watched for tracebacks (server_helpers.py)
    with log_path.open("ab") as log:
        process = subprocess.Popen(
            [*cmd, "--slots", str(slots)],
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
            env=env,
        )
    assert process.stdout is not None
    for line in process.stdout:
        if "taking runs" in line:
            STARTED.append(Logged(f"worker {name}", process, log_path))
            return process
    raise AssertionError(f"hazmat worker did not start: {process.wait()}: {log_path.read_text()}")
