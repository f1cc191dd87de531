"""The allowlist proxy: HTTP CONNECT on a unix socket per run, on the host.

Each run with an allowlist gets a `Gate`: a directory holding `proxy.sock`, which the backend
bind-mounts read-only into the container, where a relay (socat, started by the agent) makes it
`127.0.0.1:3128` for `HTTPS_PROXY`. For every connection the proxy, in this order:

1. reads one request head (8 KiB at most, 10 s), which must be `CONNECT host:port HTTP/1.x`
   in ASCII with no NUL; the host must be a name (rules.check_host), on the run's allowlist,
   and the port one the policy allows;
2. resolves the name itself and refuses it if any address is not public (rules.check_address);
   it later connects to those addresses only, never to one the program supplied, and never
   resolves again (no DNS rebinding between the check and the connection);
3. answers `200`, reads the client's TLS ClientHello (tls.server_name) and refuses it unless
   its server name is the CONNECT host; only then connects upstream and relays bytes both ways.

A refusal before step 3 is answered `403` with the reason; after it the connection is closed.
Every connection, allowed or refused, becomes a `Connection` on its gate, which the sandbox
writes to the audit log with the run. The proxy runs on its own event loop in one daemon
thread, started with the first gate.
"""

from __future__ import annotations

import asyncio
import ipaddress
import os
import secrets
import shutil
import socket
import ssl
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hazmat.egress.authority import Authority, host_bundle
from hazmat.egress.intercept import exchange, upstream_context
from hazmat.egress.rules import (
    Address,
    Network,
    Refused,
    check_address,
    check_host,
    matches,
)
from hazmat.egress.secrets import HeldSecret
from hazmat.egress.tls import MAX_HELLO, server_name
from hazmat.egress.trial import loopback_address, parse_forward

__all__ = [
    "CA_FILE",
    "SOCKET_NAME",
    "Connection",
    "EgressProxy",
    "Gate",
    "parse_connect",
    "proxy_env",
]

SOCKET_NAME = "proxy.sock"
CA_FILE = "ca.pem"  # beside it, for a run with secrets: the host's CAs and the proxy's own
EGRESS_DIR = "/run/hazmat-egress"  # where the gate's folder is in the container
_CA_VARIABLES = ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "NODE_EXTRA_CA_CERTS",
                 "PIP_CERT", "npm_config_cafile")  # fmt: skip
HEAD_LIMIT = 8192
STEP_TIMEOUT_S = 10.0
Resolver = Callable[[str, int], Sequence[str]]


@dataclass(frozen=True)
class Connection:
    """One connection the program asked for, and what the proxy did with it."""

    host: str  # as asked (up to 255 characters), or "" when the request was unreadable
    port: int | None
    allowed: bool
    reason: str  # why it was refused, or "" when allowed
    address: str | None = None  # the address connected to
    sent: int = 0  # bytes from the program upstream, after the ClientHello was checked
    received: int = 0
    duration_ms: float = 0.0
    secret: str | None = None  # the name of the secret the proxy added (egress/secrets.py)

    def to_dict(self) -> dict[str, Any]:
        return {
            "host": self.host,
            "port": self.port,
            "allowed": self.allowed,
            "reason": self.reason,
            "address": self.address,
            "sent": self.sent,
            "received": self.received,
            "duration_ms": round(self.duration_ms, 3),
            **({"secret": self.secret} if self.secret else {}),
        }


def proxy_env(port: int, secrets: bool = False) -> dict[str, str]:
    """What the program's environment gets for a run with an allowlist: the relay's address
    under every name the common clients read (curl, Python, pip, npm, Go); with `secrets`,
    the CA bundle that holds the proxy's own CA (its gate's CA_FILE) under theirs too."""
    url = f"http://127.0.0.1:{port}"
    bundle = f"{EGRESS_DIR}/{CA_FILE}"
    trust = {name: bundle for name in _CA_VARIABLES} if secrets else {}
    return {
        **trust,
        "HTTPS_PROXY": url,
        "https_proxy": url,
        "HTTP_PROXY": url,
        "http_proxy": url,
        "ALL_PROXY": url,
        "PIP_PROXY": url,
        "npm_config_proxy": url,
        "npm_config_https_proxy": url,
        "NO_PROXY": "",
    }


