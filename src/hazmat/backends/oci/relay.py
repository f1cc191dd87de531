"""A sandbox's three pipes as one socket that carries Docker's multiplexed stream, so that the
direct OCI tier (backends/oci/driver.py) drives its sandboxes with the same pump, markers and caps
as the Docker backend (backends/container/stream.py).

The runtime gives the sandbox plain pipes: stdin, stdout, stderr. Two threads copy between
them and one end of a socket pair: what the host writes on the socket goes to stdin (and the
host's shutdown of its write side closes stdin), and each read from stdout or stderr comes
back as one frame (stream id 1 or 2, three zero bytes, big-endian length). Once both output
pipes have ended, the socket's write side is shut, which the pump reads as the end of the
stream. Nothing the sandbox writes can forge a frame: the framing is added here, outside it.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import socket
import struct
import threading

__all__ = ["Relay"]

_HEADER = struct.Struct(">BxxxL")
_CHUNK = 256 * 1024


class Relay:
    """`sock` is the host's end: write stdin to it, read framed stdout/stderr from it."""

    def __init__(self, stdin: int, stdout: int, stderr: int) -> None:
        self.sock, self._peer = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self._stdin = stdin
        self._outputs = {stdout: 1, stderr: 2}
        self._closed = False
        self._threads = [
            threading.Thread(target=self._copy_in, name="hazmat-oci-in", daemon=True),
            threading.Thread(target=self._copy_out, name="hazmat-oci-out", daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    def _copy_in(self) -> None:
        try:
            while data := self._peer.recv(_CHUNK):
                view = memoryview(data)
                while view:
                    view = view[os.write(self._stdin, view) :]
        except OSError:
            pass  # the sandbox closed its stdin, or the host closed the relay
        finally:
            with contextlib.suppress(OSError):
                os.close(self._stdin)

    def _copy_out(self) -> None:
        with selectors.DefaultSelector() as sel:
            for fd in self._outputs:
                sel.register(fd, selectors.EVENT_READ)
            try:
                while sel.get_map():
                    for key, _ in sel.select():
                        fd = int(key.fd)
                        data = os.read(fd, _CHUNK)
                        if not data:
                            sel.unregister(fd)
                            os.close(fd)
                            continue
                        self._peer.sendall(_HEADER.pack(self._outputs[fd], len(data)) + data)
            except OSError:
                pass  # the host closed the relay
            finally:
                for key in list(sel.get_map().values()):
                    with contextlib.suppress(OSError):
                        os.close(int(key.fd))
                with contextlib.suppress(OSError):
                    self._peer.shutdown(socket.SHUT_WR)

    def close(self) -> None:
        """Close both ends; the threads end at their next read or write."""
        if self._closed:
            return
        self._closed = True
        for end in (self.sock, self._peer):
            with contextlib.suppress(OSError):
                end.shutdown(socket.SHUT_RDWR)
            end.close()
