"""A worker's side of the sessions the cluster places on it (cluster/remote_sessions.py is the
service's): each call arrives as a message on the worker's queue, like a run, and is carried
out on the worker's own `Sandbox` (its engine, its session book, its audit log). The answer is
one JSON object: what the call returns and the session's `info` as it is now, or the hazmat
error the call met (`error`: its class's name and message), which the service raises again
as the same class. The worker's book ends sessions past their idle time, lifetime or CPU
budget as a service's own book does; a paused session's sealed parts go to the cluster's Redis
(the worker's session store is on the same shelf as the services'), so any worker can resume it.
"""

from __future__ import annotations

import base64
import contextlib
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from hazmat._exceptions import HazmatError, InputError, QuotaExceeded, quoted
from hazmat.options import CALL_OPTIONS
from hazmat.sandbox import Sandbox
from hazmat.service.wire import request_from_wire, result_to_wire
from hazmat.sessions import Session
from hazmat.watch import Watch

__all__ = ["OPS", "SessionCalls"]

OPS = ("open", "resume", "run", "upload", "download", "install", "pause", "fork", "close")


class SessionCalls:
    """The session calls of one worker, on its sandbox."""

    def __init__(self, sandbox: Sandbox) -> None:
        self.sandbox = sandbox
        self._lock = threading.Lock()
        self._opening = 0
        self._ops: dict[str, Callable[[Mapping[str, Any], Watch], dict[str, Any]]] = {
            "open": self._open,
            "resume": self._resume,
            "run": self._run,
            "upload": self._upload,
            "download": self._download,
            "install": self._install,
            "pause": self._pause,
            "fork": self._fork,
            "close": self._close,
        }

    def answer(self, body: Mapping[str, Any], watch: Watch) -> dict[str, Any]:
        """Carry out one call; its answer, or the hazmat error it met as `{"error": ...}`."""
        op = body.get("op")
        do = self._ops.get(str(op))
        try:
            if do is None:
                raise InputError(f"unknown session call {quoted(op)} (calls: {', '.join(OPS)})")
            return do(body, watch)
        except HazmatError as exc:
            error: dict[str, Any] = {"type": type(exc).__name__, "message": str(exc)}
            if isinstance(exc, QuotaExceeded):
                error["retry_after_s"] = exc.retry_after_s
            return {"error": error}

    @contextlib.contextmanager
    def counted(self) -> Iterator[int]:
        """The sessions open here and those opening (an open or resume call taken, not done),
        held still while the caller says so (the heartbeat, which writes the count: a call
        taken meanwhile, whose `taken` raises the count in Redis, waits for it)."""
        with self._lock:
            yield len(self.sandbox.sessions.all()) + self._opening

    @contextlib.contextmanager
    def opening(self, body: Mapping[str, Any], taken: Callable[[], None]) -> Iterator[None]:
        """Around a call taken: if it opens or resumes a session, it counts as opening here
        while it runs, and `taken()` (which moves it from placed to opening in Redis) is
        called in one step with that."""
        opens = body.get("op") in ("open", "resume")
        if opens:
            with self._lock:
                self._opening += 1
                taken()
        try:
            yield
        finally:
            if opens:
                with self._lock:
                    self._opening -= 1

    def _session(self, body: Mapping[str, Any]) -> Session:
        return self.sandbox.sessions.get(str(body.get("session")))

    def _open(self, body: Mapping[str, Any], watch: Watch) -> dict[str, Any]:
        session = self.sandbox.session(
            str(body["language"]),
            trust=body.get("trust"),
            runtime=body.get("runtime"),
            image=body.get("image"),
            caller=body.get("caller"),
        )
        session.owner = body.get("owner")  # an idle pause (sessions.on_idle) is this tenant's
        return {"info": session.info()}

    def _resume(self, body: Mapping[str, Any], watch: Watch) -> dict[str, Any]:
        owner = body.get("owner")
        session = self.sandbox.resume_session(str(body["session"]), owner=owner)
        session.owner = owner
        return {"info": session.info()}

    def _run(self, body: Mapping[str, Any], watch: Watch) -> dict[str, Any]:
        session = self._session(body)
        code, _, options = request_from_wire(body["request"])
        call = {name: value for name, value in options.items() if name in CALL_OPTIONS}
        result = session.execute(session.request(code, **call), on_output=watch)
        return {"result": result_to_wire(result, exact=True), "info": session.info()}

    def _upload(self, body: Mapping[str, Any], watch: Watch) -> dict[str, Any]:
        session = self._session(body)
        files = {name: base64.b64decode(data) for name, data in body["files_base64"].items()}
        session.upload(files)
        return {"info": session.info()}

    def _download(self, body: Mapping[str, Any], watch: Watch) -> dict[str, Any]:
        session = self._session(body)
        got = session.download(list(body["names"]))
        files = {name: base64.b64encode(data).decode("ascii") for name, data in got.items()}
        return {"files_base64": files, "info": session.info()}

    def _install(self, body: Mapping[str, Any], watch: Watch) -> dict[str, Any]:
        session = self._session(body)
        done = session.install(body.get("packages"))  # type: ignore[arg-type]  # checked there
        return {"installed": done.to_dict(), "info": session.info()}

    def _pause(self, body: Mapping[str, Any], watch: Watch) -> dict[str, Any]:
        paused = self._session(body).pause(owner=body.get("owner"))
        return {"paused": paused.as_dict()}

    def _fork(self, body: Mapping[str, Any], watch: Watch) -> dict[str, Any]:
        session = self._session(body)
        forks = session.fork(body.get("n"))  # type: ignore[arg-type]  # checked there
        return {"forks": [fork.info() for fork in forks], "info": session.info()}

    def _close(self, body: Mapping[str, Any], watch: Watch) -> dict[str, Any]:
        session = self._session(body)
        session.close()
        return {"ended": session.ended}
