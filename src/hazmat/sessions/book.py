"""A sandbox's book of open sessions (sessions/): at most the policy's `max_open`, found by
id, and a janitor thread that ends those past their idle time, lifetime or CPU budget. An id
that has ended is remembered for a while, so that using it says why it ended."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Generic, Protocol, TypeVar

from hazmat._exceptions import QuotaExceeded, SessionClosed, SessionNotFound, quoted
from hazmat.policy import SessionSettings

__all__ = ["SessionBook"]

ENDED_KEPT = 1000  # how many ended sessions' reasons are kept, for a clear error
SLOT_RETRY_S = 5.0  # Retry-After for an open refused for want of room: sessions end by calls


class Entry(Protocol):
    """What the book needs of a session (sessions/)."""

    @property
    def id(self) -> str: ...

    @property
    def ended(self) -> str | None: ...

    @property
    def expires_at(self) -> float: ...

    def over_cpu(self) -> bool: ...

    def busy(self) -> bool: ...

    def expire(self) -> None: ...

    def end(self, why: str, now: bool = False) -> None: ...


S = TypeVar("S", bound=Entry)


class SessionBook(Generic[S]):
    """A sandbox's open sessions, by id: at most `max_open`; a janitor thread ends those past
    their idle time, lifetime or CPU budget."""

    def __init__(self, settings: SessionSettings) -> None:
        self.settings = settings
        self._open: dict[str, S] = {}
        self._ended: OrderedDict[str, str] = OrderedDict()  # recent ids -> why they ended
        self._lock = threading.Lock()
        self._sweeping = threading.Lock()  # one sweep at a time (the janitor's, a caller's)
        self._opening = 0  # places taken by sessions whose container is starting
        self._stop = threading.Event()
        self._janitor: threading.Thread | None = None

    @contextmanager
    def slot(self) -> Iterator[Callable[[S], None]]:
        """A place for one more session, taken at once (a session being opened counts, so
        parallel opens can never pass `max_open` together) or `QuotaExceeded`; the function it
        yields enters the session into the book. Left without it, the place is given back."""
        with self._lock:
            if len(self._open) + self._opening >= self.settings.max_open:
                raise QuotaExceeded(
                    f"{len(self._open) + self._opening} sessions are open or opening, the "
                    f"policy's most (sessions.max_open = {self.settings.max_open})",
                    retry_after_s=SLOT_RETRY_S,
                )
            self._opening += 1
        entered = False

        def enter(session: S) -> None:
            nonlocal entered
            with self._lock:
                self._opening -= 1
                entered = True
                self._open[session.id] = session
                if self._janitor is None:
                    self._janitor = threading.Thread(
                        target=self._sweep_loop, name="hazmat-sessions", daemon=True
                    )
                    self._janitor.start()

        try:
            yield enter
        finally:
            if not entered:
                with self._lock:
                    self._opening -= 1

    def get(self, session_id: str) -> S:
        with self._lock:
            session = self._open.get(session_id)
        if session is not None:
            return session
        with self._lock:
            why = self._ended.get(session_id)
        if why is not None:
            raise SessionClosed(f"session {session_id} has ended: {why}")
        raise SessionNotFound(f"no open session {quoted(session_id)}")

    def all(self) -> list[S]:
        with self._lock:
            return list(self._open.values())

    def forget(self, session: S) -> None:
        with self._lock:
            self._open.pop(session.id, None)
            self._ended[session.id] = session.ended or "it ended"
            while len(self._ended) > ENDED_KEPT:
                self._ended.popitem(last=False)

    def sweep(self) -> list[str]:
        """End every session past its idle time, lifetime or CPU budget; their ids. One sweep
        runs at a time: a caller's waits for the janitor's, so when it returns, what either
        ended is ended and out of the book (an expired session the janitor was removing looked
        busy to a second sweep, which skipped it)."""
        with self._sweeping:
            return self._sweep()

    def _sweep(self) -> list[str]:
        ended = []
        now = time.time()
        for session in self.all():
            if session.over_cpu():
                session.end(f"it used its CPU budget ({self.settings.cpu_s:g} s)", now=True)
            elif now >= session.expires_at and not session.busy():
                session.expire()  # ended, or (idle, sessions.on_idle: pause) paused
            else:
                continue
            ended.append(session.id)
        return ended

    def _sweep_loop(self) -> None:
        while not self._stop.wait(1.0):
            self.sweep()

    def close(self) -> None:
        """End every open session (the sandbox is closing)."""
        self._stop.set()
        for session in self.all():
            session.end("its sandbox closed")
        if self._janitor is not None:
            self._janitor.join(timeout=5)
