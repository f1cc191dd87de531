"""Drive a container's attached socket: send the job, read stdout/stderr, enforce time and size.

The socket carries Docker's multiplexed stream (an 8-byte header per frame: stream id, three
zero bytes, big-endian length). One `selectors` loop writes the payload and reads frames at the
same time, so a large stdin and a large output cannot deadlock each other. The host is the
authority: when the wall clock runs out or the output passes its cap, `stop()` kills the
container through the engine. Reading ends at the agent's end marker, once it has come on both
stdout and stderr (the engine forwards the two pipes independently, so only then is all of the
program's output in); whatever follows it is discarded. With a `Watch` (hazmat/watch.py) the
program's output also goes to the caller as it comes, and the caller can stop the run; a
watch's `feed` is read as it comes and sent on after the job (once the program has its go),
and its end closes the program's stdin.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import socket
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from hazmat.backends.agent.single import parse_end
from hazmat.watch import Tap, Watch

__all__ = ["Capture", "Exchange", "NotReady", "pump", "wait_ready"]

_HEADER = struct.Struct(">BxxxL")
_CHUNK = 256 * 1024
# After the container is killed, how long to keep reading for frames already on their way.
_DRAIN_SECONDS = 2.0
# With a watch, how often the pump looks whether its caller has cancelled the run.
_CANCEL_POLL_SECONDS = 0.1


@dataclass
class Capture:
    """What came back over the socket, and why reading stopped."""

    stdout: bytearray = field(default_factory=bytearray)
    stderr: bytearray = field(default_factory=bytearray)
    files_blob: bytearray | None = None  # everything after the agent's file marker
    end_status: int | None = None  # the exit status after the end marker, once both came
    build_status: int | None = None  # the build step's exit status, once the agent said it
    build_ms: float | None = None  # from the job's start to the end of its build step
    timed_out: bool = False
    # the exchange's `check` said why (backends/container/cpu_time.py)
    stopped_by: str | None = None
    compile_timed_out: bool = False  # the build step outlasted its own budget
    output_exceeded: bool = False
    cancelled: bool = False  # the caller's watch stopped the run
    # the last of the exchange's `stop_words` the host sent (a session's call past its time,
    # or cancelled, told to stop rather than killed); None: none was
    told: bytes | None = None
    files_exceeded: bool = False
    stdin_unsent: int = 0  # bytes the program exited without reading
    # the build step's memory left in use when the program's limit was to be set (bytes):
    # more than the program may have, so it did not run
    held_after_build: int | None = None
    duration_ms: float = 0.0
    # the program's own wall-clock time: from its go (after any build, and the host's step
    # after it) to its end
    program_ms: float | None = None
    rest: bytes = b""  # bytes read after the end that belong to the next frame (sessions)


class _Demux:
    """Splits frames into stdout/stderr, finds the markers, and applies the caps."""

    def __init__(self, capture: Capture, exchange: Exchange, tap: Tap | None = None) -> None:
        self.capture = capture
        self.tap = tap
        self.built = built = exchange.built
        self.cap = exchange.output_cap
        self.marker = marker = exchange.marker
        self.files_cap = exchange.files_cap
        self.end = end = exchange.end
        self.buffer = bytearray()
        # per stream id: where the end marker starts (once seen) and the status after it
        self.end_at: dict[int, int] = {}
        self.status: dict[int, int] = {}
        self.slack = len(marker or b"") + 2 * (len(end or b"") + 8) + len(built or b"") + 8
        # a session's call (one with stop words) over its output cap is told to stop, as at its
        # time limit, and its container kept; elsewhere the cap stops the container
        self.told_at_cap = bool(exchange.stop_words)

    def feed(self, data: bytes) -> None:
        self.buffer += data
        while len(self.buffer) >= _HEADER.size:
            stream_id, length = _HEADER.unpack_from(self.buffer)
            if len(self.buffer) < _HEADER.size + length:
                return
            chunk = bytes(self.buffer[_HEADER.size : _HEADER.size + length])
            del self.buffer[: _HEADER.size + length]
            self._route(stream_id, chunk)
        self.pass_on()  # once per read, not per frame: a program can write a byte per frame

    def pass_on(self, final: bool = False) -> None:
        """Hand the watch, if any, what is settled of the program's output."""
        if self.tap is None:
            return
        c = self.capture
        ends = (self.end,) if self.end else ()
        out = ends + ((self.marker,) if self.marker else ())
        if self.built is not None and c.build_status is None:
            out += (self.built,)
        done = final or 1 in self.status or c.files_blob is not None
        self.tap.update(1, c.stdout, done, out)
        self.tap.update(2, c.stderr, final or 2 in self.status, ends)

    def _route(self, stream_id: int, chunk: bytes) -> None:
        c = self.capture
        if stream_id != 2:
            stream_id = 1
        if stream_id in self.status:
            return  # after the end marker: discarded
        if stream_id == 2:
            self._add(2, c.stderr, chunk)
        elif c.files_blob is not None:
            self._add(1, c.files_blob, chunk)
            c.files_exceeded = len(c.files_blob) > self.files_cap
            return
        else:
            start = max(0, len(c.stdout) - len(self.marker or b""))
            self._add(1, c.stdout, chunk)
            self._find_built()
            at = c.stdout.find(self.marker, start) if self.marker else -1
            if at >= 0:
                c.files_blob = bytearray(c.stdout[at + len(self.marker or b"") :])
                del c.stdout[at:]
                self.end_at.pop(1, None)
                self._find_end(1, c.files_blob, 0)
        self._apply_cap()

    def _find_built(self) -> None:
        """The agent's line saying the build step ended (with its status): taken out of the
        program's stdout, which then holds only what the build step itself wrote."""
        c = self.capture
        if self.built is None or c.build_status is not None:
            return
        at = c.stdout.find(self.built)
        if at < 0:
            return
        rest = c.stdout[at + len(self.built) :]
        status = parse_end(rest)
        if status is not None:
            c.build_status = status
            size = len(self.built) + rest.index(b"\n") + 1
            del c.stdout[at : at + size]
            if self.end_at.get(1, -1) > at:  # an end marker already seen after it moves up
                self.end_at[1] -= size

    def _add(self, stream_id: int, buf: bytearray, chunk: bytes) -> None:
        start = max(0, len(buf) - len(self.end or b""))
        buf += chunk
        self._find_end(stream_id, buf, start)

    def _find_end(self, stream_id: int, buf: bytearray, start: int) -> None:
        if not self.end:
            return
        at = self.end_at.get(stream_id)
        if at is None:
            at = buf.find(self.end, start)
            if at < 0:
                return
            self.end_at[stream_id] = at
        status = parse_end(buf[at + len(self.end) :])
        if status is not None:
            self.status[stream_id] = status
            del buf[at:]
            if len(self.status) == 2:
                self.capture.end_status = self.status[1]

    def _apply_cap(self) -> None:
        c = self.capture
        total = len(c.stdout) + len(c.stderr)
        # While a marker may still be arriving, allow its length beyond the cap so that a
        # marker split across frames is not mistaken for program output.
        slack = self.slack if len(self.status) < 2 else 0
        if total > self.cap + slack:
            self.finish()
            c.output_exceeded = True

    def finish(self) -> None:
        """Trim the program's output to the cap (called at the end, and when it is exceeded)."""
        c = self.capture
        if len(c.stdout) + len(c.stderr) > self.cap:
            c.output_exceeded = True
            keep_err = min(len(c.stderr), self.cap)
            del c.stderr[keep_err:]
            del c.stdout[max(0, self.cap - keep_err) :]

    @property
    def must_stop(self) -> bool:
        """Whether the container must be stopped now: a cap passed that no stop word answers
        (the output files' always; the output's outside a session)."""
        c = self.capture
        return c.files_exceeded or (c.output_exceeded and not self.told_at_cap)

    @property
    def ended(self) -> bool:
        return self.capture.end_status is not None


