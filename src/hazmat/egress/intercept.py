"""A tunnel to a host that a run's secret is for (egress/secrets.py): the proxy ends the
program's TLS itself, with a certificate for that host from its own CA (egress/authority.py),
and carries one HTTP/1.1 request to the host over TLS of its own, checked against the host's
real certificate. On the way it

- refuses a request for any other host (its `Host` must be the tunnel's host and port, its
  target a path: a second host behind the same address never gets the secret);
- sets the secret's header (any the program sent under that name is dropped), asks for an
  uncompressed answer, and closes after one exchange (a new request is a new tunnel, checked
  again);
- replaces the secret's value, wherever it appears in the answer's headers and body, by as many
  `*`: a host that echoes the request back shows the program nothing. A host that sends it
  back altered (compressed though asked not to, encoded, split) is not caught:
  docs/security.md says so.

Redirects are the program's to follow, each a new tunnel to its own host; the proxy never
follows one, so the secret goes only where the policy names.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Sequence
from typing import Any

import h11

from hazmat.egress.rules import Refused
from hazmat.egress.secrets import HeldSecret

__all__ = ["Scrubber", "exchange", "upstream_context"]

STEP_TIMEOUT_S = 10.0
CHUNK = 65536
_DROPPED = frozenset({b"connection", b"keep-alive", b"proxy-connection", b"proxy-authorization",
                      b"te", b"upgrade", b"accept-encoding", b"expect"})  # fmt: skip


def upstream_context(cafile: str | None = None) -> ssl.SSLContext:
    """How the proxy checks the host's certificate: the system's CAs (or `cafile`'s)."""
    context = ssl.create_default_context(cafile=cafile)
    context.set_alpn_protocols(["http/1.1"])
    return context


class _Tls:
    """TLS as a server on a stream whose first bytes (the ClientHello) were read already."""

    def __init__(
        self,
        context: ssl.SSLContext,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        first: bytes,
    ) -> None:
        self._in, self._out = ssl.MemoryBIO(), ssl.MemoryBIO()
        self._tls = context.wrap_bio(self._in, self._out, server_side=True)
        self._in.write(first)
        self._reader, self._writer = reader, writer

    async def handshake(self) -> None:
        while True:
            try:
                self._tls.do_handshake()
                await self._flush()
                return
            except ssl.SSLWantReadError:
                await self._flush()
                if not await self._fill():
                    raise Refused("the client ended its TLS handshake") from None
            except ssl.SSLError as exc:
                await self._flush()  # the alert, so the client says why
                raise Refused(f"the TLS handshake failed ({exc.reason})") from None

    async def read(self) -> bytes:
        """The next bytes the client sent, b"" at its end."""
        while True:
            try:
                return self._tls.read(CHUNK)
            except ssl.SSLWantReadError:
                await self._flush()
                if not await self._fill():
                    return b""
            except (ssl.SSLZeroReturnError, ssl.SSLEOFError):
                return b""

    async def write(self, data: bytes) -> None:
        if data:
            self._tls.write(data)
        await self._flush()

    async def _flush(self) -> None:
        data = self._out.read()
        if data:
            self._writer.write(data)
            await self._writer.drain()

    async def _fill(self) -> bool:
        data = await self._reader.read(CHUNK)
        if not data:
            self._in.write_eof()
            return False
        self._in.write(data)
        return True


class Scrubber:
    """Replaces each of `needles` by as many `*` in a stream given in parts, holding back what
    could be the start of one until the next part (or the end) says."""

    def __init__(self, needles: Sequence[bytes]) -> None:
        self._needles = sorted({n for n in needles if n}, key=len, reverse=True)
        self._keep = max((len(n) for n in self._needles), default=1) - 1
        self._held = b""

    def whole(self, data: bytes) -> bytes:
        for needle in self._needles:
            data = data.replace(needle, b"*" * len(needle))
        return data

    def part(self, data: bytes) -> bytes:
        data = self.whole(self._held + data)
        cut = max(0, len(data) - self._keep)
        self._held = data[cut:]
        return data[:cut]

    def end(self) -> bytes:
        held, self._held = self._held, b""
        return self.whole(held)


async def exchange(
    context: ssl.SSLContext,
    client: tuple[asyncio.StreamReader, asyncio.StreamWriter, bytes],
    upstream: tuple[asyncio.StreamReader, asyncio.StreamWriter],
    secret: HeldSecret,
    port: int,
    state: dict[str, Any],
) -> None:
    """One request from the program (`client`: its streams and its ClientHello) to the host
    (`upstream`, TLS already), with the secret added; the answer back, scrubbed."""
    tls = _Tls(context, *client)
    async with asyncio.timeout(STEP_TIMEOUT_S):
        await tls.handshake()
    ours, theirs = h11.Connection(h11.SERVER), h11.Connection(h11.CLIENT)
    up_reader, up_writer = upstream
    try:
        async with asyncio.timeout(STEP_TIMEOUT_S):
            request = await _event(ours, tls.read)
        if not isinstance(request, h11.Request):
            raise Refused("the program sent no HTTP request in the tunnel")
        _check_target(request, secret.host, port)
    except Refused as refused:  # said in the tunnel, as the proxy says it outside one
        await _refuse(ours, tls, str(refused))
        raise
    headers = [(n, v) for n, v in request.headers if n.lower() not in _DROPPED]
    headers = [(n, v) for n, v in headers if n.lower() != secret.header.lower().encode()]
    headers.append((secret.header.encode(), secret.header_value))
    headers += [(b"accept-encoding", b"identity"), (b"connection", b"close")]
    asked = h11.Request(method=request.method, target=request.target, headers=headers)
    up_writer.write(theirs.send(asked) or b"")
    state["secret"] = secret.name
    while not isinstance(event := await _event(ours, tls.read), h11.EndOfMessage):
        if isinstance(event, h11.ConnectionClosed):
            raise Refused("the program closed the tunnel in the middle of its request")
        if isinstance(event, h11.Data):
            state["sent"] += len(event.data)
            up_writer.write(theirs.send(event) or b"")
    up_writer.write(theirs.send(h11.EndOfMessage()) or b"")
    await up_writer.drain()
    await _answer(ours, theirs, tls, up_reader, secret, state)


async def _answer(
    ours: h11.Connection,
    theirs: h11.Connection,
    tls: _Tls,
    up_reader: asyncio.StreamReader,
    secret: HeldSecret,
    state: dict[str, Any],
) -> None:
    scrub = Scrubber(secret.hidden)

    async def upstream_read() -> bytes:
        data = await up_reader.read(CHUNK)
        state["received"] += len(data)
        return data

    while True:
        event = await _event(theirs, upstream_read)
        if isinstance(event, h11.InformationalResponse):
            continue  # 100 Continue: the whole request was sent already
        if isinstance(event, h11.Response):
            headers = [(n, scrub.whole(v)) for n, v in event.headers if n.lower() not in _DROPPED]
            headers.append((b"connection", b"close"))
            reason = scrub.whole(event.reason)
            answer = h11.Response(status_code=event.status_code, headers=headers, reason=reason)
            await tls.write(ours.send(answer) or b"")
        elif isinstance(event, h11.Data):
            await tls.write(ours.send(h11.Data(data=scrub.part(event.data))) or b"")
        else:  # the end of the answer, or of the connection
            rest = scrub.end()
            if rest:
                await tls.write(ours.send(h11.Data(data=rest)) or b"")
            if isinstance(event, h11.EndOfMessage):
                await tls.write(ours.send(h11.EndOfMessage()) or b"")
            return


async def _refuse(ours: h11.Connection, tls: _Tls, reason: str) -> None:
    """A 403 saying why, if the program's request can still get an answer."""
    if ours.our_state is not h11.SEND_RESPONSE:
        return
    body = f"hazmat: {reason}\n".encode()
    headers = [(b"content-type", b"text/plain"), (b"content-length", str(len(body)).encode()),
               (b"connection", b"close")]  # fmt: skip
    try:
        data = ours.send(h11.Response(status_code=403, headers=headers)) or b""
        data += (ours.send(h11.Data(data=body)) or b"") + (ours.send(h11.EndOfMessage()) or b"")
    except h11.LocalProtocolError:
        return
    await tls.write(data)


async def _event(connection: h11.Connection, read: Any) -> Any:
    """The next h11 event of `connection`, reading with `read` as it needs; a malformed
    message is refused."""
    while True:
        try:
            event = connection.next_event()
        except h11.RemoteProtocolError as exc:
            raise Refused(f"a malformed HTTP message ({exc})") from None
        if event is not h11.NEED_DATA:
            return event
        connection.receive_data(await read())


def _check_target(request: h11.Request, host: str, port: int) -> None:
    """The request must be for the tunnel's host (and port), by a path."""
    if not request.target.startswith(b"/"):
        raise Refused("a request in a secret's tunnel must name a path, not a URL")
    found = {name.lower(): value for name, value in request.headers}.get(b"host", b"")
    named = found.decode("ascii", "replace")
    name, _, given = named.lower().partition(":")
    if name != host or (given and given != str(port)):
        raise Refused(f"the request's Host {named[:64]!r} is not the tunnel's host {host}:{port}")
