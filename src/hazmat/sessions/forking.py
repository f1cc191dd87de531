"""Forking a session: n new sessions that start from the source's state at that moment, for
tree search and reinforcement-learning rollouts.

The source's agent archives its working directory inside the sandbox, Python's interpreter
first pickling what it can of its variables into it: the same save as a pause (pausing.py), but
the source goes on, its variables and files as they were. Each fork is a new session: a fresh
hardened container opened as any other (the source's language, trust, runtime, image and
caller; the book's `max_open` and a service's tenant quotas count it), the archive unpacked
into its working directory as its program's uid, the variables loaded each on its own, and the
source's Python packages installed again. Nothing else of the source's container is copied:
its /tmp, processes, open files and sockets are not. The forks are opened side by side, at
most `FORKS_AT_ONCE` at a time; if one fails, those already open are closed and the error is
raised. The audit log records the fork (the archive by digest, the new sessions' ids).

    rollouts = session.fork(4)
    rollouts[0].forked                 # {'from': 's-...', 'loaded': ['frame'], 'lost': {...}}
"""

from __future__ import annotations

import concurrent.futures
import hashlib
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from hazmat._exceptions import HazmatError, InputError, quoted
from hazmat.sessions.pausing import Pausable, restore, save

if TYPE_CHECKING:
    from hazmat.audit.run_records import RunRecorder

__all__ = ["FORKS_AT_ONCE", "Forkable", "check_count", "fork", "reinstall"]

FORKS_AT_ONCE = 4  # containers started side by side (the engine serialises much of a start)


class Forkable(Pausable, Protocol):
    """What forking needs of a session (sessions.Session is one), besides what a pause does."""

    owner: str | None
    forked: dict[str, Any] | None

    def install(self, packages: Iterable[str]) -> object: ...


S = TypeVar("S", bound=Forkable)


def check_count(n: object, most: int) -> int:
    """`n` if it is a whole number of forks from 1 to `most` (the policy's
    `sessions.max_open`), else `InputError` saying so."""
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= most:
        raise InputError(
            f"n must be a whole number of sessions from 1 to {most} (sessions.max_open), "
            f"got {quoted(n)}"
        )
    return n


def fork(
    source: Forkable,
    n: int,
    open_one: Callable[[Any], S],  # a sessions.Fixed: the source's
    recorder: RunRecorder,
    most: int,
) -> list[S]:
    """`n` new sessions, each opened by `open_one` and given the source's working directory
    and (Python) variables; the source goes on."""
    check_count(n, most)
    archive, said = save(source, "forked")

    def one() -> S:
        session = open_one(source.fixed)
        session.owner = source.owner
        try:
            again = reinstall(session, source.installed)  # before variables of their types
            loaded = restore(session, archive, said["lost"])
            session.forked = {"from": source.id, "archive_bytes": len(archive), **loaded, **again}
        except BaseException:
            session.end("its fork failed")
            raise
        return session

    forks = _side_by_side(one, n)
    recorder.session_event(
        "forked",
        {
            "session": source.id,
            "into": [session.id for session in forks],
            "archive": {"bytes": len(archive), "sha256": hashlib.sha256(archive).hexdigest()},
            "saved": list(said["saved"]),
            "lost": dict(said["lost"]),
        },
    )
    return forks


def reinstall(session: Forkable, packages: Sequence[str]) -> dict[str, Any]:
    """Install a resumed or forked session's Python packages again (from the host's cache,
    where it still has them); what the session's `resumed` or `forked` says of them. The
    session does not fail for them: it opens, and says which could not be installed and why."""
    if not packages:
        return {}
    try:
        session.install(packages)
    except HazmatError as exc:
        return {"packages": [], "packages_lost": {"*": str(exc)}}
    return {"packages": list(packages)}


def _side_by_side(one: Callable[[], S], n: int) -> list[S]:
    """`one()` called `n` times, at most `FORKS_AT_ONCE` at a time; if any raises, the
    sessions the others opened are closed and the first error is raised."""
    with concurrent.futures.ThreadPoolExecutor(min(n, FORKS_AT_ONCE), "hazmat-fork") as pool:
        futures = [pool.submit(one) for _ in range(n)]
        concurrent.futures.wait(futures)
    errors = [error for error in (f.exception() for f in futures) if error is not None]
    if errors:
        for future in futures:
            if future.exception() is None:
                future.result().end("another fork of its source failed")
        raise errors[0]
    return [future.result() for future in futures]