@dataclass(frozen=True)
class Exchange:
    """One job's exchange over a container's socket: `payload` to send, then read within
    `timeout_s` and `output_cap`. The agent's markers (backends/agent/single.py): `end` ends the
    reading once it has come on both streams; after `marker` come the output files, at most
    `files_cap` bytes; with `built`, the first `compile_s` seconds are the build step's and
    `timeout_s` starts when the marker comes; `after_build` is then sent, after
    `on_built()` (the host's work between the build and the program: it returns None, or the
    bytes in use when the program's memory limit could not be set, which ends the run); a
    kept build's test says it is unpacked with the same marker. With `keep_open` (a session's kept
    container) no EOF is sent after the payload, and `pending` (the previous call's
    `Capture.rest`) is read first: the stream stays framed across calls. While the program
    runs (after the build, if any), `check()` is called every `check_s`: a reason to stop it
    ends the run as its time limit would, with `Capture.stopped_by` saying why. With
    `stop_words` (a session's call) the run's end, at its time or output limit or on a cancel,
    is asked for rather than forced: the first word is sent, then, each `grace_s` later while
    the end has not come, the next; only once they are all spent is the container killed; a
    `check()` reason in `hard_stops` (a session's call over its memory, which an interrupt
    would not free) goes to the last word at once. Output past the cap meanwhile is read and
    dropped."""

    payload: bytes
    timeout_s: float
    output_cap: int
    end: bytes | None = None
    marker: bytes | None = None
    files_cap: int = 0
    built: bytes | None = None
    compile_s: float = 0.0
    keep_open: bool = False
    pending: bytes = b""
    after_build: bytes | None = None
    on_built: Callable[[], int | None] | None = None
    check: Callable[[], str | None] | None = None
    check_s: float = 0.05
    stop_words: tuple[bytes, ...] = ()
    grace_s: float = 0.0
    hard_stops: frozenset[str] = frozenset()


