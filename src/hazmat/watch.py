"""Output as it comes: a `Watch` gets a run's stdout and stderr while it runs, and can stop it.

`Sandbox.run(..., on_output=fn)` (and `execute`, and a session's `run`) takes a function
called as `fn(stream, data)` with `stream` "stdout" or "stderr" and `data` the bytes just
written, or a `Watch`, which can also `cancel()` the run from any thread: the container is
killed within about 0.1 s and the result's outcome is `cancelled`. The function is called on
a thread of the watch's own, in the order the bytes arrived, so a slow function never holds up
the host's reading of the container or its limits (the run still ends at its time limit); the
run's result comes back once every chunk has been handed over. If the function raises, the run
is cancelled the same way and the result carries a note saying so. Once a run is cancelled,
nothing more of its output is handed over. Use one watch per run: a cancelled watch cancels
any run it is given at once.

A watch may also `feed` the program: a file descriptor (the read end of a pipe) whose bytes go
to the program's stdin as they come, after the job's own stdin, until it reaches its end, which
closes the program's stdin (an interactor's output to a submission, grade/interaction.py). The
run does not close it. `started` is set once the program has its go (after its build, if any),
or once the run ends without it; `ended` once the run's output has all been handed over. A
`gate` holds the program's start (its go, and its time) until it is set; `ready` says the
program waits there, built and holding its core (an interactive test's two programs start
together, grade/interaction.py).

What a watch sees is exactly what the result will hold: never a byte of the agent's markers
(the tail of a stream that could be the start of one is held back until the next bytes show
that it is not, or the run ends), never the output files' section, and at most the output cap
in all. Only where a run goes over its cap can the two differ: the result keeps the first
bytes of stderr in preference to stdout, while the watch saw the bytes in the order they came.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable

__all__ = ["OnOutput", "Tap", "Watch", "as_watch"]

log = logging.getLogger(__name__)

OnOutput = Callable[[str, bytes], None]
STREAMS = {1: "stdout", 2: "stderr"}


class Watch:
    """A run's output as it comes (`on_output(stream, data)`), and `cancel()` to stop it."""

    def __init__(
        self,
        on_output: OnOutput | None = None,
        feed: int | None = None,
        gate: threading.Event | None = None,
    ) -> None:
        self.on_output = on_output
        self.feed = feed  # a file descriptor whose bytes go on to the program's stdin
        # with a gate, the program's start (its go, its time) waits until the gate is set; `ready`
        # says it is waiting there (built, its core held)
        self.gate = gate
        self.ready = threading.Event()
        self.started = threading.Event()  # the program has its go (or the run is over)
        self.ended = threading.Event()  # the run's output is all handed over
        self._cancelled = threading.Event()
        self.reason: str | None = None  # why the run was cancelled, once it was
        self._queue: queue.SimpleQueue[tuple[str, bytes] | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None

    def cancel(self, reason: str = "the caller cancelled it") -> None:
        """Stop the run (from any thread); idempotent, the first reason is kept."""
        if not self._cancelled.is_set():
            self.reason = reason
            self._cancelled.set()

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    def write(self, stream: str, data: bytes) -> None:
        """Queue `data` for `on_output` (the pump's side: never blocks)."""
        if self.on_output is None or self.cancelled:
            return
        if self._thread is None:
            self._thread = threading.Thread(target=self._deliver, name="hazmat-watch", daemon=True)
            self._thread.start()
        self._queue.put((stream, data))

    def flush(self) -> None:
        """Wait until everything written has been handed over (the run has ended)."""
        thread, self._thread = self._thread, None
        if thread is not None:
            self._queue.put(None)
            thread.join()

    def _deliver(self) -> None:
        while (item := self._queue.get()) is not None:
            if self.cancelled or self.on_output is None:
                continue  # after a cancel, nothing more is handed over
            try:
                self.on_output(*item)
            except Exception as exc:
                log.debug("on_output raised; cancelling the run", exc_info=True)
                self.cancel(f"on_output raised {type(exc).__name__}: {exc}")


def as_watch(on_output: OnOutput | Watch | None) -> Watch | None:
    """A `Watch` for what the caller gave: a function, a watch, or nothing."""
    if on_output is None or isinstance(on_output, Watch):
        return on_output
    if not callable(on_output):
        from hazmat._exceptions import InputError

        raise InputError("on_output must be a function (stream, data) or a hazmat.Watch")
    return Watch(on_output)


class Tap:
    """Passes the settled part of the captured streams to a `Watch` (backends/container/stream.py).

    `update` is given, per stream, the bytes captured so far, whether they are final (the
    stream's end or files marker has been taken out), and the markers that may still come
    on it; it hands the watch what lies before any marker or start of one, within `cap`.
    """

    def __init__(self, watch: Watch, cap: int) -> None:
        self.watch = watch
        self.cap = cap
        self.sent = {1: 0, 2: 0}

    def update(
        self, stream_id: int, buf: bytes | bytearray, final: bool, markers: tuple[bytes, ...]
    ) -> None:
        done = self.sent[stream_id]
        safe = len(buf) if final else _settled(buf, done, markers)
        room = self.cap - self.sent[1] - self.sent[2]
        safe = min(safe, done + max(0, room))
        if safe > done:
            self.sent[stream_id] = safe
            self.watch.write(STREAMS[stream_id], bytes(buf[done:safe]))


def _settled(buf: bytes | bytearray, done: int, markers: tuple[bytes, ...]) -> int:
    """How much of `buf` cannot be part of a marker: up to the first whole marker after
    `done` (it is taken out once its status line is complete), or up to a tail that is the
    start of one. Only the tail's bytes equal to a marker's first byte are tried, so the cost
    does not grow with what the program writes."""
    safe = len(buf)
    for marker in markers:
        at = buf.find(marker, max(0, done - len(marker)))
        if at >= 0:
            safe = min(safe, at)
            continue
        at = buf.find(marker[:1], max(done, len(buf) - len(marker) + 1))
        while at >= 0:
            if marker.startswith(buf[at:]):
                safe = min(safe, at)
                break
            at = buf.find(marker[:1], at + 1)
    return max(safe, done)
