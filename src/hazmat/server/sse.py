"""A run answered as server-sent events: its output while it runs, then its result.

A request to `POST /v1/runs` (or a session's `/runs`) with `Accept: text/event-stream` gets
a `text/event-stream` response instead of one JSON body (docs/api.md, "Streaming"). The request
is checked and admitted by the tenant's quotas first, so bad input and 429 are plain JSON
errors; from the first byte of the stream on, everything is an event:

    event: stdout            data: {"text": "..."}   (or {"base64": "..."} with ?output=base64)
    event: stderr            data: the same, for stderr
    event: display           data: {"index": n, "data": {MIME type: data}}   one per display
                             (a Python program's charts and tables, binary data as base64),
                             in order, once the run has ended: they are collected with it
    event: result            data: the same JSON as a plain request's body; the last event
    event: error             data: {"error": {"type", "message"}, "status"}; the last event

The text of the chunks is decoded incrementally (a character split between two chunks is
whole in the second), so joined they equal the result's `stdout` and `stderr` exactly (except
past the output cap: hazmat/watch.py). A comment line is sent after 15 s without an event, so
that proxies keep the connection. A client that goes away, or takes no bytes for 60 s (it
stopped reading), cancels the run: its container is killed and the run is recorded with
outcome `cancelled`. The response ends only once the
pipeline has returned (the run recorded, the quota released), so a server shutting down
gracefully waits for streamed runs as for plain ones; this is why it is not sse-starlette's
response, which cuts its streams when the server is told to stop.
"""

from __future__ import annotations

import base64
import codecs
import json
import math
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import anyio.abc
import anyio.from_thread
import anyio.lowlevel
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from hazmat._exceptions import HazmatError
from hazmat.displays import bundle_to_json
from hazmat.models import ExecutionResult
from hazmat.service.wire import result_to_wire
from hazmat.watch import Watch

__all__ = ["GONE", "EventStream", "OutputStream", "Writer", "wants_events"]

KEEPALIVE_S = 15.0
SEND_TIMEOUT_S = 60.0  # a client that takes no bytes for this long is treated as gone
GONE = "the client went away"


def wants_events(accept: str) -> bool:
    """Whether an Accept header asks for server-sent events."""
    return any(part.split(";")[0].strip() == "text/event-stream" for part in accept.split(","))


class OutputStream(Response):
    """Runs `run(watch)` and relays what the watch sees, then the result (or the
    `HazmatError` it raised), in a body of a subclass's own kind (`_relay`): events here
    (`EventStream`), E2B's NDJSON (server/protocols/e2b_interpreter.py). `release` (the
    quota's admission) is called once the run has returned; a client that goes away cancels
    the run."""

    media_type = "application/octet-stream"

    def __init__(
        self,
        run: Callable[[Watch], Awaitable[ExecutionResult]],
        release: Callable[[], object],
        send_timeout_s: float = SEND_TIMEOUT_S,
    ) -> None:
        super().__init__(
            status_code=200,
            headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
            media_type=self.media_type,
        )
        # a body of unknown length: no Content-Length (the server sends it chunked)
        self.raw_headers = [(k, v) for k, v in self.raw_headers if k != b"content-length"]
        self.run = run
        self.release = release
        self.send_timeout_s = send_timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        sender, events = anyio.create_memory_object_stream[tuple[str, Any]](math.inf)

        loop = anyio.lowlevel.current_token()

        def on_output(stream: str, data: bytes) -> None:  # on the watch's thread
            anyio.from_thread.run_sync(sender.send_nowait, (stream, data), token=loop)

        watch = Watch(on_output)

        async def run() -> None:
            with sender:
                try:
                    result = await self.run(watch)
                except HazmatError as exc:
                    await sender.send(("error", exc))
                else:
                    await sender.send(("result", result))

        async def listen() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            watch.cancel(GONE)

        try:
            async with anyio.create_task_group() as outer:
                outer.start_soon(listen)
                async with anyio.create_task_group() as inner:
                    inner.start_soon(run)
                    await self._relay(events, send, watch)
                outer.cancel_scope.cancel()  # the run has returned: stop listening
        finally:
            self.release()

    async def _relay(
        self, events: anyio.abc.ObjectReceiveStream[tuple[str, Any]], send: Send, watch: Watch
    ) -> None:
        """Send what `events` brings (`stdout`, `stderr`: bytes; `retry`; last `result` or
        `error`) to the client; if it is gone, cancel the run (`watch.cancel(GONE)`) and
        drain."""
        raise NotImplementedError


