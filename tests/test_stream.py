"""The stream pump against a socketpair whose far end behaves like Docker's attach stream."""

from __future__ import annotations

import socket
import struct
import threading
import time
from collections.abc import Callable

from hazmat.backends.agent import Payload, file_marker, parse_files
from hazmat.backends.stream import pump


def frame(stream: int, data: bytes) -> bytes:
    return struct.pack(">BxxxL", stream, len(data)) + data


def far_end(script: Callable[[socket.socket], None]) -> tuple[socket.socket, threading.Thread]:
    ours, theirs = socket.socketpair()
    thread = threading.Thread(target=lambda: (script(theirs), theirs.close()), daemon=True)
    thread.start()
    return ours, thread


def read_all(sock: socket.socket) -> bytes:
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return data


def test_stdout_and_stderr_are_separated_and_stdin_arrives_whole() -> None:
    received: list[bytes] = []

    def container(s: socket.socket) -> None:
        received.append(read_all(s))
        s.sendall(frame(1, b"out") + frame(2, b"err") + frame(1, b"put"))

    sock, thread = far_end(container)
    payload = b"x" * 3_000_000  # larger than any socket buffer
    with sock:
        capture = pump(sock, payload, timeout_s=10, output_cap=1000, stop=lambda: None)
    thread.join()
    assert received == [payload]
    assert (bytes(capture.stdout), bytes(capture.stderr)) == (b"output", b"err")
    assert not capture.timed_out and not capture.output_exceeded


def test_large_output_while_stdin_is_unread_does_not_deadlock() -> None:
    def container(s: socket.socket) -> None:
        s.sendall(frame(1, b"y" * 4_000_000))  # writes before reading anything
        read_all(s)

    sock, thread = far_end(container)
    with sock:
        capture = pump(
            sock, b"z" * 4_000_000, timeout_s=10, output_cap=8_000_000, stop=lambda: None
        )
    thread.join()
    assert len(capture.stdout) == 4_000_000


def test_output_cap_stops_the_run_and_keeps_exactly_the_cap() -> None:
    stopped = threading.Event()

    def container(s: socket.socket) -> None:
        for _ in range(100):
            s.sendall(frame(1, b"a" * 1000))
        stopped.wait(5)

    sock, thread = far_end(container)
    with sock:
        capture = pump(sock, b"", timeout_s=10, output_cap=2500, stop=stopped.set)
    thread.join()
    assert stopped.is_set()
    assert capture.output_exceeded
    assert len(capture.stdout) == 2500


def test_timeout_calls_stop_and_reports_the_limit() -> None:
    stopped = threading.Event()

    def container(s: socket.socket) -> None:
        s.sendall(frame(1, b"before"))
        stopped.wait(10)  # "killed" when stop() is called

    sock, thread = far_end(container)
    started = time.monotonic()
    with sock:
        capture = pump(sock, b"", timeout_s=0.5, output_cap=100, stop=stopped.set)
    thread.join()
    assert capture.timed_out and stopped.is_set()
    assert 0.5 <= time.monotonic() - started < 3
    assert bytes(capture.stdout) == b"before"
    assert 480 <= capture.duration_ms < 1500


def test_file_marker_split_across_frames_is_found() -> None:
    nonce = "ab" * 16
    marker = file_marker(nonce)
    record = b"file 3 out.txt\nabc"
    blob = b"program output" + marker + record

    def container(s: socket.socket) -> None:
        for i in range(0, len(blob), 5):  # tiny frames split the marker
            s.sendall(frame(1, blob[i : i + 5]))

    sock, thread = far_end(container)
    with sock:
        capture = pump(
            sock, b"", timeout_s=5, output_cap=14, stop=lambda: None, marker=marker, files_cap=1000
        )
    thread.join()
    assert bytes(capture.stdout) == b"program output"
    assert not capture.output_exceeded  # the marker does not count as output
    files, notes = parse_files(capture.files_blob, ["out.txt"])
    assert files == {"out.txt": b"abc"} and notes == []


def test_parse_files_reports_missing_large_and_malformed() -> None:
    blob = b"missing 0 a\ntoo_large 99 b\nfile 2 c\nxyfile 5 d\nab"
    files, notes = parse_files(blob, ["a", "b", "c", "d"])
    assert files == {"c": b"xy"}
    assert any("'a'" in n for n in notes) and any("99 bytes" in n for n in notes)
    assert any("malformed" in n for n in notes)
    assert parse_files(None, ["a"])[1][0].startswith("output files not collected")
    forged, notes = parse_files(b"file 1 not-asked\nx", ["a"])
    assert forged == {} and "malformed" in notes[0]


def test_payload_header_frames_every_file() -> None:
    payload = Payload(
        files={"main.py": b"print(1)\n", "d.bin": b"\x00\xff"},
        want=["o"],
        stdin=b"in",
        max_file_bytes=10,
        nonce="n",
    )
    assert payload.header() == b"hazmat 1 2 1 10 n\n9 main.py\nprint(1)\n2 d.bin\n\x00\xffo\n"
    assert len(Payload(files={}, want=[], stdin=b"", max_file_bytes=1).nonce) == 32
