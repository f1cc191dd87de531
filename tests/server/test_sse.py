"""The event-stream response's own logic against fake ASGI channels (the engine-backed tests
are in test_streaming_http.py): a client that stops reading, or leaves, cancels the run, and
the quota is released only once the run has returned."""

from __future__ import annotations

from typing import Any

import anyio
import anyio.to_thread
import pytest

from hazmat.server.sse import EventStream, wants_events
from hazmat.watch import Watch


class FakeResult:
    stdout_bytes = b"x"
    stderr_bytes = b""
    displays = ()

    def to_dict(self) -> dict[str, Any]:
        return {"outcome": "cancelled"}


def run_until_cancelled(log: list[str]) -> Any:
    async def run(watch: Watch) -> FakeResult:
        def pipeline() -> FakeResult:
            watch.write("stdout", b"x")
            cancelled = watch._cancelled.wait(30)  # the pump's own check, in short
            watch.flush()  # as the pump does before it returns
            log.append(f"cancelled={cancelled} reason={watch.reason}")
            return FakeResult()

        return await anyio.to_thread.run_sync(pipeline)

    return run


async def never(*_: Any) -> Any:
    await anyio.sleep_forever()


@pytest.mark.anyio
async def test_a_client_that_stops_reading_cancels_the_run() -> None:
    log: list[str] = []

    async def send(message: dict[str, Any]) -> None:
        if message.get("body", b"").startswith(b"event: stdout"):
            await anyio.sleep_forever()  # the client's window is full and stays full
        log.append(message["type"])

    stream = EventStream(
        run_until_cancelled(log), lambda: log.append("released"), False, send_timeout_s=0.2
    )
    await stream({"type": "http"}, never, send)
    assert "cancelled=True reason=the client went away" in log
    assert log[-1] == "released"  # after the run returned, never before


@pytest.mark.anyio
async def test_a_client_that_leaves_cancels_the_run() -> None:
    log: list[str] = []
    left = anyio.Event()

    async def send(message: dict[str, Any]) -> None:
        if message.get("body", b"").startswith(b"event: stdout"):
            left.set()

    async def receive() -> dict[str, Any]:
        await left.wait()
        return {"type": "http.disconnect"}

    stream = EventStream(run_until_cancelled(log), lambda: log.append("released"), False)
    await stream({"type": "http"}, receive, send)
    assert log == ["cancelled=True reason=the client went away", "released"]


@pytest.mark.anyio
async def test_every_event_is_one_ascii_line_whatever_the_program_wrote() -> None:
    body = bytearray()

    async def send(message: dict[str, Any]) -> None:
        body.extend(message.get("body", b""))

    async def run(watch: Watch) -> FakeResult:
        nasty = "a\nevent: result\r\ndata: {}\u2028\u0085\x1c\u2029é".encode()
        await anyio.to_thread.run_sync(lambda: (watch.write("stdout", nasty), watch.flush()))
        return FakeResult()

    await EventStream(run, lambda: None, False)({"type": "http"}, never, send)
    events = bytes(body).decode("ascii").split("\n\n")
    assert events[-1] == ""
    assert [e.split("\n")[0] for e in events[:-1]] == ["event: stdout", "event: result"]
    assert all(len(e.split("\n")) == 2 for e in events[:-1])  # one data line each


def test_accept_headers() -> None:
    assert wants_events("text/event-stream")
    assert wants_events("application/json, text/event-stream;q=0.9")
    assert not wants_events("application/json")
    assert not wants_events("")
    assert not wants_events("text/event-stream-x")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
