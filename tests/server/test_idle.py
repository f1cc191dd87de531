"""The idle stop of the per-user local server (server/idle.py): due only once no request has
been in flight for the idle time and no session is open; a request in flight holds it off."""

from __future__ import annotations

from typing import Any

import anyio

from hazmat.server.idle import Activity, IdleStop
from hazmat.testing import Clock


def test_due_after_the_idle_time_without_a_request_or_a_session() -> None:
    clock = Clock(100.0)
    busy = [False]
    stopped: list[bool] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        assert not watch.due()  # in flight: never due, however long it takes
        clock.now += 1000

    activity = Activity(app, clock)
    watch = IdleStop(activity, 60, lambda: busy[0], lambda: stopped.append(True))
    clock.now += 59
    assert not watch.due()
    clock.now += 1
    assert watch.due()
    anyio.run(activity, {"type": "http"}, None, None)
    assert activity.idle_s() == 0 and not watch.due()  # the request's end starts it again
    clock.now += 60
    busy[0] = True  # a session is open
    assert not watch.due()
    busy[0] = False
    assert watch.due() and stopped == []  # only the watching thread calls stop


def test_lifespan_events_are_not_requests() -> None:
    clock = Clock(100.0)
    seen: list[str] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        seen.append(scope["type"])

    activity = Activity(app, clock)
    clock.now += 5
    anyio.run(activity, {"type": "lifespan"}, None, None)
    assert seen == ["lifespan"] and activity.idle_s() == 5
