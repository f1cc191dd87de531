"""The stream pump against a socketpair whose far end behaves like Docker's attach stream."""

from __future__ import annotations

import json
import socket
import struct
import subprocess
import threading
import time
from collections.abc import Callable

import pytest

from hazmat.backends.agent.single import (
    built_marker,
    end_marker,
    file_marker,
    files_cap,
    job_header,
    parse_files,
)
from hazmat.backends.base import Program
from hazmat.backends.container.stream import Capture, Exchange, NotReady, pump, wait_ready
from hazmat.displays import DISPLAY_FILE, display_cap
from hazmat.policy import PRESETS
from hazmat.watch import Watch


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
        capture = pump(sock, Exchange(payload, timeout_s=10, output_cap=1000), lambda: None)
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
            sock, Exchange(b"z" * 4_000_000, timeout_s=10, output_cap=8_000_000), lambda: None
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
        capture = pump(sock, Exchange(b"", timeout_s=10, output_cap=2500), stopped.set)
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
        capture = pump(sock, Exchange(b"", timeout_s=0.5, output_cap=100), stopped.set)
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
            sock,
            Exchange(b"", timeout_s=5, output_cap=14, marker=marker, files_cap=1000),
            lambda: None,
        )
    thread.join()
    assert bytes(capture.stdout) == b"program output"
    assert not capture.output_exceeded  # the marker does not count as output
    files, notes = parse_files(capture.files_blob, ["out.txt"], 1024, 1 << 20)
    assert files == {"out.txt": b"abc"} and notes == []


def test_the_files_together_stop_at_the_download_cap() -> None:
    """Sixteen names for one file (hard links) are sixteen copies sent: they count so."""
    names = [f"link{i}" for i in range(16)]
    blob = b"".join(b"file 1000 %s\n" % n.encode() + b"x" * 1000 for n in names)
    files, notes = parse_files(blob, names, 1000, 4500)
    assert sorted(files) == names[:4]
    assert notes == [
        "output file 'link4' not collected: the files would come to more than 4500 bytes "
        "together (max_download_bytes)"
    ]
    assert files_cap(PRESETS["strict"], 16) == 4 * 1024 * 1024 + 16 * 4096  # not 16 MiB
    assert files_cap(PRESETS["strict"], 2) == 2 * 1024 * 1024 + 2 * 4096


def test_parse_files_reports_missing_large_and_malformed() -> None:
    blob = b"missing 0 a\ntoo_large 99 b\nfile 2 c\nxyfile 5 d\nab"
    files, notes = parse_files(blob, ["a", "b", "c", "d"], 1024, 1 << 20)
    assert files == {"c": b"xy"}
    assert any("'a'" in n for n in notes) and any("99 bytes" in n for n in notes)
    assert any("malformed" in n for n in notes)
    assert parse_files(None, ["a"], 1024, 1 << 20)[1][0].startswith("output files not collected")
    forged, notes = parse_files(b"file 1 not-asked\nx", ["a"], 1024, 1 << 20)
    assert forged == {} and "malformed" in notes[0]


def test_the_job_header_frames_every_file() -> None:
    payload = Program(
        files={"main.py": b"print(1)\n", "d.bin": b"\x00\xff"},
        want=["o"],
        stdin=b"in",
        max_file_bytes=10,
        nonce="n",
    )
    assert job_header(payload) == (
        b"hazmat 7 1 10 n 10 0\no\n"  # the agent's: the nonce, the files' caps, the names
        b"0 0\n2\n9 main.py\nprint(1)\n2 d.bin\n\x00\xff"  # read as the program's uid
    )


def test_the_job_carries_env_and_args_as_json_and_as_quoted_shell() -> None:
    payload = Program(
        files={"main.py": b"x"},
        want=[],
        stdin=b"",
        max_file_bytes=10,
        nonce="n",
        env={"GREETING": "it's $HOME\n`x`"},
        args=("a b", "-c", "'"),
    )
    head = job_header(payload)
    first, _, rest = head.partition(b"\n")
    assert first.split()[-3:] == [b"n", b"10", b"0"]  # no wanted names: the sizes come next
    sizes, _, rest = rest.partition(b"\n")
    json_size, sh_size = (int(x) for x in sizes.split())
    as_json = json.loads(rest[:json_size])
    assert as_json == {"env": {"GREETING": "it's $HOME\n`x`"}, "args": ["a b", "-c", "'"]}
    script = rest[json_size : json_size + sh_size].decode()
    out = subprocess.run(
        ["sh", "-c", script + 'printf "%s|" "$GREETING" "$@"'],
        capture_output=True,
        check=True,
        env={"HOME": "/nowhere"},
    ).stdout
    assert out == b"it's $HOME\n`x`|a b|-c|'|"
    assert len(Program(files={}, want=[], stdin=b"", max_file_bytes=1).nonce) == 32


