"""Sessions across hosts: with `hazmat serve --redis`, a session is opened on a worker placed
by load (the fewest sessions open, among the live workers for its language and runtime with a
free slot), in that worker's engine, and every later call of it goes to that worker
(worker_sessions.py carries them out). A call holds a slot of the worker while it runs, like a
run: when all are busy it is refused with `QuotaExceeded` (the service's 429), never queued.

A worker lost while a session lives on it (its process died: its catalogue entry now names
another process, or none) ends the session: its next call, or the call running then, raises
`SessionClosed` saying which worker was lost; a session paused before that resumes on any
worker (the paused sessions' shelf is the cluster's Redis). The service keeps only which
worker each of its sessions lives on and the session's last `info`; the worker's own book ends
sessions past their idle time, lifetime or CPU budget, which the service learns at the next
call (or, for `all`, when it looks).
"""

from __future__ import annotations

import base64
import contextlib
import threading
from collections.abc import Iterable, Mapping
from typing import Any, Unpack

import hazmat._exceptions as errors
from hazmat._exceptions import (
    HazmatError,
    InfraError,
    InputError,
    QuotaExceeded,
    SessionClosed,
    SessionNotFound,
    quoted,
)
from hazmat.cluster.dispatch import Dispatcher, Lost
from hazmat.cluster.keys import patiently, worker_key
from hazmat.cluster.placement import Placement
from hazmat.models import ExecutionRequest, ExecutionResult
from hazmat.options import RunOptions
from hazmat.packages.install import Installed
from hazmat.policy import parse_trust
from hazmat.sandbox import Sandbox
from hazmat.service.protocols import OpenSession, Sessions
from hazmat.service.wire import request_to_wire, result_from_wire
from hazmat.sessions import check_call_options
from hazmat.sessions.book import ENDED_KEPT
from hazmat.sessions.store import Paused
from hazmat.watch import OnOutput, Watch, as_watch

__all__ = ["ClusterSessions", "RemoteSession"]


class RemoteSession:
    """A session that lives on a worker: the same calls as `hazmat.Session`, each sent there."""

    def __init__(
        self, book: ClusterSessions, placed: Placement, info: dict[str, Any], fixed: dict[str, Any]
    ) -> None:
        self.id = str(info["id"])
        self.language = str(info["language"])
        self.worker = placed.worker
        self.epoch = placed.epoch
        self.owner: str | None = fixed.get("owner")
        self._book = book
        self._info = info
        self._fixed = fixed  # as asked when it opened: trust, runtime, image, caller
        self._ended: str | None = None

    @property
    def fixed(self) -> dict[str, Any]:
        """What it was asked for when it opened: trust, runtime, image, caller."""
        return {k: self._fixed.get(k) for k in ("trust", "runtime", "image", "caller")}

    @property
    def trust(self) -> str:
        return str(self._info["trust"])

    @property
    def ended(self) -> str | None:
        return self._ended

    def info(self) -> dict[str, Any]:
        return {**self._info, "worker": self.worker}

    def request(self, code: str | bytes, **options: Unpack[RunOptions]) -> ExecutionRequest:
        """A call's request, checked here as the worker will check it (`InputError`,
        `SessionClosed`)."""
        check_call_options(options)
        self.check_open()
        fixed: dict[str, Any] = {
            **self.fixed,
            "session": self.id,
            "network": [],
        }
        return self._book.sandbox.request(code, self.language, **{**options, **fixed})

    def execute(
        self, request: ExecutionRequest, *, on_output: OnOutput | Watch | None = None
    ) -> ExecutionResult:
        body = {"op": "run", "session": self.id, "request": request_to_wire(request)}
        answer = self._book.call(self, body, as_watch(on_output))
        return result_from_wire(answer["result"])

    def upload(self, files: Mapping[str, str | bytes]) -> None:
        if not files:
            raise InputError("upload: no files given")
        encoded = {
            name: base64.b64encode(data.encode() if isinstance(data, str) else data).decode()
            for name, data in files.items()
        }
        self._book.call(self, {"op": "upload", "session": self.id, "files_base64": encoded})

    def download(self, names: Iterable[str]) -> dict[str, bytes]:
        want = list(names)
        if not want:
            raise InputError("download: no file names given")
        answer = self._book.call(self, {"op": "download", "session": self.id, "names": want})
        return {name: base64.b64decode(data) for name, data in answer["files_base64"].items()}

    def install(self, packages: Iterable[str]) -> Installed:
        asked = list(packages) if not isinstance(packages, str | bytes) else packages
        answer = self._book.call(self, {"op": "install", "session": self.id, "packages": asked})
        return Installed.from_dict(answer["installed"])

    def pause(self, owner: str | None = None) -> Paused:
        body = {"op": "pause", "session": self.id, "owner": owner or self.owner}
        paused = Paused.from_dict(self._book.call(self, body)["paused"])
        self.end("it was paused")
        return paused

    def fork(self, n: int = 1) -> list[RemoteSession]:
        """`n` new sessions from this one's state, on its worker (where the state is)."""
        answer = self._book.call(self, {"op": "fork", "session": self.id, "n": n})
        return self._book.held(self, answer["forks"])

    def close(self) -> None:
        """End it on its worker; safe to call more than once, and on a session whose worker
        is gone (it has ended already: `ended` says why)."""
        if self._ended is None:
            with contextlib.suppress(SessionClosed):
                self._book.call(self, {"op": "close", "session": self.id})
            self.end("it was closed")

    def end(self, why: str) -> None:
        """Ended, as the worker said (or its loss): the book forgets it."""
        if self._ended is None:
            self._ended = why
            self._book.forget(self)

    def answered(self, info: Mapping[str, Any] | None) -> None:
        if info is not None:
            self._info = dict(info)

    def check_open(self) -> None:
        if self._ended is not None:
            raise SessionClosed(f"session {self.id} has ended: {self._ended}")


