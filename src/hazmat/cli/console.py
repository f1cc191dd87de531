"""`hazmat server console`: the console of the user's local server, in a browser.

The local server listens on a unix socket only (cli/local_server.py), which a browser cannot
reach; this command forwards a loopback TCP port to it, byte for byte, until it is stopped
(Ctrl-C), starting the server again if it stopped for being idle.

Any local user can connect to a loopback port, so the forwarder is careful with what connects:

- it takes the port on every loopback address (127.0.0.1 and ::1), or does not start, so that
  no other user's program answers a browser that tries the other one (loopback.py);
- it serves only the user who started it: the peer of each connection is looked up in the
  kernel's table of sockets when it is accepted, and another user's connection is closed at
  once, before a byte of it is read, holding nothing (loopback.py says why this holds);
- a connection reaches the server only once its first bytes came, within `FIRST_BYTES_S`: an
  idle connection holds none of the server's connections, keeps no server running, and starts
  none again;
- at most `MAX_UPSTREAM` connections reach the server at once (the others wait for a place),
  so that the forwarder never takes more than that of the server's connection limit
  (guard.py's 256): the CLI, on the unix socket, keeps the rest.

The console asks for the server's key, which stays in its private file.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import os
import signal
import socket
import sys
from collections.abc import Callable
from pathlib import Path

from hazmat._exceptions import HazmatError

__all__ = ["FIRST_BYTES_S", "MAX_UPSTREAM", "Forwarder", "forward", "run"]

CHUNK = 65536
FIRST_BYTES_S = 10.0  # as the server's own deadline for a request's head
MAX_UPSTREAM = 32  # connections to the server at once; its limit is 256 (guard.py)


def run(args: argparse.Namespace) -> int:
    from hazmat.cli.local_server import LocalServer, say
    from hazmat.cli.loopback import listen

    sockets = listen(args.port)  # before the server: a port another holds starts nothing
    server = LocalServer()
    try:
        server.ensure(say, args.policy)
    except BaseException:
        for sock in sockets:
            sock.close()
        raise
    # the server stops by itself when idle: a request that finds it gone starts it again
    again = functools.partial(server.ensure, say, args.policy)
    return asyncio.run(forward(server.socket, sockets, server.key_file, again))


async def forward(
    socket_path: Path,
    sockets: list[socket.socket],
    key_file: Path,
    restart: Callable[[], object] | None = None,
) -> int:
    """Serve the listening `sockets` as `socket_path`, until SIGINT or SIGTERM; `restart`
    (blocking) starts what listens there again when a request finds nothing."""
    forwarder = Forwarder(socket_path, restart)
    listeners = [await asyncio.start_server(forwarder.connected, sock=s) for s in sockets]
    bound = sockets[0].getsockname()[1]
    print(
        f"hazmat: the console of your local server: http://127.0.0.1:{bound}/console\n"
        f"hazmat: sign in with the key in {key_file}; Ctrl-C stops this (not the server)",
        flush=True,
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    try:
        await stop.wait()
    finally:
        for listener in listeners:  # connections in progress end with the loop
            listener.close()
    print("hazmat: console stopped", file=sys.stderr)
    return 0


class Forwarder:
    """What each accepted connection gets: refused unless it is the user's; forwarded to the
    server once its first bytes came, within a budget of `MAX_UPSTREAM` at once."""

    def __init__(self, socket_path: Path, restart: Callable[[], object] | None) -> None:
        self.socket_path = socket_path
        self.restart = restart
        self.places = asyncio.Semaphore(MAX_UPSTREAM)
        self.refused: set[int | None] = set()  # said once per uid

    async def connected(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            if not self._mine(writer):
                return
            try:
                first = await asyncio.wait_for(reader.read(CHUNK), FIRST_BYTES_S)
            except (TimeoutError, OSError):
                return
            if first:
                async with self.places:
                    await self._through(first, reader, writer)
        finally:
            with contextlib.suppress(OSError):
                writer.close()

    def _mine(self, writer: asyncio.StreamWriter) -> bool:
        from hazmat.cli.loopback import peer_uid

        uid = peer_uid(writer.get_extra_info("socket"))
        if uid == os.geteuid():
            return True
        if uid not in self.refused and len(self.refused) < 64:
            self.refused.add(uid)
            who = "a process no longer there" if uid is None else f"uid {uid}"
            print(
                f"hazmat: refused a connection from {who}: the console serves only uid "
                f"{os.geteuid()}, who started it",
                file=sys.stderr,
                flush=True,
            )
        return False

    async def _through(
        self, first: bytes, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        try:
            upstream_reader, upstream_writer = await _open(self.socket_path, self.restart)
        except (OSError, HazmatError):
            return
        upstream_writer.write(first)
        await asyncio.gather(
            _pipe(reader, upstream_writer), _pipe(upstream_reader, writer), return_exceptions=True
        )


async def _open(
    socket_path: Path, restart: Callable[[], object] | None
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    try:
        return await asyncio.open_unix_connection(socket_path)
    except OSError:
        if restart is None:
            raise
    await asyncio.to_thread(restart)
    return await asyncio.open_unix_connection(socket_path)


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while chunk := await reader.read(CHUNK):
            writer.write(chunk)
            await writer.drain()
    finally:
        with contextlib.suppress(OSError):
            writer.close()
