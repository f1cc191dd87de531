"""Stopping a service nobody uses: the per-user local server (`hazmat serve --per-user`,
cli/local_server.py) ends after `pool.server_idle_s` without a request, so that a warm pool is
never kept for a user who has gone.

`Activity` wraps the ASGI app and counts the requests in flight; `IdleStop` looks at it every
few seconds from a thread of its own and, once no request has been in flight for the idle time
and no session is open (a session is work in progress, whatever its calls' pace), asks uvicorn
to stop (`should_exit`: the same graceful stop as SIGTERM).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

__all__ = ["Activity", "IdleStop"]


class Activity:
    """ASGI middleware: how long since the last request ended, 0 while one is in flight."""

    def __init__(self, app: Any, clock: Callable[[], float] = time.monotonic) -> None:
        self.app = app
        self._clock = clock
        self._lock = threading.Lock()
        self._active = 0
        self._last = clock()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":  # lifespan
            await self.app(scope, receive, send)
            return
        with self._lock:
            self._active += 1
        try:
            await self.app(scope, receive, send)
        finally:
            with self._lock:
                self._active -= 1
                self._last = self._clock()

    def idle_s(self) -> float:
        with self._lock:
            return 0.0 if self._active else self._clock() - self._last


class IdleStop:
    """Calls `stop()` once `activity` has been idle `idle_s` with `busy()` false."""

    def __init__(
        self,
        activity: Activity,
        idle_s: float,
        busy: Callable[[], bool],
        stop: Callable[[], None],
    ) -> None:
        self.activity = activity
        self.idle_s = idle_s
        self.busy = busy
        self.stop = stop
        self._ended = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="hazmat-idle", daemon=True)

    def __enter__(self) -> IdleStop:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._ended.set()
        self._thread.join(timeout=10)

    def due(self) -> bool:
        return self.activity.idle_s() >= self.idle_s and not self.busy()

    def _watch(self) -> None:
        every = min(5.0, max(0.1, self.idle_s / 4))
        while not self._ended.wait(every):
            if self.due():
                self.stop()
                return
