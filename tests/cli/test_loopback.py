"""Who is at the other end of a connection to the console's loopback port (cli/loopback.py),
with real sockets of this process (another user's are tests/cli/test_local_server_users.py's)."""

from __future__ import annotations

import os
import socket

from hazmat.cli.loopback import peer_uid


def _pair(family: int, host: str, client_family: int, client_host: str) -> int | None:
    with socket.socket(family, socket.SOCK_STREAM) as listener:
        listener.bind((host, 0))
        listener.listen(1)
        with socket.socket(client_family, socket.SOCK_STREAM) as client:
            if client_family == socket.AF_INET6:
                client.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
            client.connect((client_host, listener.getsockname()[1]))
            accepted, _ = listener.accept()
            with accepted:
                return peer_uid(accepted)


def test_the_peer_of_a_loopback_connection_is_its_user() -> None:
    assert _pair(socket.AF_INET, "127.0.0.1", socket.AF_INET, "127.0.0.1") == os.geteuid()


def test_a_dual_stack_clients_peer_is_found_in_the_v6_table() -> None:
    """A client on an IPv6 socket that reaches 127.0.0.1 through its v4-mapped address (Java's
    default, say) is listed in /proc/net/tcp6 as ::ffff:127.0.0.1: it was refused as 'a
    process no longer there'."""
    uid = _pair(socket.AF_INET, "127.0.0.1", socket.AF_INET6, "::ffff:127.0.0.1")
    assert uid == os.geteuid()
