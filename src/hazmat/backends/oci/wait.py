"""What the direct OCI tier (backends/oci/driver.py) waits for from a runtime, and on what: never
one look at something the runtime may not have written yet, nor at a process that may be gone.

- The agent's ready line comes through the relay (backends/oci/relay.py) and is read until it
  comes, the stream ends (the runtime gave up) or the ready deadline passes (stream.wait_ready).
- The runtime's pid file. runc's `run` writes it only after it has let the container's
  process go (runc's utils_linux.go: `container.Run`, then `createPidFile`), so the agent can
  say it is ready before the file is there; runsc writes it before it starts the container
  (runsc/container/container.go: `New` writes it, `Run` then calls `Start`). No event says it
  is there: it is looked for again, at growing intervals, each one a wait on the runtime
  process's exit, until it names a pid, the runtime has ended (then it never will) or
  `PID_FILE_TIMEOUT_S` passes.
- The sandbox's first process, which the pid file names: held by a pidfd from then on. What is
  read of /proc/<pid> counts only if that process descends from the runtime's and has not
  ended once the reading is done: a pid number is free for another process once its own is
  gone. Its cgroup needs no wait: both runtimes put it there before it runs.
- The runtime's account of the sandbox (`runsc state`): asked again until it answers, the
  runtime ends or `STATE_TIMEOUT_S` passes.

Each wait that ends without what it waited for raises `InfraError` naming the sandbox and what
it waited for: not a settings mismatch (nothing was found to differ), and the pool retries it.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from hazmat._exceptions import InfraError
from hazmat._waiting import readable

__all__ = ["PID_FILE_TIMEOUT_S", "STATE_TIMEOUT_S", "FirstProcess", "runtime_state", "wait_for_pid"]

PID_FILE_TIMEOUT_S = 30.0
STATE_TIMEOUT_S = 30.0
_FIRST_PAUSE_S = 0.001
_LONGEST_PAUSE_S = 0.05
_ANCESTORS = 4  # how far up from the first process the runtime's may be (a wrapper in front)

T = TypeVar("T")


def retry(attempt: Callable[[], T | None], ended: threading.Event, timeout_s: float) -> T | None:
    """`attempt()` until it gives a value, the runtime has ended (`ended`: one more attempt is
    made after that, since it may have done its part just before) or `timeout_s` passes; None
    then. The pauses between attempts grow from 1 to 50 ms and end at once when the runtime
    does."""
    deadline = time.monotonic() + timeout_s
    pause = _FIRST_PAUSE_S
    while True:
        over = ended.is_set()
        found = attempt()
        if found is not None or over:
            return found
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        ended.wait(min(pause, left))
        pause = min(pause * 2, _LONGEST_PAUSE_S)


def wait_for_pid(
    pid_file: Path,
    ended: threading.Event,
    cid: str,
    runtime: str,
    timeout_s: float | None = None,
) -> int:
    """The pid in the runtime's pid file, once it is there (see the module's docstring);
    `timeout_s` is `PID_FILE_TIMEOUT_S` unless given."""
    timeout_s = PID_FILE_TIMEOUT_S if timeout_s is None else timeout_s
    pid = retry(lambda: _pid_in(pid_file), ended, timeout_s)
    if pid is not None:
        return pid
    if ended.is_set():
        raise InfraError(f"sandbox {cid}: {runtime} ended without writing its pid file {pid_file}")
    raise InfraError(f"sandbox {cid}: {runtime} wrote no pid file {pid_file} in {timeout_s:g} s")


def _pid_in(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise InfraError(f"cannot read the runtime's pid file {path}: {exc}") from None
    # runsc writes the file in place (not by a rename, as runc does): it may still be empty
    return int(text) if text.isdigit() and int(text) > 0 else None


class FirstProcess:
    """The sandbox's first process, held by a pidfd from the moment its pid is known.

    Raises `InfraError` when the process has already ended, or when it does not descend from
    the runtime's process `runtime_pid` (the pid names another process now). `ended()` after
    reading /proc/<pid> says whether what was read may be another process's."""

    def __init__(self, pid: int, runtime_pid: int, cid: str) -> None:
        self.pid = pid
        try:
            self._fd = os.pidfd_open(pid)
        except ProcessLookupError:
            raise InfraError(
                f"sandbox {cid}: its first process {pid} ended before its settings were read"
            ) from None
        if not _descends(pid, runtime_pid) and not self.ended():
            self.close()
            raise InfraError(
                f"sandbox {cid}: process {pid}, named by the runtime's pid file, is not one of "
                f"the runtime's (process {runtime_pid})"
            )

    def ended(self) -> bool:
        return readable(self._fd)

    def close(self) -> None:
        os.close(self._fd)


def _descends(pid: int, ancestor: int, proc: Path = Path("/proc")) -> bool:
    for _ in range(_ANCESTORS):
        try:
            stat = (proc / str(pid) / "stat").read_text()
        except OSError:
            return False
        pid = int(stat.rsplit(")", 1)[1].split()[1])  # the parent's pid, after the name
        if pid == ancestor:
            return True
        if pid <= 1:
            return False
    return False


def runtime_state(
    command: list[str], cid: str, ended: threading.Event, timeout_s: float | None = None
) -> dict[str, Any]:
    """What `<runtime> state` says of the sandbox (its status, pid and bundle), asked again
    until it answers, the runtime ends or `timeout_s` (`STATE_TIMEOUT_S` unless given) passes;
    then `InfraError` with what the runtime said last."""
    timeout_s = STATE_TIMEOUT_S if timeout_s is None else timeout_s
    deadline = time.monotonic() + timeout_s
    said = [""]

    def ask() -> dict[str, Any] | None:
        left = max(deadline - time.monotonic(), 0.1)
        try:
            done = subprocess.run(
                [*command, "state", cid], capture_output=True, timeout=left, check=False
            )
        except subprocess.TimeoutExpired:
            said[0] = f"no answer in {left:.3g} s"
            return None
        try:
            state = json.loads(done.stdout)
        except ValueError:
            state = None
        if done.returncode == 0 and isinstance(state, dict) and "bundle" in state:
            return state
        err = done.stderr.decode(errors="replace").strip()[-300:]
        said[0] = err or f"exit status {done.returncode}"
        return None

    state = retry(ask, ended, timeout_s)
    if state is None:
        name = Path(command[0]).name
        why = "the runtime ended" if ended.is_set() else f"none in {timeout_s:g} s"
        raise InfraError(f"sandbox {cid}: `{name} state` gave no state ({why}): {said[0]}")
    return state
