"""Output as it comes (hazmat/watch.py) through the stream pump, against a socketpair whose far
end behaves like Docker's attach stream: what a watch sees is what the result holds, never a
marker's byte, and it comes before the run ends."""

from __future__ import annotations

import random
import socket
import struct
import threading
from collections.abc import Callable
from typing import Any

import pytest

from hazmat import InputError, Watch
from hazmat.backends.agent.single import built_marker, end_marker, file_marker
from hazmat.backends.container.stream import Capture, Exchange, pump
from hazmat.watch import as_watch


def frame(stream: int, data: bytes) -> bytes:
    return struct.pack(">BxxxL", stream, len(data)) + data


def far_end(script: Callable[[socket.socket], None]) -> tuple[socket.socket, threading.Thread]:
    ours, theirs = socket.socketpair()
    thread = threading.Thread(target=lambda: (script(theirs), theirs.close()), daemon=True)
    thread.start()
    return ours, thread


NONCE = "5e" * 16
END = end_marker(NONCE)


class Seen:
    """What a watch was given, per stream, chunk by chunk."""

    def __init__(self) -> None:
        self.chunks: list[tuple[str, bytes]] = []
        self.first = threading.Event()

    def __call__(self, stream: str, data: bytes) -> None:
        assert data, "a watch is never given an empty chunk"
        self.chunks.append((stream, data))
        self.first.set()

    def joined(self, stream: str) -> bytes:
        return b"".join(data for name, data in self.chunks if name == stream)


def run_pump(frames: list[bytes], seen: Seen | Watch, **options: object) -> Capture:
    released = threading.Event()

    def container(s: socket.socket) -> None:
        for f in frames:
            s.sendall(f)
        released.wait(5)

    watch = seen if isinstance(seen, Watch) else Watch(seen)
    sock, thread = far_end(container)
    with sock:
        args: dict[str, Any] = {"timeout_s": 5, "output_cap": 1 << 20, "end": END}
        capture = pump(sock, Exchange(b"", **{**args, **options}), released.set, watch)
    released.set()
    thread.join()
    return capture


# Program output that looks like the start of a marker, or a marker with another nonce.
TRICKY = [
    b"plain line\n",
    b"-",
    b"--",
    b"--hazmat-",
    b"--hazmat-end-",
    end_marker("00" * 16) + b"0\n",
    file_marker("00" * 16),
    b"\xff\xfe not utf-8 ",
    b"--hazmat-end-" + NONCE[:10].encode(),
    b"x" * 300,
]


@pytest.mark.parametrize("seed", range(40))
def test_what_the_watch_sees_is_exactly_what_the_capture_holds(seed: int) -> None:
    rng = random.Random(seed)
    marker, built = file_marker(NONCE), built_marker(NONCE)
    build_out = b"".join(rng.choice(TRICKY) for _ in range(rng.randrange(3)))
    out = b"".join(rng.choice(TRICKY) for _ in range(rng.randrange(8)))
    err = b"".join(rng.choice(TRICKY) for _ in range(rng.randrange(8)))
    stdout = build_out + built + b"0\n" + out + marker + b"file 1 f\nz" + END + b"0\n"
    stderr = err + END + b"0\n"
    by_stream: dict[int, list[bytes]] = {1: [], 2: []}
    for stream_id, data in ((1, stdout), (2, stderr)):
        at = 0
        while at < len(data):  # frames of 1 to 40 bytes split every marker somewhere
            size = rng.randrange(1, 40)
            by_stream[stream_id].append(frame(stream_id, data[at : at + size]))
            at += size
    mixed = []  # the two streams interleaved, each in its own order
    while by_stream[1] or by_stream[2]:
        mixed.append(by_stream[rng.choice([k for k in (1, 2) if by_stream[k]])].pop(0))
    seen = Seen()
    capture = run_pump(mixed, seen, marker=marker, files_cap=1000, built=built, compile_s=5)
    assert capture.end_status == 0 and capture.build_status == 0
    assert bytes(capture.stdout) == build_out + out
    assert bytes(capture.stderr) == err
    assert seen.joined("stdout") == bytes(capture.stdout)
    assert seen.joined("stderr") == bytes(capture.stderr)
    assert all(NONCE.encode() not in data for _, data in seen.chunks)


def test_output_reaches_the_watch_before_the_program_ends() -> None:
    seen = Seen()
    in_time: list[bool] = []

    def container(s: socket.socket) -> None:
        s.sendall(frame(1, b"first line\n"))
        in_time.append(seen.first.wait(5))  # the program goes on only once it was seen
        s.sendall(frame(1, b"second\n" + END + b"0\n") + frame(2, END + b"0\n"))

    sock, thread = far_end(container)
    with sock:
        capture = pump(
            sock, Exchange(b"", timeout_s=10, output_cap=100, end=END), lambda: None, Watch(seen)
        )
    thread.join()
    assert in_time == [True]
    assert seen.chunks[0] == ("stdout", b"first line\n")
    assert seen.joined("stdout") == bytes(capture.stdout) == b"first line\nsecond\n"