def pump(
    sock: socket.socket,
    exchange: Exchange,
    stop: Callable[[], None],
    watch: Watch | None = None,
) -> Capture:
    """Send the exchange's payload then EOF, read until the end marker has come on both
    streams, the container closes the stream, or a limit is hit.

    `stop` must not block: the engine finishes killing a container only once its output has
    been read, so after calling it the pump goes on reading (and discarding) until the stream
    ends or a short grace period passes.

    With a `watch`, the program's output goes to it as it comes, and its `cancel()` stops the
    run as a timeout would (`Capture.cancelled`).
    """
    return _Pump(sock, exchange, stop, watch).run()


class _Pump:
    """One exchange: a `selectors` loop that writes and reads at once, within the limits."""

    def __init__(
        self,
        sock: socket.socket,
        exchange: Exchange,
        stop: Callable[[], None],
        watch: Watch | None,
    ) -> None:
        self.sock = sock
        self.ex = exchange
        self.stop = stop
        self.watch = watch
        self.capture = Capture()
        tap = Tap(watch, exchange.output_cap) if watch is not None else None
        self.demux = _Demux(self.capture, exchange, tap)
        self.started = time.monotonic()
        budget = exchange.compile_s if exchange.built else exchange.timeout_s
        self.deadline = self.started + budget
        self.drain_until: float | None = None
        self.outgoing = memoryview(exchange.payload)
        self.held = exchange.after_build  # sent once the build is done
        self.next_check = self.started if exchange.built is None else None
        self.go_at = self.started if exchange.built is None else None
        self.words = list(exchange.stop_words)  # those not sent yet
        self.sel: selectors.BaseSelector = selectors.DefaultSelector()
        # the watch's feed, until it ends (read once the program has its go)
        self.feed = watch.feed if watch is not None else None

    @property
    def keep_writing(self) -> bool:
        """Whether the write side stays open once `outgoing` is sent."""
        return self.ex.keep_open or self.held is not None or self.feed is not None

    def run(self) -> Capture:
        if self.ex.pending:
            self.demux.feed(self.ex.pending)
        self.sock.setblocking(False)
        sel = self.sel
        writing = selectors.EVENT_WRITE if self.outgoing else 0
        sel.register(self.sock, selectors.EVENT_READ | writing)
        if not self.outgoing and not self.keep_writing:
            _close_write(self.sock)
        try:
            while True:
                now = time.monotonic()
                self._start_feed()
                self._check_limits(now)
                limit = self.drain_until if self.drain_until is not None else self.deadline
                if now >= limit:
                    break
                if self._serve(sel, self._wait(now, limit)):
                    break
        finally:
            if self.drain_until is None:
                self.capture.duration_ms = (time.monotonic() - self.started) * 1000
            if self.go_at is not None:
                ended = self.started + self.capture.duration_ms / 1000
                self.capture.program_ms = max(0.0, (ended - self.go_at) * 1000)
            sel.close()
            self.demux.finish()
            self.demux.pass_on(final=True)
            if self.watch is not None:
                self.watch.flush()  # every chunk handed over before the result goes back
                self.watch.started.set()
                self.watch.ended.set()
        self.capture.stdin_unsent = len(self.outgoing)
        return self.capture

    def _check_limits(self, now: float) -> None:
        """Past the deadline, cancelled or over a cap: stop the container, then drain (or,
        with stop words left, say the next one and read on)."""
        if self.drain_until is not None:
            return
        capture = self.capture
        due = now >= self.deadline
        if due and not capture.timed_out and capture.told is None:
            capture.timed_out = True
            capture.compile_timed_out = self.ex.built is not None and capture.build_status is None
        asked = self.watch is not None and self.watch.cancelled and not capture.cancelled
        capture.cancelled = capture.cancelled or asked
        if self.ex.check is not None and self.next_check is not None and now >= self.next_check:
            self.next_check = now + self.ex.check_s
            reason = self.ex.check()
            if reason is not None:
                capture.timed_out, capture.stopped_by = True, reason
                due = True
                if reason in self.ex.hard_stops:
                    del self.words[:-1]  # straight to the last word
        # a session's call over its output cap: told to stop at once, what comes meanwhile cut
        capped = capture.output_exceeded and capture.told is None
        if self.demux.must_stop:
            pass
        elif (due or asked or capped) and self.words:
            self._tell(now)
            return
        elif not (due or (capture.cancelled and not self.ex.stop_words)):
            return
        self.stop()
        self.drain_until = now + _DRAIN_SECONDS
        capture.duration_ms = (now - self.started) * 1000

    def _tell(self, now: float) -> None:
        """Send the next stop word; the next comes (or the kill) a grace period later."""
        word = self.words.pop(0)
        self.capture.told = word
        self.deadline = now + self.ex.grace_s
        self.next_check = None  # the limit is reached: only the grace period counts now
        self.outgoing = memoryview(bytes(self.outgoing) + word)
        self.sel.modify(self.sock, selectors.EVENT_READ | selectors.EVENT_WRITE)

    def _wait(self, now: float, limit: float) -> float:
        wait = max(0.0, limit - now)
        if self.watch is not None and self.drain_until is None:
            wait = min(wait, _CANCEL_POLL_SECONDS)
        if self.ex.check is not None and self.next_check is not None and self.drain_until is None:
            wait = min(wait, max(0.0, self.next_check - now))
        return wait

    def _start_feed(self) -> None:
        """Once the program has its go (the job, and the go after a build, are on their way):
        say so to the watch, and read its feed from then on."""
        if self.watch is None or self.watch.started.is_set() or self.held is not None:
            return
        if self.ex.built is not None and self.capture.build_status != 0:
            return
        self.watch.started.set()
        if self.feed is not None:
            self.sel.register(self.feed, selectors.EVENT_READ)

    def _take_feed(self) -> None:
        """What the feed brought, queued for the program's stdin; at its end, EOF after it."""
        assert self.feed is not None
        try:
            data = os.read(self.feed, _CHUNK)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self.sel.unregister(self.feed)
            self.feed = None
            if not self.outgoing and not self.keep_writing:
                _close_write(self.sock)
            return
        if self.drain_until is None:
            self.outgoing = memoryview(bytes(self.outgoing) + data)
            self.sel.modify(self.sock, selectors.EVENT_READ | selectors.EVENT_WRITE)

    def _serve(self, sel: selectors.BaseSelector, wait: float) -> bool:
        """Write and read what the socket is ready for; True once the exchange is over."""
        for key, events in sel.select(timeout=wait):
            if key.fileobj is not self.sock:
                self._take_feed()
                continue
            if events & selectors.EVENT_WRITE and self.outgoing:
                self.outgoing = _send_some(self.sock, self.outgoing, sel, self.keep_writing)
            if events & selectors.EVENT_READ:
                data = _recv(self.sock)
                if data is None:
                    continue
                if not data:
                    return True  # the container closed the stream
                if self.drain_until is None and self._take(data):
                    return True
        return False

    def _take(self, data: bytes) -> bool:
        """Feed what came; True once the agent's end has come (and no cap was passed)."""
        capture = self.capture
        building = capture.build_status is None
        self.demux.feed(data)
        if self.ex.built and building and capture.build_status is not None:
            now = time.monotonic()
            capture.build_ms = (now - self.started) * 1000
            self.deadline = now + self.ex.timeout_s
            self.next_check = self.go_at = now
            self._after_build(now)
        if self.demux.ended and not self.demux.must_stop:
            capture.rest = bytes(self.demux.buffer)
            return True
        return False

    def _after_build(self, now: float) -> None:
        """The build is done: the host's step between it and the program, then the rest of
        the job (or EOF, when the build failed and the program will not run)."""
        held, self.held = self.held, None
        if held is None:
            return
        if self.capture.build_status == 0:
            in_use = self.ex.on_built() if self.ex.on_built is not None else None
            if in_use is not None:
                self.capture.held_after_build = in_use
                self.stop()
                self.drain_until = now + _DRAIN_SECONDS
                return
            # on_built may have waited (for a core): the program's time starts now
            now = time.monotonic()
            self.deadline = now + self.ex.timeout_s
            self.next_check = self.go_at = now
            self.outgoing = memoryview(bytes(self.outgoing) + held)
            self.sel.modify(self.sock, selectors.EVENT_READ | selectors.EVENT_WRITE)
        elif not self.outgoing and not self.ex.keep_open:
            _close_write(self.sock)


