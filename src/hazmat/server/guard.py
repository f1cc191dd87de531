"""What `hazmat serve` does to protect itself from its clients' connections (docs/api.md,
"Connections"): a deadline for each request's head, one for its body, a cap on connections and
on idle keep-alive.

uvicorn has the last two (`limit_concurrency`, `timeout_keep_alive`) but no deadline for a
request's head: a client that trickles its headers a byte at a time holds a connection for
ever. `guarded_h11` makes uvicorn's HTTP/1.1 protocol with that deadline: a connection whose
request head is not complete `head_timeout_s` after it opened (or after its last response) is
closed, and so is one answered before its body had come whole (a 401, a 404), whose client
could otherwise trickle the rest for ever; `CloseUnanswered` tells the client so in that
answer (`Connection: close`), so that a keep-alive client does not send its next request on a
connection about to close. The body's deadline is kept by the app while it reads the body
(http.py).
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Message, Receive, Scope, Send
    from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["CloseUnread", "ConnectionLimits", "guarded_h11"]


@dataclass(frozen=True)
class ConnectionLimits:
    """The service's limits on connections, with `hazmat serve`'s defaults."""

    max_connections: int = 256  # connections and requests in progress; over it: 503
    head_timeout_s: float = 10.0  # from connecting (or the last response) to a whole head
    body_timeout_s: float = 30.0  # to read a whole request body
    keep_alive_s: int = 5  # an idle kept-alive connection is closed after this

    def __post_init__(self) -> None:
        for name in ("max_connections", "head_timeout_s", "body_timeout_s", "keep_alive_s"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be positive, got {value!r}")


class CloseUnread:
    """ASGI middleware: an answer that starts before the request's body was read whole (a 401,
    a 404, a 410 from a route that checks before it reads) says `Connection: close`. The
    protocol closes such a connection after the answer (`guarded_h11`); without the header, a
    keep-alive client would send its next request into that close and be reset."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not _has_body(scope):
            await self.app(scope, receive, send)
            return
        read_whole = False

        async def receiving() -> Message:
            nonlocal read_whole
            message = await receive()
            if message["type"] != "http.request" or not message.get("more_body", False):
                read_whole = True
            return message

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start" and not read_whole:
                headers = [(k, v) for k, v in message.get("headers", []) if k != b"connection"]
                message = {**message, "headers": [*headers, (b"connection", b"close")]}
            await send(message)

        await self.app(scope, receiving, sending)


def _has_body(scope: Scope) -> bool:
    for name, value in scope.get("headers", []):
        if name == b"content-length":
            return value.strip() not in (b"0", b"")
        if name == b"transfer-encoding":
            return True
    return False


def guarded_h11(head_timeout_s: float) -> type[H11Protocol]:
    """uvicorn's HTTP/1.1 protocol with a deadline for each request head (its `http=`). Made
    here, not at import, so that the CLI does not load uvicorn to parse its arguments."""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class GuardedH11(H11Protocol):
        _head_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._wait_for_head()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self.conn.their_state is not h11.IDLE:  # a whole head came: the app has it
                self._stop_waiting()

        def on_response_complete(self) -> None:
            unread = self.conn.their_state is h11.SEND_BODY  # answered before its body came
            super().on_response_complete()
            if self.transport.is_closing():
                return
            if unread:  # the rest of that body would keep the connection, bytes at a time
                self.transport.close()
            elif self.conn.their_state is h11.IDLE:
                self._wait_for_head()  # kept alive: its next head has a deadline too

        def connection_lost(self, exc: Exception | None) -> None:
            self._stop_waiting()
            super().connection_lost(exc)

        def _wait_for_head(self) -> None:
            self._stop_waiting()
            self._head_timer = self.loop.call_later(head_timeout_s, self._head_late)

        def _stop_waiting(self) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
                self._head_timer = None

        def _head_late(self) -> None:
            self._head_timer = None
            if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
                self.transport.close()

    return GuardedH11