def test_a_job_with_displays_asks_the_runner_and_collects_its_file_under_its_own_cap() -> None:
    ask = {"max": 2, "bytes": 300, "formats": ["svg"]}
    payload = Program(
        files={"main.py": b"x"}, want=["o"], stdin=b"", max_file_bytes=10, nonce="n", displays=ask
    )
    first, _, rest = job_header(payload).partition(b"\n")
    own = display_cap(2, 300)
    assert first == b"hazmat 7 2 10 n 10 %d" % own and own > 300  # base64 and JSON fit in it
    assert rest.startswith(b"o\n" + DISPLAY_FILE.encode() + b"\n")
    sizes, _, rest = rest.split(b"\n", 2)[2].partition(b"\n")
    as_json = json.loads(rest[: int(sizes.split()[0])])
    assert as_json == {"env": {}, "args": [], "displays": ask}


def test_reading_ends_at_the_end_marker_on_both_streams_and_drops_what_follows() -> None:
    nonce = "cd" * 16
    end = end_marker(nonce)
    released = threading.Event()

    def container(s: socket.socket) -> None:
        # stdout ends first; stderr's end (and its last output) comes later, split in frames
        s.sendall(frame(1, b"out" + end + b"0\nafter the end\n"))
        s.sendall(frame(2, b"late err"))
        s.sendall(frame(2, end[:5]) + frame(2, end[5:] + b"0"))
        s.sendall(frame(2, b"\nignored"))
        released.wait(5)  # never closes on its own: the pump must not wait for EOF

    sock, thread = far_end(container)
    with sock:
        capture = pump(sock, Exchange(b"", timeout_s=5, output_cap=11, end=end), lambda: None)
    released.set()
    thread.join()
    assert capture.end_status == 0 and not capture.timed_out
    assert (bytes(capture.stdout), bytes(capture.stderr)) == (b"out", b"late err")
    assert not capture.output_exceeded  # the markers do not count as output


def test_end_status_comes_after_the_files_section() -> None:
    nonce = "ef" * 16
    blob = b"x" + file_marker(nonce) + b"file 2 o\nhi" + end_marker(nonce) + b"137\n"
    released = threading.Event()

    def container(s: socket.socket) -> None:
        s.sendall(frame(1, blob) + frame(2, end_marker(nonce) + b"137\n"))
        released.wait(5)

    sock, thread = far_end(container)
    with sock:
        capture = pump(
            sock,
            Exchange(
                b"",
                timeout_s=5,
                output_cap=100,
                marker=file_marker(nonce),
                files_cap=100,
                end=end_marker(nonce),
            ),
            lambda: None,
        )
    released.set()
    thread.join()
    assert capture.end_status == 137 and bytes(capture.stdout) == b"x"
    assert parse_files(capture.files_blob, ["o"], 1024, 1 << 20) == ({"o": b"hi"}, [])


def test_wait_ready_wants_the_ready_line_first() -> None:
    released = threading.Event()

    def ready(s: socket.socket) -> None:
        s.sendall(frame(2, b"warming up") + frame(1, b"hazmat-") + frame(1, b"ready\n"))
        released.wait(5)  # stays open: the line alone must be enough

    sock, thread = far_end(ready)
    with sock:
        wait_ready(sock, b"hazmat-ready\n", 5)
    released.set()
    thread.join()

    def chatty(s: socket.socket) -> None:
        s.sendall(frame(1, b"hello\n"))

    sock, thread = far_end(chatty)
    with sock, pytest.raises(NotReady, match="unexpected output"):
        wait_ready(sock, b"hazmat-ready\n", 5)
    thread.join()

    def dying(s: socket.socket) -> None:
        s.sendall(frame(2, b"python3: not found"))

    sock, thread = far_end(dying)
    with sock, pytest.raises(NotReady, match="ended before it was ready; it said: python3"):
        wait_ready(sock, b"hazmat-ready\n", 5)
    thread.join()


def _pump_built(
    sends: list[bytes], *, timeout_s: float, compile_s: float, nonce: str
) -> tuple[Capture, list[str]]:
    released = threading.Event()
    stops: list[str] = []

    def container(s: socket.socket) -> None:
        for data in sends:
            s.sendall(data)
        released.wait(10)

    sock, thread = far_end(container)
    with sock:
        capture = pump(
            sock,
            Exchange(
                b"",
                timeout_s=timeout_s,
                output_cap=100,
                end=end_marker(nonce),
                built=built_marker(nonce),
                compile_s=compile_s,
            ),
            lambda: stops.append("stop"),
        )
    released.set()
    thread.join()
    return capture, stops


def test_the_build_marker_is_taken_out_of_stdout_with_its_status() -> None:
    nonce = "ab" * 16
    built, end = built_marker(nonce), end_marker(nonce)
    # split inside the marker, and a failed build's end marker in the same frame as its status
    sends = [frame(1, built[:7]), frame(1, built[7:] + b"2\n" + end + b"2\n")]
    sends.append(frame(2, end + b"2\n"))
    capture, stops = _pump_built(sends, timeout_s=60, compile_s=60, nonce=nonce)
    assert capture.build_status == 2 and capture.end_status == 2
    assert bytes(capture.stdout) == b"" and not stops
    assert capture.build_ms is not None and not capture.timed_out


