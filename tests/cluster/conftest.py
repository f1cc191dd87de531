"""A Redis of the test's own on a unix socket in a temporary directory (Debian's redis-server;
`make test` installs it), flushed between tests."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from server_helpers import no_tracebacks

__all__ = ["no_tracebacks", "redis_client", "redis_url", "tracebacks_fail_the_test"]


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    server = shutil.which("redis-server")
    if server is None:
        pytest.fail("redis-server is missing: `make test` installs it (scripts/ensure-redis.sh)")
    folder = Path(tempfile.mkdtemp(prefix="hazmat-redis-"))
    sock = folder / "redis.sock"
    process = subprocess.Popen(
        [server, "--port", "0", "--unixsocket", str(sock), "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while not sock.exists():
        assert process.poll() is None and time.monotonic() < deadline, "redis-server did not start"
        time.sleep(0.02)
    try:
        yield f"unix://{sock}"
    finally:
        process.terminate()
        process.wait(timeout=30)
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def redis_client(redis_url: str) -> Iterator[object]:
    import redis

    client = redis.Redis.from_url(redis_url)
    client.flushall()
    yield client
    client.close()


@pytest.fixture(autouse=True)
def tracebacks_fail_the_test(no_tracebacks: None) -> None:
    """A test fails when a service it started logged a traceback (server_helpers.py)."""
