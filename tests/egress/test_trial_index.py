"""A trial index on loopback (policy `packages.trial_index`, egress/trial.py): the policy takes
an http:// index only when it is on, only on loopback and only alone; the proxy forwards a plain
GET for that one origin, rewritten, to its loopback address, and refuses every other plain
request, as it does without a trial. A download's job trusts the trial index by name; the
doctor warns. The whole install through it, on the engine: tests/egress/test_package_install.py."""

from __future__ import annotations

import http.server
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest

from hazmat import PolicyError
from hazmat.cli.doctor import _trial_index
from hazmat.egress.proxy import SOCKET_NAME, EgressProxy
from hazmat.egress.rules import Refused
from hazmat.egress.trial import parse_forward
from hazmat.policy import Policy
from hazmat.policy.file import parse_policy


def _packages(index: str, **more: object) -> Policy:
    return parse_policy({"packages": {"levels": ["unknown"], "python": {"index": index}, **more}})


@pytest.mark.parametrize(
    ("index", "more", "said"),
    [
        ("http://localhost:8080/simple/", {}, "needs packages.trial_index: true"),
        ("http://mirror.example/simple/", {"trial_index": True}, "must be on this machine's"),
        ("http://10.0.0.1:3141/simple/", {"trial_index": True}, "must be on this machine's"),
        ("http://localhost:99999/", {"trial_index": True}, "expected an https:// URL"),
        ("http://u:p@localhost:8080/", {"trial_index": True}, "credentials in the URL"),
        ("https://localhost:8080/", {"trial_index": "yes"}, "packages.trial_index"),
    ],
)
def test_the_policy_takes_an_http_index_only_for_a_trial_on_loopback(
    index: str, more: dict[str, object], said: str
) -> None:
    with pytest.raises(PolicyError, match=said):
        _packages(index, **more)


def test_a_trial_index_sends_to_no_other_hosts() -> None:
    section = {"index": "http://localhost:8080/simple/", "hosts": ["files.example"]}
    with pytest.raises(PolicyError, match="sends its clients to no other hosts"):
        parse_policy({"packages": {"trial_index": True, "python": section}})


@pytest.mark.parametrize(
    ("index", "origin"),
    [
        ("http://localhost:8080/simple", ("localhost", 8080)),
        ("http://127.0.0.5/simple/", ("127.0.0.5", 80)),
        ("http://[::1]:3141/root/pypi/", ("::1", 3141)),
    ],
)
def test_a_trial_index_s_origin_is_what_the_proxy_forwards_to(
    index: str, origin: tuple[str, int]
) -> None:
    settings = _packages(index, trial_index=True).packages
    assert settings.trial_origins() == (origin,)
    assert settings.python is not None and settings.python.reach() == ([origin[0]], [origin[1]])
    check = _trial_index(_packages(index, trial_index=True))
    assert check is not None and not check.ok and not check.needed
    assert settings.python.url in check.detail


def test_without_a_trial_nothing_is_forwarded_and_the_doctor_is_silent() -> None:
    policy = _packages("https://localhost:8443/simple/", trial_index=True)
    assert policy.packages.trial_origins() == () and _trial_index(policy) is None


TRIAL = {("localhost", 8080)}


def test_a_plain_request_is_rewritten_for_the_index() -> None:
    head = (
        b"GET http://localhost:8080/simple/six/?x=1 HTTP/1.1\r\nHost: elsewhere.example\r\n"
        b"Proxy-Authorization: Basic eA==\r\nConnection: keep-alive\r\nAccept: */*\r\n\r\n"
    )
    host, port, rewritten = parse_forward(head, TRIAL)
    assert (host, port) == ("localhost", 8080)
    assert rewritten == (
        b"GET /simple/six/?x=1 HTTP/1.1\r\nHost: localhost:8080\r\nAccept: */*\r\n"
        b"Connection: close\r\n\r\n"
    )


