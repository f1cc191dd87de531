"""The allowlist proxy on the host, against TLS servers on loopback addresses: what it lets
through, what it refuses and why, and that each connection is accounted for.

127.0.0.2 plays a public host (the proxy is told it is reachable); 127.0.0.1 stays what it
is, loopback, which the proxy refuses like any private address."""

from __future__ import annotations

import ipaddress
import socket
import ssl
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from tls_servers import TLSServer, read_head

from hazmat.egress.proxy import SOCKET_NAME, Connection, EgressProxy, Gate

HOSTS = {
    "allowed.test": ["127.0.0.2"],
    "api.mirror.test": ["127.0.0.2"],
    "other.test": ["127.0.0.2"],
    "loopback.test": ["127.0.0.1"],
    "metadata.test": ["169.254.169.254"],
    "private.test": ["10.1.2.3"],
    "mapped.test": ["::ffff:127.0.0.1"],
    "mixed.test": ["127.0.0.2", "192.168.1.1"],
}
ALLOW = (
    "allowed.test",
    "*.mirror.test",
    "loopback.test",
    "metadata.test",
    "private.test",
    "mapped.test",
    "mixed.test",
)


def _resolve(host: str, port: int) -> list[str]:
    if host not in HOSTS:
        raise socket.gaierror(socket.EAI_NONAME, "unknown")
    return HOSTS[host]


@pytest.fixture
def gate(tmp_path: Path, tls_servers: dict[str, TLSServer]) -> Iterator[tuple[EgressProxy, Gate]]:
    proxy = EgressProxy(
        tmp_path, resolver=_resolve, reachable=[ipaddress.ip_network("127.0.0.2/32")]
    )
    ports = (tls_servers["127.0.0.2"].port, tls_servers["127.0.0.1"].port)
    opened = proxy.open(ALLOW, ports)
    yield proxy, opened
    proxy.close_gate(opened)
    proxy.close()


Connect = Callable[[Path, str], tuple[socket.socket, bytes]]


def _finish(proxy: EgressProxy, gate: Gate) -> list[Connection]:
    return proxy.close_gate(gate)


def test_an_allowed_host_is_reached_over_tls(
    gate: tuple[EgressProxy, Gate], tls_servers: dict[str, TLSServer], connect: Connect
) -> None:
    proxy, opened = gate
    server = tls_servers["127.0.0.2"]
    sock, head = connect(opened.directory / SOCKET_NAME, f"allowed.test:{server.port}")
    assert head.startswith(b"HTTP/1.1 200 ")
    with server.client_context().wrap_socket(sock, server_hostname="allowed.test") as tls:
        tls.sendall(b"ping")
        assert tls.recv(100) == b"hello from allowed.test: ping"
    [record] = _finish(proxy, opened)
    assert (record.host, record.allowed, record.address) == ("allowed.test", True, "127.0.0.2")
    assert record.sent > 0 and record.received > 0


def test_a_wildcard_entry_allows_the_names_below_it(
    gate: tuple[EgressProxy, Gate], tls_servers: dict[str, TLSServer], connect: Connect
) -> None:
    _proxy, opened = gate
    server = tls_servers["127.0.0.2"]
    sock, head = connect(opened.directory / SOCKET_NAME, f"API.Mirror.test.:{server.port}")
    assert head.startswith(b"HTTP/1.1 200 ")
    with server.client_context().wrap_socket(sock, server_hostname="api.mirror.test") as tls:
        tls.sendall(b"x")
        assert tls.recv(100) == b"hello from api.mirror.test: x"


@pytest.mark.parametrize(
    ("target", "reason"),
    [
        ("other.test:{port}", "not on the allowlist"),
        ("mirror.test:{port}", "not on the allowlist"),  # *.mirror.test is not mirror.test
        ("127.0.0.2:{port}", "an IP address, not a host name"),
        ("2130706434:{port}", "an IP address, not a host name"),
        ("0x7f000002:{port}", "an IP address, not a host name"),
        ("[::1]:{port}", "an IP address, not a host name"),
        ("allowed.test\x00.evil.test:{port}", "the request has a NUL byte"),
        ("allowed.test\t:{port}", "control, space or non-ASCII"),
        ("allowed.test:22", "port 22 is not allowed"),
        ("allowed.test", "not host:port"),
        ("loopback.test:{port}", "resolves to 127.0.0.1, which is not a public address"),
        ("metadata.test:{port}", "resolves to 169.254.169.254"),
        ("private.test:{port}", "resolves to 10.1.2.3"),
        ("mapped.test:{port}", "resolves to ::ffff:7f00:1"),
        ("mixed.test:{port}", "resolves to 192.168.1.1"),
        ("nowhere.allowed.test:{port}", "not on the allowlist"),
    ],
)
def test_refused_before_anything_leaves(
    gate: tuple[EgressProxy, Gate],
    tls_servers: dict[str, TLSServer],
    connect: Connect,
    target: str,
    reason: str,
) -> None:
    proxy, opened = gate
    before = list(tls_servers["127.0.0.1"].handled), list(tls_servers["127.0.0.2"].handled)
    sock, head = connect(
        opened.directory / SOCKET_NAME, target.format(port=tls_servers["127.0.0.2"].port)
    )
    sock.close()
    assert head.startswith(b"HTTP/1.1 403 ")
    assert reason.encode() in head
    [record] = _finish(proxy, opened)
    assert not record.allowed and reason in record.reason and record.address is None
    after = list(tls_servers["127.0.0.1"].handled), list(tls_servers["127.0.0.2"].handled)
    assert before == after  # no server saw a handshake


