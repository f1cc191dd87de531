"""The engine client at the boundary: a stopped engine is a clear error and costs nothing."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from hazmat import EngineUnavailable
from hazmat.backends.container.engine import Engine


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.parametrize("kind", ["no socket", "nobody listens"])
def test_a_stopped_engine_is_a_clear_error_and_leaves_no_socket_open(
    tmp_path: Path, kind: str
) -> None:
    """docker-py leaves the socket of a failed connect open: a process that keeps trying a
    stopped engine (a service, a user's loop) ran out of descriptors."""
    path = tmp_path / "docker.sock"
    if kind == "nobody listens":  # a socket file left by an engine that was killed
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as gone:
            gone.bind(str(path))
    before = open_fds()
    for _ in range(20):
        engine = Engine(f"unix://{path}")
        with pytest.raises(EngineUnavailable, match="cannot reach the Docker engine") as caught:
            engine.api.ping()
        engine.close()
    reason = "No such file or directory" if kind == "no socket" else "Connection refused"
    assert reason in str(caught.value)
    assert open_fds() == before
