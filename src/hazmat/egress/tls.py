"""The server name a TLS client asks for, read from its ClientHello before anything is sent
upstream (RFC 8446 4.1.2 and RFC 6066 3).

`server_name(data)` takes the bytes the client sent so far and returns the name, None when
more bytes are needed, or raises Refused: not TLS, not a ClientHello, no server_name
extension, a malformed one, or a hello over 64 KiB. The handshake message may span several
records. The proxy compares the name with the CONNECT host, so a program cannot ask the proxy
for an allowed host and then present another name to a shared front end (domain fronting).
"""

from __future__ import annotations

from typing import NoReturn

from hazmat.egress.rules import Refused

__all__ = ["MAX_HELLO", "server_name"]

MAX_HELLO = 64 * 1024
_HANDSHAKE, _CLIENT_HELLO, _SERVER_NAME, _HOST_NAME = 22, 1, 0, 0


def server_name(data: bytes) -> str | None:
    message = _handshake(data)
    if message is None:
        return None
    return _sni(message)


def _handshake(data: bytes) -> bytes | None:
    """The first handshake message, joined from its records; None if incomplete."""
    body = b""
    pos = 0
    while True:
        if len(data) - pos < 5:
            return None if len(data) < MAX_HELLO else _refuse("the ClientHello is too long")
        if data[pos] != _HANDSHAKE or data[pos + 1] != 3:
            _refuse("not a TLS handshake")
        length = int.from_bytes(data[pos + 3 : pos + 5], "big")
        if length == 0 or length > 16384 + 256:
            _refuse("a malformed TLS record")
        if len(data) - pos - 5 < length:
            return None
        body += data[pos + 5 : pos + 5 + length]
        pos += 5 + length
        if len(body) >= 4:
            if body[0] != _CLIENT_HELLO:
                _refuse("the first TLS message is not a ClientHello")
            need = 4 + int.from_bytes(body[1:4], "big")
            if need > MAX_HELLO:
                _refuse("the ClientHello is too long")
            if len(body) >= need:
                return body[4:need]


def _sni(hello: bytes) -> str:
    reader = _Reader(hello)
    reader.take(2 + 32)  # legacy_version, random
    reader.take(reader.int(1))  # legacy_session_id
    reader.take(reader.int(2))  # cipher_suites
    reader.take(reader.int(1))  # legacy_compression_methods
    if reader.left() == 0:
        _refuse("the ClientHello has no server_name")
    extensions = _Reader(reader.take(reader.int(2)))
    names: list[str] = []
    while extensions.left():
        kind = extensions.int(2)
        data = extensions.take(extensions.int(2))
        if kind == _SERVER_NAME:
            if names:
                _refuse("the ClientHello has two server_name extensions")
            names = _names(data)
    if len(names) != 1:
        _refuse("the ClientHello has no server_name" if not names else "several server names")
    return names[0]


def _names(data: bytes) -> list[str]:
    outer = _Reader(data)
    entries = _Reader(outer.take(outer.int(2)))
    if outer.left():
        _refuse("a malformed server_name extension")
    names = []
    while entries.left():
        kind = entries.int(1)
        name = entries.take(entries.int(2))
        if kind != _HOST_NAME:
            _refuse("an unknown server name type")
        try:
            names.append(name.decode("ascii"))
        except UnicodeDecodeError:
            _refuse("a server name that is not ASCII")
    return names


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def left(self) -> int:
        return len(self.data) - self.pos

    def take(self, n: int) -> bytes:
        if n > self.left():
            _refuse("a truncated ClientHello")
        chunk = self.data[self.pos : self.pos + n]
        self.pos += n
        return chunk

    def int(self, size: int) -> int:
        return int.from_bytes(self.take(size), "big")


def _refuse(reason: str) -> NoReturn:
    raise Refused(reason)
