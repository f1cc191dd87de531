"""The service protects itself from its clients' connections: a request head or body that
trickles in is cut off, a connection cap answers 503 past it (a live `hazmat serve`, raw
sockets on loopback)."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from server_helpers import LiveServer, start_server, stop_server

pytestmark = pytest.mark.docker

CAP = 4


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """Short deadlines for heads and bodies, and a small connection cap with long keep-alive
    (so that connections stay open until the test closes them)."""
    server = start_server(
        tmp_path_factory.mktemp("guarded"),
        *("--head-timeout", "1", "--body-timeout", "2"),
        *("--max-connections", str(CAP), "--keep-alive", "120"),
    )
    try:
        yield server
    finally:
        stop_server(server)


def connect(server: LiveServer) -> socket.socket:
    host, port = server.url.removeprefix("http://").rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=30)
    return sock


def trickle_until_closed(sock: socket.socket, within_s: float = 60.0) -> bytes:
    """Send a byte every 0.2 s until the server closes the connection; what it answered."""
    sock.settimeout(0.2)
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            sock.sendall(b"x")
            answer = sock.recv(65536)
        except TimeoutError:
            continue
        except (BrokenPipeError, ConnectionResetError):
            return b""
        if not answer:
            return b""
        if answer.startswith(b"HTTP/"):  # the rest, until the server closes
            sock.settimeout(30)
            return answer + _rest(sock)
    raise AssertionError(f"the server kept a trickling connection for {within_s:g} s")


def _rest(sock: socket.socket) -> bytes:
    """What the server still sends before it closes. A server that closes with our trickled
    bytes unread makes the kernel reset the connection (RST), which may come before or after
    the last of the answer: a reset ends the answer, it is not an error here."""
    rest = b""
    try:
        while chunk := sock.recv(65536):
            rest += chunk
    except ConnectionResetError:
        pass
    return rest


def test_a_head_that_trickles_in_is_cut_off(guarded: LiveServer) -> None:
    with connect(guarded) as sock:
        sock.sendall(b"POST /v1/runs HTTP/1.1\r\nX-Slow: ")
        assert trickle_until_closed(sock) == b""  # closed, nothing answered


def test_a_body_that_trickles_in_is_a_408(guarded: LiveServer) -> None:
    with connect(guarded) as sock:
        sock.sendall(
            b"POST /v1/runs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Authorization: Bearer " + guarded.keys["untrusted"].encode() + b"\r\n"
            b"Content-Length: 100000\r\n\r\n{"
        )
        answer = trickle_until_closed(sock).decode()
    assert answer.startswith("HTTP/1.1 408"), answer
    assert "did not arrive within 2 s" in answer


def test_an_answer_before_the_body_came_closes_the_connection(guarded: LiveServer) -> None:
    """A 401 for a bad key is sent before the body is read: the client may not then keep the
    connection by trickling the rest of the body."""
    with connect(guarded) as sock:
        sock.sendall(
            b"POST /v1/runs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer nope\r\n"
            b"Content-Length: 100000\r\n\r\n{"
        )
        answer = trickle_until_closed(sock).decode()
    assert answer.startswith("HTTP/1.1 401"), answer
    assert "\r\nconnection: close\r\n" in answer.lower(), answer


def test_a_keep_alive_client_answered_early_is_told_to_close_and_goes_on(
    guarded: LiveServer,
) -> None:
    """A session id that is gone is refused before the body is read: the answer says
    `Connection: close`, so the client's next request goes on a new connection instead of into
    the closing one (where it was reset)."""
    headers = {"Authorization": f"Bearer {guarded.keys['untrusted']}"}
    with httpx.Client(base_url=guarded.url, headers=headers, timeout=30) as client:
        for _ in range(3):
            gone = client.post("/v1/sessions/s-gone/runs", json={"code": "print(1);" * 2000})
            assert gone.status_code == 404, gone.text
            assert gone.headers["connection"] == "close"
            assert client.get("/v1/health").status_code == 200


def test_past_the_connection_cap_a_new_client_gets_503(guarded: LiveServer) -> None:
    held = [connect(guarded) for _ in range(CAP - 1)]
    try:
        for sock in held:  # each has had an answer: the server counts it, kept alive
            sock.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n")
            assert sock.recv(65536).startswith(b"HTTP/1.1 200")
        refused = httpx.get(f"{guarded.url}/v1/health", timeout=30)
        assert refused.status_code == 503, refused.text
    finally:
        for sock in held:
            sock.close()
    deadline = time.monotonic() + 30  # until the server has seen them close
    while (answer := httpx.get(f"{guarded.url}/v1/health", timeout=30)).status_code != 200:
        assert time.monotonic() < deadline, answer.text
        time.sleep(0.1)


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        ("--max-connections", "0"),
        ("--head-timeout", "-1"),
        ("--body-timeout", "0"),
        ("--head-timeout", "nan"),
        ("--body-timeout", "inf"),
    ],
)
def test_bad_connection_limits_are_refused(tmp_path: Path, flag: str, value: str) -> None:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "hazmat", "serve", "--port", "0", flag, value],
        capture_output=True,
        text=True,
        timeout=120,
        env={"HAZMAT_KEYS": str(tmp_path / "keys.json"), "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 2, done.stderr
    assert "must be positive" in done.stderr