class ClusterSessions:
    """The sessions this service placed on the cluster's workers, by id."""

    def __init__(self, dispatcher: Dispatcher, sandbox: Sandbox) -> None:
        self.dispatcher = dispatcher
        self.sandbox = sandbox  # the service's: its policy, and its checks of a call
        self._open: dict[str, RemoteSession] = {}
        self._ended: dict[str, str] = {}
        self._lock = threading.Lock()

    def open(
        self,
        language: str,
        *,
        trust: str | None = None,
        runtime: str | None = None,
        image: str | None = None,
        caller: str | None = None,
        owner: str | None = None,
    ) -> RemoteSession:
        """A new session on the least loaded worker for it."""
        policy = self.sandbox.policy
        level = parse_trust(trust or policy.default_trust)
        where = runtime or policy.settings(level).runtime.value
        placed = self.dispatcher.placements.place_session(language, where)
        fixed = {"trust": trust, "runtime": runtime, "image": image, "caller": caller}
        body = {"op": "open", "language": language, **fixed, "owner": owner}
        return self._placed(placed, body, {**fixed, "owner": owner})

    def resume(self, session_id: str, owner: str | None) -> RemoteSession:
        """A paused session resumed on the least loaded worker for it."""
        paused = self.sandbox.session_store.info(session_id, owner)  # SessionNotFound here
        placed = self.dispatcher.placements.place_session(paused.language, paused.runtime)
        body = {"op": "resume", "session": session_id, "owner": owner}
        fixed = {
            "trust": paused.trust,
            "runtime": paused.runtime,
            "image": paused.image,
            "caller": paused.caller,
            "owner": owner,
        }
        return self._placed(placed, body, fixed)

    def get(self, session_id: str) -> RemoteSession:
        with self._lock:
            session = self._open.get(session_id)
            why = self._ended.get(session_id)
        if session is not None:
            return session
        if why is not None:
            raise SessionClosed(f"session {session_id} has ended: {why}")
        raise SessionNotFound(f"no open session {quoted(session_id)}")

    def all(self) -> list[RemoteSession]:
        """The open sessions, less those whose worker is gone (ended now, saying so)."""
        with self._lock:
            found = list(self._open.values())
        epochs: dict[str, str | None] = {}
        for session in found:
            if session.worker not in epochs:
                epochs[session.worker] = self._epoch(session.worker)
            if epochs[session.worker] != session.epoch:
                session.end(_lost_why(session.worker, "its process is gone"))
        return [s for s in found if s.ended is None]

    def forget(self, session: RemoteSession) -> None:
        with self._lock:
            self._open.pop(session.id, None)
            self._ended[session.id] = session.ended or "it ended"
            while len(self._ended) > ENDED_KEPT:
                del self._ended[next(iter(self._ended))]

    def call(
        self, session: RemoteSession, body: dict[str, Any], watch: Watch | None = None
    ) -> dict[str, Any]:
        """One call of `session` on its worker: its answer, or the error it met there raised
        here (`SessionClosed` if the worker is gone)."""
        session.check_open()
        placed = self.dispatcher.placements.slot_on(session.worker, session.epoch)
        if placed is None:
            session.end(_lost_why(session.worker, "its process is gone"))
            raise SessionClosed(f"session {session.id} has ended: {session.ended}")
        try:
            answer = self._answer(placed, body, watch)
        except SessionClosed as exc:  # the worker ended it (idle, lifetime, CPU, a timeout)
            session.end(str(exc).partition(" has ended: ")[2] or str(exc))
            raise
        except SessionNotFound:
            session.end(f"its worker {session.worker} no longer has it")
            raise SessionClosed(f"session {session.id} has ended: {session.ended}") from None
        except Lost as lost:
            session.end(_lost_why(session.worker, str(lost)))
            raise SessionClosed(f"session {session.id} has ended: {session.ended}") from None
        session.answered(answer.get("info"))
        return answer

    def held(self, source: RemoteSession, infos: list[dict[str, Any]]) -> list[RemoteSession]:
        """Sessions a call of `source` opened on its worker (a fork's), now in this book."""
        placed = Placement(source.worker, source.epoch)
        fixed = {**source.fixed, "owner": source.owner}
        forks = [RemoteSession(self, placed, info, fixed) for info in infos]
        with self._lock:
            self._open.update((session.id, session) for session in forks)
        return forks

    def _placed(
        self, placed: Placement, body: dict[str, Any], fixed: dict[str, Any]
    ) -> RemoteSession:
        try:
            answer = self._answer(placed, body)
        except Lost as lost:
            raise InfraError(f"the session could not be opened: {lost}") from None
        session = RemoteSession(self, placed, answer["info"], fixed)
        with self._lock:
            self._open[session.id] = session
        return session

    def _answer(
        self, placed: Placement, body: dict[str, Any], watch: Watch | None = None
    ) -> dict[str, Any]:
        try:
            answer = self.dispatcher.call(placed, body, watch)
        finally:
            if watch is not None:
                watch.flush()
        error = answer.get("error")
        if error is not None:
            raise _raised(error)
        return answer

    def _epoch(self, worker: str) -> str | None:
        found = patiently(lambda: self.dispatcher.redis.hget(worker_key(worker), "epoch"))
        return found.decode() if isinstance(found, bytes) else found


def _lost_why(worker: str, detail: str) -> str:
    return f"its worker {worker} was lost ({detail})"


def _raised(error: Mapping[str, Any]) -> HazmatError:
    """The hazmat error a worker's call met, as the same class here (InfraError for one this
    hazmat does not know)."""
    name, message = str(error.get("type")), str(error.get("message"))
    found = getattr(errors, name, None)
    if isinstance(found, type) and issubclass(found, QuotaExceeded):
        return found(message, float(error.get("retry_after_s") or 1.0))
    if isinstance(found, type) and issubclass(found, HazmatError):
        try:
            return found(message)
        except TypeError:  # a class with more to say than a message
            pass
    return InfraError(f"{name}: {message}")


# the protocols they implement (service/protocols.py), checked by mypy
_SESSIONS: type[Sessions] = ClusterSessions
_OPEN_SESSION: type[OpenSession] = RemoteSession