def test_domain_fronting_is_refused(
    gate: tuple[EgressProxy, Gate], tls_servers: dict[str, TLSServer], connect: Connect
) -> None:
    """CONNECT to an allowed host, then a ClientHello for another one served at the same
    address: the proxy reads the server name before connecting and refuses."""
    proxy, opened = gate
    server = tls_servers["127.0.0.2"]
    seen = len(server.handled)
    sock, head = connect(opened.directory / SOCKET_NAME, f"allowed.test:{server.port}")
    assert head.startswith(b"HTTP/1.1 200 ")
    with pytest.raises((ssl.SSLError, OSError)):
        server.client_context().wrap_socket(sock, server_hostname="other.test")
    [record] = _finish(proxy, opened)
    assert not record.allowed
    assert "TLS server name 'other.test' is not the CONNECT host" in record.reason
    assert len(server.handled) == seen


@pytest.mark.parametrize(
    "first_bytes",
    [
        b"GET / HTTP/1.1\r\nHost: allowed.test\r\n\r\n",  # plain HTTP inside the tunnel
        b"\x16\x03\x01\x00\x05\x01\x00\x00\x01\x00",  # a ClientHello too short to be one
        b"",  # nothing at all, then the end
    ],
)
def test_a_tunnel_that_does_not_start_with_a_named_client_hello_is_closed(
    gate: tuple[EgressProxy, Gate],
    tls_servers: dict[str, TLSServer],
    connect: Connect,
    first_bytes: bytes,
) -> None:
    proxy, opened = gate
    server = tls_servers["127.0.0.2"]
    sock, head = connect(opened.directory / SOCKET_NAME, f"allowed.test:{server.port}")
    assert head.startswith(b"HTTP/1.1 200 ")
    with sock:
        sock.sendall(first_bytes)
        sock.shutdown(socket.SHUT_WR)
        assert sock.recv(100) == b""
    [record] = _finish(proxy, opened)
    assert not record.allowed and record.address is None


def test_a_tls_hello_without_a_server_name_is_refused(
    gate: tuple[EgressProxy, Gate], tls_servers: dict[str, TLSServer], connect: Connect
) -> None:
    proxy, opened = gate
    server = tls_servers["127.0.0.2"]
    sock, _head = connect(opened.directory / SOCKET_NAME, f"allowed.test:{server.port}")
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    with pytest.raises((ssl.SSLError, OSError)):
        context.wrap_socket(sock)  # no server_hostname: no SNI
    [record] = _finish(proxy, opened)
    assert "no server_name" in record.reason


@pytest.mark.parametrize(
    "request_head",
    [
        b"GET http://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n",
        b"CONNECT allowed.test:443 HTTP/2\r\n\r\n",
        b"CONNECT  allowed.test:443 HTTP/1.1\r\n\r\n",
        b"CONNECT allowed.test:443 HTTP/1.1\r\nX: " + b"a" * 9000 + b"\r\n\r\n",
        b"CONNECT \xc3\xa4llowed.test:443 HTTP/1.1\r\n\r\n",
    ],
)
def test_anything_but_a_plain_connect_is_refused(
    gate: tuple[EgressProxy, Gate], request_head: bytes
) -> None:
    proxy, opened = gate
    sock = socket.socket(socket.AF_UNIX)
    sock.settimeout(10)
    sock.connect(str(opened.directory / SOCKET_NAME))
    sock.sendall(request_head)
    assert read_head(sock).startswith(b"HTTP/1.1 403 ")
    sock.close()
    [record] = _finish(proxy, opened)
    assert not record.allowed and record.reason


def test_closing_the_gate_ends_open_tunnels_and_removes_the_socket(
    gate: tuple[EgressProxy, Gate], tls_servers: dict[str, TLSServer], connect: Connect
) -> None:
    proxy, opened = gate
    server = tls_servers["127.0.0.2"]
    sock, _ = connect(opened.directory / SOCKET_NAME, f"allowed.test:{server.port}")
    tls = server.client_context().wrap_socket(sock, server_hostname="allowed.test")
    records = _finish(proxy, opened)  # while the tunnel is open
    assert [r.allowed for r in records] == [True]
    assert not opened.directory.exists()
    tls.close()