def parse_connect(head: bytes) -> tuple[str, int]:
    """The host and port of a CONNECT request head; Refused for anything else."""
    if b"\0" in head:
        raise Refused("the request has a NUL byte")
    try:
        line = head.decode("ascii").split("\r\n", 1)[0]
    except UnicodeDecodeError:
        raise Refused("the request is not ASCII") from None
    parts = line.split(" ")
    if len(parts) != 3 or parts[2] not in ("HTTP/1.1", "HTTP/1.0"):
        raise Refused("not an HTTP/1.x request line")
    if parts[0] != "CONNECT":
        raise Refused(f"only CONNECT is proxied, not {parts[0][:16]!r}")
    host, colon, port = parts[1].rpartition(":")
    if not colon or not port.isdigit() or len(port) > 5 or not 0 < int(port) < 65536:
        raise Refused("the CONNECT target is not host:port")
    if host.startswith("["):
        raise Refused("an IP address, not a host name")
    return host, int(port)


@dataclass
class Gate:
    """One run's way out: its socket's directory, its allowlist and what happened."""

    directory: Path
    allow: tuple[str, ...]
    ports: tuple[int, ...]
    connections: list[Connection] = field(default_factory=list)
    server: asyncio.AbstractServer | None = None
    secrets: dict[str, HeldSecret] = field(default_factory=dict)  # by host
    tasks: set[asyncio.Task[None]] = field(default_factory=set)


