"""Fixtures for the allowlist proxy's tests: TLS servers on loopback addresses (tls_servers.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from tls_servers import TLSServer, connect_through, start_servers


@pytest.fixture(scope="session")
def tls_servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, TLSServer]]:
    servers, listeners = start_servers(tmp_path_factory.mktemp("tls"))
    yield servers
    for listener in listeners:
        listener.close()


@pytest.fixture
def connect() -> Callable[..., object]:
    return connect_through