def test_a_build_without_its_marker_in_time_is_a_compile_timeout() -> None:
    nonce = "ac" * 16
    sends = [frame(2, b"compiling")]
    capture, stops = _pump_built(sends, timeout_s=60, compile_s=0.2, nonce=nonce)
    assert capture.timed_out and capture.compile_timed_out
    assert capture.build_status is None and stops == ["stop"]


def test_the_programs_time_limit_starts_after_the_build() -> None:
    nonce = "ad" * 16
    sends = [frame(1, built_marker(nonce) + b"0\nrunning")]
    capture, _stops = _pump_built(sends, timeout_s=0.2, compile_s=60, nonce=nonce)
    assert capture.timed_out and not capture.compile_timed_out
    assert (capture.build_status, bytes(capture.stdout)) == (0, b"running")


def _agent_that_stops_on(
    word: bytes | None, nonce: str, output: bytes = b"working", said: list[bytes] | None = None
) -> Callable[[socket.socket], None]:
    """A session's agent: its program writes `output` and runs until the host says `word`
    (None: never), writing `output` once more as it stops; then it ends the call on both
    streams. What the host said until then goes into `said`."""

    def container(s: socket.socket) -> None:
        s.sendall(frame(1, output))
        heard = b""
        while word is None or word not in heard:
            chunk = s.recv(1024)
            if not chunk:
                return
            heard += chunk
        if said is not None:
            said.append(heard)
        end = end_marker(nonce) + b"130\n"
        s.sendall(frame(1, output) + frame(1, end) + frame(2, end))
        s.recv(1024)  # the host's next, or the end of the stream

    return container


def _session_call(
    word: bytes | None,
    watch: Watch | None = None,
    timeout_s: float = 0.2,
    output: bytes = b"working",
    check: Callable[[], str | None] | None = None,
    said: list[bytes] | None = None,
) -> tuple[Capture, list[str]]:
    nonce = "ba" * 16
    stops: list[str] = []
    sock, thread = far_end(_agent_that_stops_on(word, nonce, output, said))
    exchange = Exchange(
        b"",
        timeout_s=timeout_s,
        output_cap=1000,
        end=end_marker(nonce),
        keep_open=True,
        check=check,
        stop_words=(b"interrupt\n", b"kill\n"),
        grace_s=0.2,
        hard_stops=frozenset({"memory"}),
    )

    def stop() -> None:  # the container killed: its stream ends
        stops.append("stop")
        sock.shutdown(socket.SHUT_WR)

    with sock:
        capture = pump(sock, exchange, stop, watch)
    thread.join()
    return capture, stops


def test_a_session_call_past_its_time_is_interrupted_not_killed() -> None:
    capture, stops = _session_call(b"interrupt\n")
    assert capture.timed_out and capture.told == b"interrupt\n"
    assert capture.end_status == 130 and not stops
    assert bytes(capture.stdout) == b"workingworking"


def test_a_session_call_over_its_output_cap_is_interrupted_and_what_follows_is_cut() -> None:
    capture, stops = _session_call(b"interrupt\n", timeout_s=60, output=b"x" * 1500)
    assert capture.output_exceeded and capture.told == b"interrupt\n"
    assert not capture.timed_out and capture.end_status == 130 and not stops
    assert bytes(capture.stdout) == b"x" * 1000  # the cap's, the end marker found after it


def test_a_session_call_that_ignores_its_interrupt_is_told_to_end_then_killed() -> None:
    capture, stops = _session_call(b"kill\n")
    assert capture.timed_out and capture.told == b"kill\n"
    assert capture.end_status == 130 and not stops
    never, stops = _session_call(None)
    assert never.timed_out and never.told == b"kill\n"
    assert never.end_status is None and stops == ["stop"]


def test_a_session_call_stopped_for_a_hard_reason_is_told_the_last_word_at_once() -> None:
    """A check's reason in `hard_stops` (a session's call over its memory under runsc: an
    interrupt frees nothing) skips the interrupt; any other reason is interrupted first."""
    said: list[bytes] = []
    capture, stops = _session_call(b"kill\n", timeout_s=60, check=lambda: "memory", said=said)
    assert said == [b"kill\n"] and capture.told == b"kill\n" and not stops
    assert capture.stopped_by == "memory" and capture.end_status == 130
    said.clear()
    capture, stops = _session_call(b"interrupt\n", timeout_s=60, check=lambda: "cpu", said=said)
    assert said == [b"interrupt\n"] and capture.stopped_by == "cpu" and not stops


def test_a_cancelled_session_call_is_interrupted_and_is_not_a_timeout() -> None:
    watch = Watch()
    watch.on_output = lambda stream, data: watch.cancel("seen enough")
    capture, stops = _session_call(b"interrupt\n", watch, timeout_s=60)
    assert capture.cancelled and not capture.timed_out
    assert capture.told == b"interrupt\n" and capture.end_status == 130 and not stops