class EgressProxy:
    """The proxy for one Sandbox. `resolver` and `reachable` exist for tests and for
    operators with an internal mirror on a private address; leave them alone otherwise.
    `trial`: the origins (host, port) of the policy's trial indexes on loopback, to which
    it forwards plain HTTP (`parse_forward`); none by default."""

    def __init__(
        self,
        root: Path = Path("/run/hazmat/egress"),
        *,
        resolver: Resolver | None = None,
        reachable: Sequence[Network] = (),
        trial: Sequence[tuple[str, int]] = (),
        upstream_ca: str | None = None,
    ) -> None:
        self.root = root
        self._upstream_ca = upstream_ca  # tests: their hosts' CA (else the system's)
        # made once, when a gate first holds a secret: the CA, the runs' bundle, the upstream check
        self._trust: tuple[Authority, bytes, ssl.SSLContext] | None = None
        self.trial = frozenset(trial)
        self.resolver = resolver or _resolve
        self.reachable = tuple(reachable)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def open(
        self, allow: Sequence[str], ports: Sequence[int], held: Sequence[HeldSecret] = ()
    ) -> Gate:
        """A gate for a run allowed `allow` on `ports`; with `held`, the secrets the proxy adds
        to its requests to their hosts (and their CA bundle in the gate's folder)."""
        directory = self.root / secrets.token_hex(8)
        directory.mkdir(parents=True, mode=0o755)
        directory.chmod(0o755)
        gate = Gate(directory, tuple(allow), tuple(ports), secrets={s.host: s for s in held})
        try:
            if held:
                (directory / CA_FILE).write_bytes(self._trusted()[1])
            self._call(self._listen(gate))
        except BaseException:
            shutil.rmtree(directory, ignore_errors=True)
            raise
        return gate

    def authority(self) -> Authority:
        """The proxy's own CA, made when a gate first holds a secret."""
        return self._trusted()[0]

    def _trusted(self) -> tuple[Authority, bytes, ssl.SSLContext]:
        """The CA, the bundle a run with secrets trusts (the host's CAs and it) and the
        context that checks a secret's host: each made once (files read, CAs loaded)."""
        with self._lock:
            if self._trust is None:
                authority = Authority()
                upstream = upstream_context(self._upstream_ca)
                self._trust = (authority, host_bundle() + authority.pem, upstream)
            return self._trust

    def close_gate(self, gate: Gate) -> list[Connection]:
        """Stop taking connections, end the open ones, remove the socket; the connections."""
        try:
            self._call(self._shut(gate))
        finally:
            shutil.rmtree(gate.directory, ignore_errors=True)
        return list(gate.connections)

    def close(self) -> None:
        """Stop the proxy's thread (gates still open are closed with it)."""
        with self._lock:
            loop, self._loop = self._loop, None
            thread, self._thread = self._thread, None
        if loop is None or thread is None:
            return
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        if not thread.is_alive():
            loop.close()

    def _call(self, coroutine: Any) -> Any:
        with self._lock:
            if self._loop is None:
                self._loop = asyncio.new_event_loop()
                self._thread = threading.Thread(
                    target=self._loop.run_forever, name="hazmat-egress", daemon=True
                )
                self._thread.start()
            loop = self._loop
        return asyncio.run_coroutine_threadsafe(coroutine, loop).result(timeout=30)

    async def _listen(self, gate: Gate) -> None:
        path = str(gate.directory / SOCKET_NAME)

        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            task = asyncio.current_task()
            assert task is not None
            gate.tasks.add(task)
            try:
                await self._serve(gate, reader, writer)
            finally:
                gate.tasks.discard(task)

        gate.server = await asyncio.start_unix_server(serve, path, limit=HEAD_LIMIT)
        os.chmod(path, 0o666)  # the program's uid connects through the relay

    async def _shut(self, gate: Gate) -> None:
        if gate.server is not None:
            gate.server.close()
        for task in list(gate.tasks):
            task.cancel()
        if gate.tasks:
            await asyncio.wait(list(gate.tasks), timeout=5)

    async def _serve(
        self, gate: Gate, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        began = time.monotonic()
        state: dict[str, Any] = {
            "host": "",
            "port": None,
            "address": None,
            "sent": 0,
            "received": 0,
            "answered": False,
            "secret": None,
        }
        allowed, reason = False, ""
        try:
            await self._handle(gate, reader, writer, state)
            allowed = True
        except Refused as exc:
            reason = str(exc)
            if not state["answered"]:
                writer.write(
                    b"HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\n"
                    b"Connection: close\r\n\r\nhazmat: " + reason.encode() + b"\n"
                )
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError) as exc:
            reason = f"the connection failed: {type(exc).__name__}"
            allowed = state["address"] is not None
        except asyncio.CancelledError:
            allowed = state["address"] is not None
            reason = "" if allowed else "the run ended"
        finally:
            writer.close()
            gate.connections.append(
                Connection(
                    state["host"],
                    state["port"],
                    allowed,
                    reason,
                    state["address"],
                    state["sent"],
                    state["received"],
                    (time.monotonic() - began) * 1000,
                    state["secret"],
                )
            )

    async def _handle(
        self,
        gate: Gate,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        state: dict[str, Any],
    ) -> None:
        async with asyncio.timeout(STEP_TIMEOUT_S):
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except asyncio.LimitOverrunError:
                raise Refused("the request head is over 8 KiB") from None
            except asyncio.IncompleteReadError:
                raise Refused("the request ended before its head did") from None
        if self.trial and not head.startswith(b"CONNECT "):
            await self._forward(gate, head, reader, writer, state)
            return
        raw_host, port = parse_connect(head)
        state["host"], state["port"] = raw_host[:255], port
        host = check_host(raw_host)
        state["host"] = host
        if not matches(host, gate.allow):
            raise Refused("the host is not on the allowlist")
        if port not in gate.ports:
            raise Refused(f"port {port} is not allowed (allowed: {list(gate.ports)})")
        addresses = await self._addresses(host, port)
        writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        state["answered"] = True
        hello = await self._hello(reader, host)
        held = gate.secrets.get(host)
        if held is not None:  # the proxy ends this TLS itself, to add the secret
            context = self._trusted()[2]
            upstream = await self._connect(addresses, port, state, (context, host))
            try:
                client = (reader, writer, hello)
                await exchange(self.authority().context(host), client, upstream, held, port, state)
            finally:
                upstream[1].close()
            return
        upstream_reader, upstream_writer = await self._connect(addresses, port, state)
        upstream_writer.write(hello)
        await _relay(reader, writer, upstream_reader, upstream_writer, state)

    async def _forward(
        self,
        gate: Gate,
        head: bytes,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        state: dict[str, Any],
    ) -> None:
        """A plain HTTP request for a trial index on loopback: to its loopback address (the
        name mapped here, never resolved), and nowhere else."""
        host, port, rewritten = parse_forward(head, self.trial)
        state["host"], state["port"] = host, port
        if not matches(host, gate.allow):
            raise Refused("the host is not on the allowlist")
        if port not in gate.ports:
            raise Refused(f"port {port} is not allowed (allowed: {list(gate.ports)})")
        address = ipaddress.ip_address(loopback_address(host))
        upstream_reader, upstream_writer = await self._connect([address], port, state)
        upstream_writer.write(rewritten)
        await _relay(reader, writer, upstream_reader, upstream_writer, state)

    async def _addresses(self, host: str, port: int) -> list[Address]:
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(STEP_TIMEOUT_S):
                found = await loop.run_in_executor(None, self.resolver, host, port)
        except (OSError, TimeoutError) as exc:
            raise Refused(f"the name does not resolve ({type(exc).__name__})") from None
        addresses = [ipaddress.ip_address(a) for a in dict.fromkeys(found)]
        if not addresses:
            raise Refused("the name does not resolve")
        for address in addresses:
            check_address(address, self.reachable)
        return addresses

    async def _hello(self, reader: asyncio.StreamReader, host: str) -> bytes:
        """The client's ClientHello, once its server name is checked to be `host`."""
        data = b""
        async with asyncio.timeout(STEP_TIMEOUT_S):
            while True:
                chunk = await reader.read(MAX_HELLO)
                if not chunk:
                    raise Refused("the client sent no TLS ClientHello")
                data += chunk
                name = server_name(data)
                if name is None:
                    continue
                try:
                    same = check_host(name) == host
                except Refused:
                    same = False
                if not same:
                    shown = name[:64].encode("ascii", "backslashreplace").decode()
                    raise Refused(f"the TLS server name {shown!r} is not the CONNECT host")
                return data

    async def _connect(
        self,
        addresses: list[Address],
        port: int,
        state: dict[str, Any],
        tls: tuple[ssl.SSLContext, str] | None = None,
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """A connection to the first of `addresses` that answers; with `tls`, over TLS that
        checks the host's certificate for the name given."""
        failure: Exception | None = None
        context, name = tls if tls is not None else (None, None)
        for address in addresses:
            try:
                async with asyncio.timeout(STEP_TIMEOUT_S):
                    pair = await asyncio.open_connection(
                        str(address), port, ssl=context, server_hostname=name
                    )
                state["address"] = str(address)
                return pair
            except (OSError, TimeoutError) as exc:
                failure = exc
        raise Refused(f"no address of the host answered ({type(failure).__name__})")


async def _relay(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    upstream_reader: asyncio.StreamReader,
    upstream_writer: asyncio.StreamWriter,
    state: dict[str, Any],
) -> None:
    async def pump(src: asyncio.StreamReader, dst: asyncio.StreamWriter, key: str) -> None:
        try:
            while chunk := await src.read(65536):
                dst.write(chunk)
                state[key] += len(chunk)
                await dst.drain()
            if dst.can_write_eof():
                dst.write_eof()
        except OSError:
            dst.close()

    try:
        await asyncio.gather(
            pump(reader, upstream_writer, "sent"), pump(upstream_reader, writer, "received")
        )
    finally:
        upstream_writer.close()


def _resolve(host: str, port: int) -> list[str]:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]
