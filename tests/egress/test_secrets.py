"""Secrets that never enter the sandbox (egress/secrets.py, egress/intercept.py), at the proxy
on the host against an HTTPS server that echoes each request back (tls_servers.echo_server):
the proxy adds the secret to requests for its one host, over TLS it ends with its own CA, and
never elsewhere: not to another host, not to a second host behind the same address, not after
a redirect, not to a host whose certificate fails, not to a name that resolves to a private
address. An echo of the value comes back as `*`. The audit's record names the secret, never
its value. The policy's section, and what a run is given: below. On the engine:
tests/egress/test_sandbox_egress.py."""

from __future__ import annotations

import contextlib
import ipaddress
import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest
from tls_servers import EchoServer, connect_through

from hazmat import InfraError, PolicyError
from hazmat.egress.intercept import Scrubber
from hazmat.egress.proxy import CA_FILE, SOCKET_NAME, Connection, EgressProxy, Gate, proxy_env
from hazmat.egress.secrets import HeldSecret, Secret
from hazmat.policy.file import parse_policy

TOKEN = "s3cr3t-t0ken-for-the-tests"
HOSTS = {"allowed.test": ["127.0.0.2"], "other.test": ["127.0.0.2"], "rebound.test": ["10.9.8.7"]}
BEARER = f"Bearer {TOKEN}".encode()
SECRET = HeldSecret("github", "allowed.test", "Authorization", BEARER, (BEARER, TOKEN.encode()))
BOTH = ["allowed.test", "other.test"]
REBOUND = HeldSecret("rebound", "rebound.test", "X-Key", TOKEN.encode(), (TOKEN.encode(),))


@contextlib.contextmanager
def _opened(
    tmp_path: Path, echo: EchoServer, allow: list[str], held: list[HeldSecret], trusted: bool = True
) -> Iterator[tuple[Gate, list[Connection]]]:
    """A gate of a proxy whose hosts all resolve as HOSTS says and that trusts the echo
    server's CA (unless not `trusted`); the gate's connections, once it is closed."""
    ca = tmp_path / "upstream-ca.pem"
    ca.write_bytes(echo.ca_pem)
    proxy = EgressProxy(
        tmp_path / "egress",
        resolver=lambda host, _: HOSTS[host],
        reachable=[ipaddress.ip_network("127.0.0.2/32")],
        upstream_ca=str(ca) if trusted else None,
    )
    echo.seen.clear()
    gate = proxy.open(allow, [echo.port], held)
    connections: list[Connection] = []
    try:
        yield gate, connections
    finally:
        connections += proxy.close_gate(gate)
        proxy.close()


def _get(gate: Gate, host: str, port: int, head: str) -> bytes:
    """A GET through the gate as a program would send it: CONNECT, then TLS trusting the
    gate's CA bundle (as SSL_CERT_FILE tells the program's clients), then the request."""
    sock, answer = connect_through(gate.directory / SOCKET_NAME, f"{host}:{port}")
    assert answer.startswith(b"HTTP/1.1 200"), answer
    context = ssl.create_default_context(cafile=str(gate.directory / CA_FILE))
    with context.wrap_socket(sock, server_hostname=host) as tls:
        tls.sendall(head.encode())
        data = b""
        while chunk := tls.recv(65536):
            data += chunk
    return data


def test_the_secret_goes_to_its_host_and_its_echo_comes_back_hidden(
    tmp_path: Path, echo: EchoServer
) -> None:
    with _opened(tmp_path, echo, BOTH, [SECRET]) as (gate, connections):
        head = (
            f"GET /x HTTP/1.1\r\nHost: allowed.test:{echo.port}\r\n"
            "Authorization: Bearer the-program-s-own\r\nAccept-Encoding: gzip\r\n\r\n"
        )
        answer = _get(gate, "allowed.test", echo.port, head)
    (seen,) = echo.seen
    assert f"Authorization: Bearer {TOKEN}" in seen and "the-program-s-own" not in seen
    assert "accept-encoding: identity" in seen.lower()
    assert answer.startswith(b"HTTP/1.1 200") and TOKEN.encode() not in answer
    hidden = b"*" * len(f"Bearer {TOKEN}")  # the header's whole value, as sent
    assert b"x-echo: " + hidden in answer and b"Authorization: " + hidden in answer
    (connection,) = connections
    assert connection.allowed and connection.to_dict()["secret"] == "github"
    assert TOKEN not in repr(connection.to_dict()) and TOKEN not in repr(SECRET)