class NotReady(Exception):
    """The container ended, or did not say it was ready in time; the message says which."""


def wait_ready(sock: socket.socket, ready: bytes, timeout_s: float) -> None:
    """Read until the container's stdout says `ready`, which must be the first thing on it.

    Anything else on stdout, the stream ending, or the deadline passing raises `NotReady`
    with what the container wrote on stderr.
    """
    demux = _Demux(Capture(), Exchange(b"", timeout_s, output_cap=len(ready) + 64 * 1024))
    deadline = time.monotonic() + timeout_s
    sock.setblocking(False)
    with selectors.DefaultSelector() as sel:
        sel.register(sock, selectors.EVENT_READ)
        while True:
            out = bytes(demux.capture.stdout)
            if out == ready:
                return
            if not ready.startswith(out) or demux.capture.output_exceeded:
                raise NotReady(f"unexpected output before ready: {out[:200]!r}")
            left = deadline - time.monotonic()
            if left <= 0:
                raise NotReady(f"not ready after {timeout_s:g} s" + _said(demux.capture))
            if sel.select(timeout=left):
                data = _recv(sock)
                if data == b"":
                    raise NotReady("the container ended before it was ready" + _said(demux.capture))
                if data:
                    demux.feed(data)


def _said(capture: Capture) -> str:
    err = bytes(capture.stderr[-500:]).decode("utf-8", "replace").strip()
    return f"; it said: {err}" if err else ""


def _send_some(
    sock: socket.socket, outgoing: memoryview, sel: selectors.BaseSelector, keep_writing: bool
) -> memoryview:
    try:
        sent = sock.send(outgoing[:_CHUNK])
    except BlockingIOError:
        return outgoing
    except OSError:
        # The container closed its stdin (the program exited without reading it all).
        sel.modify(sock, selectors.EVENT_READ)
        return outgoing
    rest = outgoing[sent:]
    if not rest:
        sel.modify(sock, selectors.EVENT_READ)
        if not keep_writing:
            _close_write(sock)
    return rest


def _recv(sock: socket.socket) -> bytes | None:
    """Some bytes; b"" at end of stream; None when nothing is ready after all."""
    try:
        return sock.recv(_CHUNK)
    except BlockingIOError:
        return None
    except OSError:
        return b""


def _close_write(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_WR)
