"""TLS test servers on loopback addresses, with a CA made for the test session, and a client
that talks to the allowlist proxy's unix socket the way the relay in a container does."""

from __future__ import annotations

import datetime
import http.server
import ipaddress
import socket
import ssl
import threading
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from hazmat.egress.proxy import EgressProxy

NAMES = ["allowed.test", "other.test", "api.mirror.test"]


@dataclass
class TLSServer:
    address: str
    port: int
    ca_pem: bytes
    handled: list[str]  # the server name of every completed handshake

    def client_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(cadata=self.ca_pem.decode())
        return context


def certificates(directory: Path) -> tuple[bytes, Path, Path]:
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "hazmat test CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, NAMES[0])]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.DNSName(n) for n in NAMES]), critical=False
        )
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), False
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), False)
        .sign(ca_key, hashes.SHA256())
    )
    cert_path, key_path = directory / "server.pem", directory / "server.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return ca.public_bytes(serialization.Encoding.PEM), cert_path, key_path


def _serve(listener: socket.socket, context: ssl.SSLContext, handled: list[str]) -> None:
    while True:
        try:
            raw, _ = listener.accept()
        except OSError:
            return
        threading.Thread(target=_answer, args=(raw, context, handled), daemon=True).start()


def _answer(raw: socket.socket, context: ssl.SSLContext, handled: list[str]) -> None:
    seen: list[str] = []

    def sni(sock: ssl.SSLObject | ssl.SSLSocket, name: str | None, _: object) -> None:
        seen.append(name or "")

    context.sni_callback = sni  # type: ignore[assignment]
    try:
        with context.wrap_socket(raw, server_side=True) as tls:
            handled.append(seen[0] if seen else "")
            request = tls.recv(4096)
            body = b"hello from " + (seen[0] if seen else "").encode() + b": " + request
            if request.startswith(b"GET "):  # an HTTP client gets an HTTP answer
                line = request.split(b"\r\n", 1)[0]
                body = b"hello from " + (seen[0] if seen else "").encode() + b": " + line
                head = f"HTTP/1.1 200 OK\r\nContent-Length: {len(body)}\r\n"
                body = head.encode() + b"Connection: close\r\n\r\n" + body
            tls.sendall(body)
    except (OSError, ssl.SSLError):
        raw.close()


def connect_through(socket_path: Path, target: str) -> tuple[socket.socket, bytes]:
    """Send `CONNECT target` to the proxy; the socket and the proxy's answer head."""
    sock = socket.socket(socket.AF_UNIX)
    sock.settimeout(10)
    sock.connect(str(socket_path))
    sock.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode("latin-1"))
    return sock, read_head(sock)


def read_head(sock: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(4096)
        if not chunk:
            break
        data += chunk
    return data


Routes = dict[str, tuple[dict[str, str], bytes]]  # path -> (headers, body)


def https_server(
    directory: Path, routes: Routes, plain: bool = False
) -> tuple[http.server.HTTPServer, bytes, Counter[str]]:
    """An HTTP server over TLS on 127.0.0.2 (a port of its own) with a CA made for it, that
    answers a GET of each path in `routes` (read at each request: it may be filled once the
    port is known) and 404 otherwise: the server, the CA, and each path's GETs so far. With
    `plain`, plain HTTP on 127.0.0.1 (a trial index on loopback)."""
    ca_pem, cert, key = certificates(directory)
    requests: Counter[str] = Counter()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            requests[self.path] += 1
            headers, body = routes.get(self.path, ({}, b""))
            self.send_response(200 if self.path in routes else 404)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1" if plain else "127.0.0.2", 0), Handler)
    if not plain:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(cert, key)
        server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, ca_pem, requests


def mirror_proxy() -> EgressProxy:
    """The allowlist proxy as the install tests' sandboxes use it: every name resolves to
    127.0.0.2 (where https_server listens), declared reachable as a mirror's address is."""
    return EgressProxy(
        resolver=lambda host, _: ["127.0.0.2"], reachable=[ipaddress.ip_network("127.0.0.2/32")]
    )


def start_servers(directory: Path) -> tuple[dict[str, TLSServer], list[socket.socket]]:
    """A TLS server on 127.0.0.2 (the tests' "public" host) and one on 127.0.0.1."""
    ca_pem, cert, key = certificates(directory)
    servers: dict[str, TLSServer] = {}
    listeners = []
    for address in ("127.0.0.2", "127.0.0.1"):
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(cert, key)
        listener = socket.socket()
        listener.bind((address, 0))
        listener.listen(64)
        handled: list[str] = []
        threading.Thread(target=_serve, args=(listener, context, handled), daemon=True).start()
        servers[address] = TLSServer(address, listener.getsockname()[1], ca_pem, handled)
        listeners.append(listener)
    return servers, listeners


@dataclass
class EchoServer:
    """An HTTPS server on 127.0.0.2 (the names of `certificates`) that answers each request
    with its head as the body and its Authorization in an `X-Echo` header; `/redirect` sends
    the client to `https://other.test:<port>/` instead. `seen` holds every request's head."""

    port: int
    ca_pem: bytes
    seen: list[str]
    server: http.server.HTTPServer


def echo_server(directory: Path) -> EchoServer:
    ca_pem, cert, key = certificates(directory)
    seen: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            head = f"{self.requestline}\r\n{self.headers}"
            seen.append(head)
            port = self.server.server_address[1]
            body = head.encode()
            self.send_response(302 if self.path == "/redirect" else 200)
            if self.path == "/redirect":
                self.send_header("Location", f"https://other.test:{port}/")
            self.send_header("X-Echo", self.headers.get("Authorization", "-"))
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.2", 0), Handler)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return EchoServer(server.server_address[1], ca_pem, seen, server)
