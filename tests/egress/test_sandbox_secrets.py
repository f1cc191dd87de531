"""A secret that never enters the sandbox, end to end on the real engine (both tiers, runc and
runsc): a program given nothing but the allowlist reaches an HTTPS host through the proxy with
its clients' default trust (the CA bundle hazmat names in SSL_CERT_FILE), the host gets the
secret, and the program sees neither it in its environment nor its echo in the answer. The
run's audit records name the secret, never its value."""

from __future__ import annotations

import ipaddress
from pathlib import Path

import pytest
from tls_servers import EchoServer

from hazmat import Outcome, Sandbox
from hazmat.audit.log import AuditLog
from hazmat.backends.base import Backend
from hazmat.backends.container.engine import Engine
from hazmat.backends.docker.driver import DockerBackend
from hazmat.backends.oci.driver import OciBackend
from hazmat.egress.proxy import EgressProxy
from hazmat.policy.file import parse_policy
from hazmat.testing import audit_records

pytestmark = pytest.mark.docker

TOKEN = "the-sandbox-never-sees-this-4242"
PROGRAM = """\
import os, urllib.request
print(any("TOKEN" in v or "4242" in v for v in os.environ.values()))
answer = urllib.request.urlopen("https://allowed.test:PORT/echo", timeout=20)
print(answer.headers["X-Echo"])
print("4242" in answer.read().decode())
"""


@pytest.mark.parametrize("tier", ["docker", "oci"])
def test_the_host_gets_the_secret_and_the_program_never_sees_it(
    engine: Engine,
    echo: EchoServer,
    runtime: str,
    tier: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HAZMAT_TEST_SECRET", TOKEN)
    network = {"allow": ["allowed.test"], "ports": [echo.port]}
    secret = {"host": "allowed.test", "from_env": "HAZMAT_TEST_SECRET", "levels": ["unknown"]}
    policy = parse_policy(
        {
            "trust": {"unknown": {"network": network}},
            "egress": {"secrets": {"echo-token": {**secret, "format": "Bearer {value}"}}},
        }
    )
    (tmp_path / "ca.pem").write_bytes(echo.ca_pem)
    proxy = EgressProxy(
        tmp_path / "egress",
        resolver=lambda host, _: ["127.0.0.2"],
        reachable=[ipaddress.ip_network("127.0.0.2/32")],
        upstream_ca=str(tmp_path / "ca.pem"),
    )
    backend: Backend = DockerBackend(engine) if tier == "docker" else OciBackend(engine)
    echo.seen.clear()
    audit = AuditLog(tmp_path / "audit")
    with Sandbox(policy, backend=backend, egress=proxy, audit=audit) as sandbox:
        code = PROGRAM.replace("PORT", str(echo.port))
        result = sandbox.run(code, "python", trust="unknown", runtime=runtime)
        records = audit_records(sandbox)
    assert result.outcome is Outcome.OK, result.stderr
    hidden = "*" * len(f"Bearer {TOKEN}")
    assert result.stdout == f"False\n{hidden}\nFalse\n"
    (seen,) = echo.seen
    assert f"Authorization: Bearer {TOKEN}" in seen
    (connection,) = result.connections
    assert connection["secret"] == "echo-token" and connection["allowed"] is True
    logged = [data for kind, data in records if kind == "run.connection"]
    assert logged[-1]["secret"] == "echo-token"
    assert TOKEN not in repr(records) and TOKEN not in repr(result.to_dict())


def test_a_secret_bound_to_a_tenant_reaches_the_host_for_its_runs_only(
    engine: Engine, echo: EchoServer, runtime: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`tenants` (one cell: what is tested is which runs' gates hold the secret)."""
    monkeypatch.setenv("HAZMAT_TEST_SECRET", TOKEN)
    network = {"allow": ["allowed.test"], "ports": [echo.port]}
    secret = {"host": "allowed.test", "from_env": "HAZMAT_TEST_SECRET", "levels": ["unknown"],
              "tenants": ["acme"]}
    policy = parse_policy(
        {"trust": {"unknown": {"network": network}}, "egress": {"secrets": {"t": secret}}}
    )
    (tmp_path / "ca.pem").write_bytes(echo.ca_pem)
    proxy = EgressProxy(
        tmp_path / "egress",
        resolver=lambda host, _: ["127.0.0.2"],
        reachable=[ipaddress.ip_network("127.0.0.2/32")],
        upstream_ca=str(tmp_path / "ca.pem"),
    )
    code = (
        "import ssl, urllib.request\n"
        "trust = ssl.create_default_context()  # hazmat's CA, where the proxy holds a secret\n"
        "trust.load_verify_locations('ca.pem')  # the host's own, where it tunnels\n"
        f"urllib.request.urlopen('https://allowed.test:{echo.port}/echo', timeout=20,"
        " context=trust)\n"
    )
    echo.seen.clear()
    with Sandbox(policy, backend=DockerBackend(engine), egress=proxy) as sandbox:
        for tenant in ("acme", "other"):
            result = sandbox.run(code, "python", trust="unknown", runtime=runtime,
                                 caller=f"tenant:{tenant} key:0123456789ab",
                                 files={"ca.pem": echo.ca_pem})
            assert result.outcome is Outcome.OK, result.stderr
    acme, other = echo.seen
    assert f"Authorization: {TOKEN}" in acme and TOKEN not in other