def test_never_to_another_host_nor_a_second_host_behind_the_same_address(
    tmp_path: Path, echo: EchoServer
) -> None:
    with _opened(tmp_path, echo, BOTH, [SECRET]) as (gate, connections):
        # other.test: its own tunnel, not ended by the proxy: its certificate is the host's
        sock, _ = connect_through(gate.directory / SOCKET_NAME, f"other.test:{echo.port}")
        context = ssl.create_default_context(cadata=echo.ca_pem.decode())
        with context.wrap_socket(sock, server_hostname="other.test") as tls:
            asked = f"GET / HTTP/1.1\r\nHost: other.test:{echo.port}\r\nConnection: close\r\n\r\n"
            tls.sendall(asked.encode())
            while tls.recv(65536):
                pass
        # other.test named inside allowed.test's tunnel: refused, said in the tunnel
        head = f"GET / HTTP/1.1\r\nHost: other.test:{echo.port}\r\n\r\n"
        refused = _get(gate, "allowed.test", echo.port, head)
        absolute = f"GET https://other.test:{echo.port}/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n"
        refused_too = _get(gate, "allowed.test", echo.port, absolute)
    assert len(echo.seen) == 1 and "Authorization" not in echo.seen[0]
    assert refused.startswith(b"HTTP/1.1 403") and b"is not the tunnel's host" in refused
    assert refused_too.startswith(b"HTTP/1.1 403") and b"must name a path" in refused_too
    assert [(c.host, c.allowed, c.secret) for c in connections] == [
        ("other.test", True, None),
        ("allowed.test", False, None),
        ("allowed.test", False, None),
    ]


def test_a_redirect_is_the_program_s_to_follow_without_the_secret(
    tmp_path: Path, echo: EchoServer
) -> None:
    with _opened(tmp_path, echo, BOTH, [SECRET]) as (gate, _):
        head = f"GET /redirect HTTP/1.1\r\nHost: allowed.test:{echo.port}\r\n\r\n"
        answer = _get(gate, "allowed.test", echo.port, head)
    assert answer.startswith(b"HTTP/1.1 302")
    assert f"location: https://other.test:{echo.port}/".encode() in answer
    assert len(echo.seen) == 1  # the proxy followed nothing


def test_no_secret_to_a_host_whose_certificate_fails_or_that_resolves_privately(
    tmp_path: Path, echo: EchoServer
) -> None:
    allow = ["allowed.test", "rebound.test"]
    # the system's CAs know no test CA: the host's certificate fails
    with _opened(tmp_path, echo, allow, [SECRET, REBOUND], trusted=False) as (gate, connections):
        sock, _ = connect_through(gate.directory / SOCKET_NAME, f"allowed.test:{echo.port}")
        context = ssl.create_default_context(cafile=str(gate.directory / CA_FILE))
        with sock, pytest.raises((ssl.SSLError, OSError)), context.wrap_socket(
            sock, server_hostname="allowed.test"
        ) as tls:
            tls.sendall(f"GET / HTTP/1.1\r\nHost: allowed.test:{echo.port}\r\n\r\n".encode())
            assert tls.recv(65536)  # the proxy closes: nothing was sent upstream
        other, rebound = connect_through(gate.directory / SOCKET_NAME, f"rebound.test:{echo.port}")
        other.close()
    assert echo.seen == []
    assert "SSLCertVerificationError" in connections[0].reason, connections[0]
    assert rebound.startswith(b"HTTP/1.1 403") and b"not a public address" in rebound


def test_the_scrubber_finds_a_value_split_across_parts() -> None:
    scrub = Scrubber([b"abcdef", b"Bearer abcdef"])
    parts = [b"xx Bearer ab", b"cd", b"ef yy abc", b"def", b" end"]
    out = b"".join(scrub.part(p) for p in parts) + scrub.end()
    assert out == b"xx " + b"*" * 13 + b" yy " + b"*" * 6 + b" end"
    assert len(out) == sum(map(len, parts))  # the same length: Content-Length stays true


def _secrets(entry: dict[str, object]) -> object:
    return parse_policy({"egress": {"secrets": {"github": entry}}})


BASE = {"host": "api.github.com", "from_env": "HAZMAT_TEST_TOKEN", "levels": ["trusted"]}


@pytest.mark.parametrize(
    ("change", "key"),
    [
        ({"host": "*.github.com"}, "egress.secrets.github.host"),
        ({"host": "10.0.0.1"}, "egress.secrets.github.host"),
        ({"from_env": "A-B"}, "egress.secrets.github.from_env"),
        ({"header": "Bad Header"}, "egress.secrets.github.header"),
        ({"format": "Bearer"}, "egress.secrets.github.format"),
        ({"levels": []}, "egress.secrets.github.levels"),
        ({"levels": ["root"]}, "egress.secrets.github.levels"),
        ({"value": "inline"}, "egress.secrets.github.value"),
        ({"tenants": []}, "egress.secrets.github.tenants"),
        ({"tenants": "acme"}, "egress.secrets.github.tenants"),
        ({"tenants": ["a b"]}, "egress.secrets.github.tenants"),
    ],
)
def test_a_bad_secret_is_a_policy_error_naming_its_key(change: dict[str, object], key: str) -> None:
    with pytest.raises(PolicyError, match=key.replace(".", r"\.")):
        _secrets({**BASE, **change})


