"""`hazmat server console`: the console of the user's local server, in a browser.

The local server listens on a unix socket only (cli/local_server.py), which a browser cannot
reach; this command forwards a loopback TCP port to it, byte for byte, until it is stopped
(Ctrl-C), starting the server again if it stopped for being idle. The console asks for the
server's key, which stays in its private file; another user of the machine who reaches the
port has no key, and gets only the page that asks for one."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import signal
import sys
from collections.abc import Callable
from pathlib import Path

from hazmat._exceptions import HazmatError, InputError

__all__ = ["forward", "run"]

CHUNK = 65536


def run(args: argparse.Namespace) -> int:
    from hazmat.cli.local_server import LocalServer, say

    server = LocalServer()
    server.ensure(say, args.policy)
    # the server stops by itself when idle: a connection that finds it gone starts it again
    again = functools.partial(server.ensure, say, args.policy)
    return asyncio.run(forward(server.socket, args.port, server.key_file, again))


async def forward(
    socket_path: Path, port: int, key_file: Path, restart: Callable[[], object] | None = None
) -> int:
    """Serve 127.0.0.1:`port` (0: any free port) as `socket_path`, until SIGINT or SIGTERM;
    `restart` (blocking) starts what listens there again when a connection finds nothing."""

    async def connected(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            upstream_reader, upstream_writer = await _open(socket_path, restart)
        except (OSError, HazmatError):
            writer.close()
            return
        await asyncio.gather(
            _pipe(reader, upstream_writer), _pipe(upstream_reader, writer), return_exceptions=True
        )

    try:
        listener = await asyncio.start_server(connected, "127.0.0.1", port)
    except OSError as exc:
        raise InputError(
            f"cannot listen on 127.0.0.1:{port}: {exc.strerror or exc}; choose another --port "
            "(0: any free one)"
        ) from None
    bound = listener.sockets[0].getsockname()[1]
    print(
        f"hazmat: the console of your local server: http://127.0.0.1:{bound}/console\n"
        f"hazmat: sign in with the key in {key_file}; Ctrl-C stops this (not the server)",
        flush=True,
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    async with listener:
        await stop.wait()
    print("hazmat: console stopped", file=sys.stderr)
    return 0


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