def test_a_tail_that_could_start_a_marker_waits_for_the_next_bytes() -> None:
    seen = Seen()
    held: list[list[tuple[str, bytes]]] = []

    def container(s: socket.socket) -> None:
        s.sendall(frame(1, b"a--haz"))
        seen.first.wait(5)
        held.append(list(seen.chunks))
        s.sendall(frame(1, b"ard\n" + END + b"7\n") + frame(2, END + b"7\n"))

    sock, thread = far_end(container)
    with sock:
        capture = pump(
            sock, Exchange(b"", timeout_s=10, output_cap=100, end=END), lambda: None, Watch(seen)
        )
    thread.join()
    assert held == [[("stdout", b"a")]]
    assert seen.joined("stdout") == b"a--hazard\n" and capture.end_status == 7


def test_the_watch_gets_at_most_the_output_cap() -> None:
    seen = Seen()
    frames = [frame(1, b"o" * 700), frame(2, b"e" * 700)]
    capture = run_pump(frames, seen, output_cap=1000)
    assert capture.output_exceeded
    out, err = seen.joined("stdout"), seen.joined("stderr")
    assert len(out) + len(err) == 1000
    assert out == b"o" * len(out) and err == b"e" * len(err)


def test_a_byte_per_frame_costs_the_watch_no_more_than_the_capture() -> None:
    """A program can write one byte per frame: the watch is handed what each read brings at
    once (here a handful of calls for 20,000 frames), not a call per frame."""
    seen = Seen()
    written = b"".join(frame(1, b"-") for _ in range(20_000))  # one write: big reads
    capture = run_pump([written, frame(1, END + b"0\n"), frame(2, END + b"0\n")], seen)
    assert seen.joined("stdout") == bytes(capture.stdout) == b"-" * 20_000
    assert len(seen.chunks) < 1000


def test_a_slow_on_output_does_not_hold_up_the_time_limit() -> None:
    """The host's limits do not wait for the caller: the watch hands over output on a thread
    of its own, so a callback that blocks until the run is stopped still sees it stopped."""
    stopped = threading.Event()
    released: list[bool] = []

    def stuck(stream: str, data: bytes) -> None:
        released.append(stopped.wait(10))  # blocks until the pump's time limit fires

    def container(s: socket.socket) -> None:
        s.sendall(frame(1, b"x"))
        stopped.wait(10)  # never ends by itself

    sock, thread = far_end(container)
    with sock:
        capture = pump(
            sock, Exchange(b"", timeout_s=0.5, output_cap=100, end=END), stopped.set, Watch(stuck)
        )
    thread.join()
    assert capture.timed_out and released == [True]
    assert bytes(capture.stdout) == b"x"


def test_cancel_stops_the_run_at_once() -> None:
    watch = Watch()
    watch.on_output = lambda stream, data: watch.cancel("enough")
    capture = run_pump([frame(1, b"something\n")], watch, timeout_s=60)
    assert capture.cancelled and not capture.timed_out  # it did not wait for the 60 s
    assert watch.reason == "enough" and bytes(capture.stdout) == b"something\n"


def test_cancel_from_another_thread_stops_a_silent_run() -> None:
    watch = Watch()
    stopped = threading.Event()

    def container(s: socket.socket) -> None:
        watch.cancel()  # nothing was written: the pump must notice without any output
        stopped.wait(30)

    sock, thread = far_end(container)
    with sock:
        capture = pump(
            sock, Exchange(b"", timeout_s=60, output_cap=100, end=END), stopped.set, watch
        )
    thread.join()
    assert capture.cancelled and stopped.is_set() and not capture.timed_out
    assert watch.reason == "the caller cancelled it"


def test_an_on_output_that_raises_cancels_the_run_and_says_why() -> None:
    def broken(stream: str, data: bytes) -> None:
        raise BrokenPipeError("client went away")

    watch = Watch(broken)
    capture = run_pump([frame(1, b"x\n")], watch, timeout_s=60)
    assert capture.cancelled
    assert watch.reason == "on_output raised BrokenPipeError: client went away"


def test_as_watch_takes_a_function_a_watch_or_nothing() -> None:
    watch = Watch()
    assert as_watch(watch) is watch and as_watch(None) is None
    assert isinstance(as_watch(print), Watch)
    with pytest.raises(InputError, match="on_output must be a function"):
        as_watch("stdout")  # type: ignore[arg-type]