def test_a_run_gets_its_level_s_secrets_for_hosts_on_its_list(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    policy = parse_policy({"egress": {"secrets": {"github": {**BASE, "format": "basic"}}}})
    assert policy.secrets_for("trusted", ["api.github.com"]) == list(policy.secrets)
    assert policy.secrets_for("trusted", ["*.github.com"]) == list(policy.secrets)
    assert policy.secrets_for("untrusted", ["api.github.com"]) == []
    assert policy.secrets_for("trusted", ["other.example"]) == []
    (secret,) = policy.secrets
    monkeypatch.delenv("HAZMAT_TEST_TOKEN", raising=False)
    with pytest.raises(InfraError, match="HAZMAT_TEST_TOKEN of hazmat's process is not set"):
        secret.held()
    monkeypatch.setenv("HAZMAT_TEST_TOKEN", "user:pass")
    held = secret.held()
    assert held.header_value == b"Basic dXNlcjpwYXNz" and "user:pass" not in repr(held)
    assert held.hidden == (b"Basic dXNlcjpwYXNz", b"user:pass", b"dXNlcjpwYXNz")
    monkeypatch.setenv("HAZMAT_TEST_TOKEN", "two\r\nlines")
    with pytest.raises(InfraError, match="line break"):
        Secret("x", "h.example", "HAZMAT_TEST_TOKEN", ("trusted",)).held()


def test_a_run_with_secrets_is_told_where_the_ca_is_and_nothing_else() -> None:
    told = proxy_env(3128, secrets=True)
    assert told["SSL_CERT_FILE"] == told["NODE_EXTRA_CA_CERTS"] == f"/run/hazmat-egress/{CA_FILE}"
    assert not any(TOKEN in value for value in told.values())
    assert "SSL_CERT_FILE" not in proxy_env(3128)


def test_the_ca_bundle_holds_the_proxy_s_ca_and_no_key(tmp_path: Path, echo: EchoServer) -> None:
    with _opened(tmp_path, echo, ["allowed.test"], [SECRET]) as (gate, _):
        bundle = (gate.directory / CA_FILE).read_bytes()
        assert b"BEGIN CERTIFICATE" in bundle and b"PRIVATE KEY" not in bundle
        # the proxy's CA is in it: a client that trusts the bundle alone reaches the host
        head = f"GET / HTTP/1.1\r\nHost: allowed.test:{echo.port}\r\n\r\n"
        assert _get(gate, "allowed.test", echo.port, head).startswith(b"HTTP/1.1 200")
        assert sorted(p.name for p in gate.directory.iterdir()) == [CA_FILE, SOCKET_NAME]


def test_the_doctor_says_which_secret_has_no_value(monkeypatch: pytest.MonkeyPatch) -> None:
    from hazmat.cli.doctor import _secrets_check

    policy = parse_policy({"egress": {"secrets": {"github": BASE}}})
    monkeypatch.delenv("HAZMAT_TEST_TOKEN", raising=False)
    (check,) = _secrets_check(policy)
    assert not check.ok and "HAZMAT_TEST_TOKEN" in check.detail and check.fix
    monkeypatch.setenv("HAZMAT_TEST_TOKEN", TOKEN)
    (check,) = _secrets_check(policy)
    assert check.ok and "github (api.github.com" in check.detail and TOKEN not in check.detail
    assert _secrets_check(parse_policy({})) == []


def test_a_secret_bound_to_tenants_goes_to_their_keys_runs_only(tmp_path: Path) -> None:
    from hazmat.service.tenant_keys import KeyStore

    policy = parse_policy({"egress": {"secrets": {"github": {**BASE, "tenants": ["acme"]}}}})
    store = KeyStore(tmp_path / "keys.json")
    acme, other = store.create("acme", "trusted")[0], store.create("other", "trusted")[0]
    allow = ["api.github.com"]
    assert policy.secrets_for("trusted", allow, acme.caller) == list(policy.secrets)
    for caller in (other.caller, None, "acme", "tenant:acme", f"{acme.caller} ", "tenant:acme"
                   " key:zz"):
        assert policy.secrets_for("trusted", allow, caller) == [], caller
    unbound = parse_policy({"egress": {"secrets": {"github": BASE}}})
    assert unbound.secrets_for("trusted", allow, None) == list(unbound.secrets)
