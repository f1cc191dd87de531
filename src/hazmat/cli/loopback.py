"""The console's loopback port (cli/console.py): listening on every loopback address, and who
is at the other end of a connection to it.

**Every loopback address.** A browser told `localhost` may try `::1` before `127.0.0.1`, so
the console takes the port on both; if another process holds it on either, the console does
not start (`listen`), naming the address and, where the kernel says, the holder's uid.

**Who connects.** Any local user can connect to a loopback port. The kernel records which user
made each socket: `/proc/net/tcp` and `/proc/net/tcp6` list every TCP socket of this network
namespace with its addresses, its state, the uid of the process that created it and its inode.
The peer of a connection accepted on the port is the socket whose local address is the
connection's remote one and whose remote address is the port: `peer_uid` is that socket's uid,
provided it is still open in its process (an inode; a closed socket lingering in FIN_WAIT or
TIME_WAIT is listed with uid 0 and no inode, and is nobody). Another user cannot create a
socket under someone else's uid; the lookup is made when the connection is accepted, before any
byte of it is read. Linux only, as hazmat is.
"""

from __future__ import annotations

import errno
import socket
import sys
from collections.abc import Iterator
from pathlib import Path

from hazmat._exceptions import InputError

__all__ = ["ADDRESSES", "listen", "peer_uid"]

ADDRESSES = ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1"))
TABLES: dict[int, Path] = {
    socket.AF_INET: Path("/proc/net/tcp"),
    socket.AF_INET6: Path("/proc/net/tcp6"),
}
LISTEN = "0A"
_TRIES = 20  # for --port 0: free ports until one is free on every loopback address


def listen(port: int) -> list[socket.socket]:
    """Listening sockets on `port` of every loopback address this machine has (0: one port free
    on all of them); `InputError` naming the address if another process holds it."""
    for _ in range(_TRIES if port == 0 else 1):
        bound: list[socket.socket] = []
        try:
            for family, host in ADDRESSES:
                sock = _bind(family, host, port or _port_of(bound))
                if sock is not None:
                    bound.append(sock)
        except _Taken as taken:
            for sock in bound:
                sock.close()
            if port != 0 or not bound:
                raise taken.error() from None
            continue  # the first address's free port is taken on another: another port
        return bound
    raise InputError(f"no port was free on every loopback address in {_TRIES} tries")


def peer_uid(sock: socket.socket) -> int | None:
    """The uid of the process whose socket is at the other end of the accepted loopback
    connection `sock`, if that socket is still open; None otherwise."""
    try:
        here, there = sock.getsockname(), sock.getpeername()
    except OSError:
        return None
    looks = [(sock.family, there, here)]
    if sock.family == socket.AF_INET:  # a dual-stack client's socket is in tcp6, v4-mapped
        mapped = [(f"::ffff:{host}", port) for host, port in (there, here)]
        looks.append((socket.AF_INET6, mapped[0], mapped[1]))
    for family, peer, ours in looks:
        local, remote = _entry(family, peer), _entry(family, ours)
        for fields in _table(family):
            if fields[1] == local and fields[2] == remote and fields[9] != "0":
                return int(fields[7])
    return None


def holder(family: int, host: str, port: int) -> int | None:
    """The uid of a socket listening on `host:port` (or on every address, at that port)."""
    wanted = {_entry(family, (host, port)), _entry(family, (_ANY[family], port))}
    for fields in _table(family):
        if fields[3] == LISTEN and fields[1] in wanted:
            return int(fields[7])
    other = socket.AF_INET6 if family == socket.AF_INET else socket.AF_INET
    for fields in _table(other):  # a dual-stack [::] holds 127.0.0.1's port too
        if fields[3] == LISTEN and fields[1] == _entry(other, (_ANY[other], port)):
            return int(fields[7])
    return None


_ANY: dict[int, str] = {socket.AF_INET: "0.0.0.0", socket.AF_INET6: "::"}


class _Taken(Exception):
    def __init__(self, family: int, host: str, port: int, exc: OSError) -> None:
        self.family, self.host, self.port, self.exc = family, host, port, exc

    def error(self) -> InputError:
        shown = f"[{self.host}]" if self.family == socket.AF_INET6 else self.host
        uid = holder(self.family, self.host, self.port)
        by = f" (by uid {uid})" if uid is not None else ""
        return InputError(
            f"cannot listen on {shown}:{self.port}: {self.exc.strerror or self.exc}{by}; the "
            "console must hold the port on every loopback address: choose another --port "
            "(0: any free one)"
        )


def _bind(family: int, host: str, port: int) -> socket.socket | None:
    """A socket listening on `host:port`; None if this machine has no such address (then no
    other process can hold it either); `_Taken` if it cannot be had."""
    try:
        sock = socket.socket(family, socket.SOCK_STREAM)
    except OSError as exc:
        if exc.errno == errno.EAFNOSUPPORT:
            return None
        raise _Taken(family, host, port, exc) from None
    try:
        # never SO_REUSEPORT: it would let a process of the same user share the port
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # past TIME_WAIT only
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        sock.bind((host, port))
        sock.listen(128)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRNOTAVAIL and family == socket.AF_INET6:
            return None  # no ::1 here
        raise _Taken(family, host, port, exc) from None
    sock.setblocking(False)
    return sock


def _port_of(bound: list[socket.socket]) -> int:
    return int(bound[0].getsockname()[1]) if bound else 0


def _entry(family: int, address: tuple[str, int] | tuple[str, int, int, int]) -> str:
    """An address as /proc/net/tcp{,6} writes it: the address's 32-bit words in the host's
    byte order, in hex, a colon, the port in hex."""
    packed = socket.inet_pton(family, address[0])
    words = [packed[i : i + 4] for i in range(0, len(packed), 4)]
    text = "".join(f"{int.from_bytes(word, sys.byteorder):08X}" for word in words)
    return f"{text}:{address[1]:04X}"


def _table(family: int) -> Iterator[list[str]]:
    try:
        lines = TABLES[family].read_text().splitlines()[1:]
    except OSError:
        return
    for line in lines:
        fields = line.split()
        if len(fields) >= 10:
            yield fields
