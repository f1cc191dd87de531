"""Pausing a session and resuming it in a new container (sessions/, run/session_store.py).

A pause asks the session's agent for its working directory as a tar archive, made inside the
sandbox (mode `save`, backends/agent/session_agent.py); Python's interpreter first pickles what it
can of its variables into that directory and says which it could not (a function or class
defined in the session, an open file, a generator, ...). The sandbox keeps the archive and
what the session was in its store, and the container is removed. A resume opens a new
hardened container with the same language, trust, runtime and image, sends the archive back
(mode `restore`: unpacked as the new program's uid) and, for Python, loads the variables,
each on its own, saying which came back. The session keeps its id. Nothing of the container
besides the working directory survives: /tmp, processes, open files and sockets are gone.

    paused = session.pause()
    paused.saved, paused.lost          # ('frame', 'np'), {'f': 'defined in the session: ...'}
    session = sandbox.resume_session(paused.id)
    session.resumed["loaded"]          # ['frame', 'np']
"""

from __future__ import annotations

import dataclasses
import json
import re
import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from hazmat._exceptions import InfraError
from hazmat.backends.base import Program, RunReport, Spec
from hazmat.models import ExecutionResult
from hazmat.sessions.store import Paused

__all__ = ["SAVE_FILE", "Pausable", "pause", "restore", "save", "with_lost_note"]

SAVE_FILE = "/tmp/.hazmat-save.tar"  # where the agent leaves the archive (a file of hazmat's)
MiB = 1024 * 1024


class Pausable(Protocol):
    """What pausing needs of a session (sessions.Session is one)."""

    id: str
    language: str
    spec: Spec
    installed: list[str]  # Python's requirements installed in it, to install again on resume

    @property
    def trust(self) -> str: ...

    @property
    def fixed(self) -> Any: ...  # sessions.Fixed: its image and caller

    def agent_call(self, program: Program, mode: str) -> RunReport: ...

    def end(self, why: str, now: bool = False) -> None: ...


def save(session: Pausable, what: str) -> tuple[bytes, dict[str, Any]]:
    """The session's working directory as a tar archive made inside the sandbox, with (Python)
    its picklable variables in it; and the interpreter's report (`saved`, `lost`). The session
    goes on as it was: the agent removes what the save left in it. `what` ("paused",
    "forked") is said in the error if it fails."""
    cap = session.spec.tmpfs_mb * MiB  # the archive is written to /tmp, a tmpfs of this size
    program = Program(
        files={},
        want=(SAVE_FILE,),
        stdin=b"",
        max_file_bytes=cap,
        max_total_bytes=cap,
        own_bytes=cap,
    )
    report = session.agent_call(program, "save")
    archive = report.files.get(SAVE_FILE)
    if archive is None or report.exit_code != 0:
        why = "; ".join([*report.notes, report.stderr.decode("utf-8", "replace").strip()])
        raise InfraError(f"session {session.id} could not be {what}: {why or 'no archive'}")
    said = _report(report.stdout)
    return archive, {
        "saved": tuple(str(name) for name in said.get("saved", ())),
        "lost": {str(k): str(v) for k, v in dict(said.get("lost", {})).items()},
    }


def pause(session: Pausable, owner: str | None, keep: Callable[[Paused, bytes], None]) -> Paused:
    """Save the session, hand it to `keep` (the sandbox's store), then end it."""
    archive, said = save(session, "paused")
    fixed = session.fixed
    paused = Paused(
        id=session.id,
        language=session.language,
        trust=session.trust,
        runtime=session.spec.runtime.value,
        image=fixed.image,
        caller=fixed.caller,
        owner=owner,
        paused_at=time.time(),
        archive_bytes=len(archive),
        saved=said["saved"],
        lost=said["lost"],
        packages=tuple(session.installed),
    )
    keep(paused, archive)
    session.end("it was paused")
    return paused


def restore(session: Pausable, archive: bytes, lost: Mapping[str, str]) -> dict[str, Any]:
    """Unpack a saved working directory (`save`) into the new session's container and (Python)
    load its variables; which came back (`loaded`), and which did not, with `lost` (what the
    save could not keep) and why."""
    program = Program(files={}, want=(), stdin=archive, max_file_bytes=1)
    report = session.agent_call(program, "restore")
    if report.exit_code != 0:
        why = report.stderr.decode("utf-8", "replace").strip() or "; ".join(report.notes)
        raise InfraError(f"session {session.id} could not be restored: {why}")
    said = _report(report.stdout)
    return {
        "loaded": [str(name) for name in said.get("loaded", ())],
        "lost": {**lost, **{str(k): str(v) for k, v in dict(said.get("lost", {})).items()}},
    }


def with_lost_note(
    result: ExecutionResult, restored: Mapping[str, Any] | None, how: str = "paused"
) -> ExecutionResult:
    """`result`, with a note when the call failed on a name the pause or fork (`how`) could
    not keep (a Python `NameError` for a function defined in the session, say): which, and
    why. `restored` is the session's `resumed` or `forked`."""
    lost: Mapping[str, str] = (restored or {}).get("lost") or {}
    exception = result.exception
    if not lost or exception is None or exception.name not in ("NameError", "UnboundLocalError"):
        return result
    named = re.search(r"'([^']+)'", exception.value)
    if named is None or named.group(1) not in lost:
        return result
    name = named.group(1)
    note = (
        f"{name!r} was not kept when this session was {how} ({lost[name]}): run the code that "
        "defined it again"
    )
    return dataclasses.replace(result, notes=[*result.notes, note])


def _report(stdout: bytes) -> dict[str, Any]:
    """The interpreter's one-line JSON report (Python), or nothing (other languages). The
    program's code may have changed the interpreter, so nothing in it is believed beyond its
    shape: it only names the session's own variables."""
    for line in reversed(stdout[-65536:].splitlines()):
        try:
            data = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if isinstance(data, dict):
            return data
    return {}