class EventStream(OutputStream):
    """A run as server-sent events (the module's docstring)."""

    media_type = "text/event-stream"

    def __init__(
        self,
        run: Callable[[Watch], Awaitable[ExecutionResult]],
        release: Callable[[], object],
        exact: bool,
        send_timeout_s: float = SEND_TIMEOUT_S,
    ) -> None:
        super().__init__(run, release, send_timeout_s)
        self.exact = exact

    async def _relay(
        self, events: anyio.abc.ObjectReceiveStream[tuple[str, Any]], send: Send, watch: Watch
    ) -> None:
        """Send every event to the client; if it is gone, cancel the run and drain."""
        writer = Writer(send, self.send_timeout_s)
        await writer.start(self.raw_headers)
        decoders = {name: _decoder() for name in _STREAMS}
        async with events:
            while True:
                with anyio.move_on_after(KEEPALIVE_S) as idle:
                    try:
                        kind, value = await events.receive()
                    except anyio.EndOfStream:
                        break
                if idle.cancelled_caught:
                    await writer.write(b": still running\n\n")
                elif kind in _STREAMS:
                    await writer.event(kind, self._chunk(decoders[kind], value, final=False))
                elif kind == "retry":  # the cluster starts the run again (cluster/dispatch.py)
                    decoders = {name: _decoder() for name in _STREAMS}
                    await writer.event(kind, json.loads(value))
                else:
                    for name, decoder in decoders.items():  # a split character at the end
                        tail = self._chunk(decoder, b"", final=True)
                        if tail.get("text"):
                            await writer.event(name, tail)
                    for index, bundle in enumerate(value.displays if kind == "result" else ()):
                        await writer.event(
                            "display", {"index": index, "data": bundle_to_json(bundle)}
                        )
                    await writer.event(kind, self._final(kind, value))
                if writer.gone:
                    watch.cancel(GONE)
            await writer.close()

    def _chunk(
        self, decoder: codecs.IncrementalDecoder, data: bytes, final: bool
    ) -> dict[str, str]:
        if self.exact:
            return {"base64": base64.b64encode(data).decode("ascii")} if data else {}
        return {"text": decoder.decode(data, final)}

    def _final(self, kind: str, value: Any) -> dict[str, Any]:
        if kind == "result":
            return result_to_wire(value, self.exact)
        error = {"type": type(value).__name__, "message": str(value)}
        return {"error": error, "status": value.http_status}


_STREAMS = ("stdout", "stderr")


def _decoder() -> codecs.IncrementalDecoder:
    return codecs.getincrementaldecoder("utf-8")("replace")


class Writer:
    """The response's body messages; after the client has gone (a send failed, or took no
    bytes for `timeout_s`), writes are dropped."""

    def __init__(self, send: Send, timeout_s: float) -> None:
        self.send = send
        self.timeout_s = timeout_s
        self.gone = False

    async def start(self, headers: list[tuple[bytes, bytes]]) -> None:
        await self._send({"type": "http.response.start", "status": 200, "headers": headers})

    async def event(self, name: str, data: dict[str, Any]) -> None:
        if data:
            # ASCII only: no character in the data that any client's line splitting (U+2028,
            # U+0085, ...) could take for the end of the line, and so of the event
            line = json.dumps(data, ensure_ascii=True, separators=(",", ":"))
            await self.write(f"event: {name}\ndata: {line}\n\n".encode())

    async def write(self, body: bytes) -> None:
        await self._send({"type": "http.response.body", "body": body, "more_body": True})

    async def close(self) -> None:
        await self._send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _send(self, message: dict[str, Any]) -> None:
        if self.gone:
            return
        try:
            with anyio.move_on_after(self.timeout_s) as stalled:
                await self.send(message)
        except OSError:
            self.gone = True
        if stalled.cancelled_caught:
            self.gone = True