@pytest.mark.parametrize(
    ("head", "said"),
    [
        (b"GET http://localhost:8081/ HTTP/1.1\r\n\r\n", "only to the policy's trial index"),
        (b"GET http://127.0.0.1:8080/ HTTP/1.1\r\n\r\n", "only to the policy's trial index"),
        (b"GET http://evil.example/ HTTP/1.1\r\n\r\n", "only to the policy's trial index"),
        (b"GET https://localhost:8080/ HTTP/1.1\r\n\r\n", "an http:// URL"),
        (b"GET http://x@localhost:8080/ HTTP/1.1\r\n\r\n", "without credentials"),
        (b"POST http://localhost:8080/ HTTP/1.1\r\n\r\n", "not 'POST'"),
        (b"GET /simple/ HTTP/1.1\r\nHost: localhost:8080\r\n\r\n", "an http:// URL"),
        (b"GET http://localhost:8080/ HTTP/2\r\n\r\n", "HTTP/1.x request line"),
        (b"GET http://localhost:8080/ HTTP/1.1\r\nA: b\r\n c\r\n\r\n", "folded"),
        (b"GET http://localhost:8080/ HTTP/1.1\r\nContent-Length: 5\r\n\r\n", "no body"),
        (b"GET http://localhost:8080/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", "no body"),
        (b"GET http://localhost:8080/\0 HTTP/1.1\r\n\r\n", "NUL"),
        (b"GET http://localhost:8080/ HTTP/1.1\r\nA: b\rProxy-Authorization: x\r\n\r\n", "bare CR"),
        (b"GET http://localhost:8080/\xff HTTP/1.1\r\n\r\n", "not ASCII"),
        (b"GET http://localhost:port/ HTTP/1.1\r\n\r\n", "not a URL"),
    ],
)
def test_every_other_plain_request_is_refused(head: bytes, said: str) -> None:
    with pytest.raises(Refused, match=said):
        parse_forward(head, TRIAL)


class _Index(http.server.BaseHTTPRequestHandler):
    seen: ClassVar[list[tuple[str, str | None]]] = []

    def do_GET(self) -> None:
        self.seen.append((self.path, self.headers.get("Host")))
        body = b"<a href='six-1.0-py3-none-any.whl'>six</a>"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def index() -> Iterator[int]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Index)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def _ask(path: Path, head: bytes) -> bytes:
    with socket.socket(socket.AF_UNIX) as client:
        client.settimeout(10)
        client.connect(str(path))
        client.sendall(head)
        answer = b""
        while chunk := client.recv(65536):
            answer += chunk
    return answer


def test_the_proxy_forwards_the_trial_index_and_nothing_else(tmp_path: Path, index: int) -> None:
    _Index.seen = []
    proxy = EgressProxy(tmp_path, trial=[("localhost", index)])
    gate = proxy.open(["localhost"], [index])
    try:
        socket_path = gate.directory / SOCKET_NAME
        asked = f"GET http://localhost:{index}/simple/six/ HTTP/1.1\r\n\r\n".encode()
        answer = _ask(socket_path, asked)
        assert answer.startswith(b"HTTP/1.0 200") and answer.endswith(b"six</a>"), answer
        assert _Index.seen == [("/simple/six/", f"localhost:{index}")]
        other = _ask(socket_path, b"GET http://localhost:1/ HTTP/1.1\r\n\r\n")
        assert other.startswith(b"HTTP/1.1 403") and b"trial index" in other
        # a CONNECT to the same loopback port is refused as before: loopback is never public
        tunnel = _ask(socket_path, f"CONNECT localhost:{index} HTTP/1.1\r\n\r\n".encode())
        assert tunnel.startswith(b"HTTP/1.1 403"), tunnel
    finally:
        connections = proxy.close_gate(gate)
        proxy.close()
    assert [(c.host, c.allowed) for c in connections] == [
        ("localhost", True),
        ("", False),
        ("localhost", False),
    ]
    assert connections[0].address == "127.0.0.1" and connections[0].received > 0


def test_without_a_trial_a_plain_request_is_refused_as_ever(tmp_path: Path, index: int) -> None:
    _Index.seen = []
    proxy = EgressProxy(tmp_path)
    gate = proxy.open(["localhost"], [index])
    try:
        asked = f"GET http://localhost:{index}/simple/ HTTP/1.1\r\n\r\n".encode()
        answer = _ask(gate.directory / SOCKET_NAME, asked)
    finally:
        proxy.close_gate(gate)
        proxy.close()
    assert answer.startswith(b"HTTP/1.1 403") and b"only CONNECT is proxied" in answer
    assert _Index.seen == []
