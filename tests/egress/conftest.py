"""Fixtures for the allowlist proxy's tests: TLS servers on loopback addresses (tls_servers.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from tls_servers import EchoServer, TLSServer, connect_through, echo_server, start_servers


@pytest.fixture(scope="session")
def tls_servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, TLSServer]]:
    servers, listeners = start_servers(tmp_path_factory.mktemp("tls"))
    yield servers
    for listener in listeners:
        listener.close()


@pytest.fixture
def connect() -> Callable[..., object]:
    return connect_through


@pytest.fixture(scope="module")
def echo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EchoServer]:
    """An HTTPS server that echoes each request (tls_servers.echo_server)."""
    served = echo_server(tmp_path_factory.mktemp("echo"))
    yield served
    served.server.shutdown()
    served.server.server_close()
