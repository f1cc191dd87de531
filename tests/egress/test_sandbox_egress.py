"""The allowlist end to end on the real engine, under runc and runsc: a program in a container
with no network device reaches an allowed TLS server only through the relay and the host's
proxy, and every way around the proxy fails. The TLS servers listen on the host's loopback
(127.0.0.2 plays the public host); inside the container, 127.0.0.x is its own loopback."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator
from pathlib import Path

import pytest
from tls_servers import TLSServer

from hazmat import InputError, Outcome, Sandbox
from hazmat.audit.log import AuditLog
from hazmat.audit.records import parse_line
from hazmat.backends.container.engine import Engine
from hazmat.backends.docker.driver import DockerBackend
from hazmat.backends.oci.driver import OciBackend
from hazmat.egress.proxy import EgressProxy
from hazmat.models import ExecutionResult
from hazmat.policy.file import parse_policy

pytestmark = [pytest.mark.docker, pytest.mark.matrix]

HOSTS = {"allowed.test": ["127.0.0.2"], "other.test": ["127.0.0.2"], "local.test": ["127.0.0.1"]}


@pytest.fixture(scope="module")
def egress_sandbox(
    engine: Engine, tls_servers: dict[str, TLSServer], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Sandbox]:
    port = tls_servers["127.0.0.2"].port
    network = {"allow": ["allowed.test", "local.test"], "ports": [port]}
    policy = parse_policy(
        {"trust": {level: {"network": network} for level in ("untrusted", "unknown")}}
    )
    proxy = EgressProxy(
        resolver=lambda host, _: HOSTS[host], reachable=[ipaddress.ip_network("127.0.0.2/32")]
    )
    audit = AuditLog(tmp_path_factory.mktemp("audit"))
    with Sandbox(policy, backend=DockerBackend(engine), egress=proxy, audit=audit) as sandbox:
        yield sandbox


def _run(
    sandbox: Sandbox, server: TLSServer, code: str, runtime: str, **kw: object
) -> ExecutionResult:
    code = code.replace("PORT", str(server.port))
    return sandbox.run(code, "python", files={"ca.pem": server.ca_pem}, runtime=runtime, **kw)


HTTPS_GET = """
import ssl, urllib.request
ctx = ssl.create_default_context(cafile="ca.pem")
print(urllib.request.urlopen("https://allowed.test:PORT/data", context=ctx, timeout=10).read())
"""


def test_an_allowed_host_is_reached_through_the_proxy_variables(
    egress_sandbox: Sandbox, tls_servers: dict[str, TLSServer], runtime: str
) -> None:
    result = _run(egress_sandbox, tls_servers["127.0.0.2"], HTTPS_GET, runtime)
    assert result.outcome is Outcome.OK, result.stderr
    assert result.stdout == "b'hello from allowed.test: GET /data HTTP/1.1'\n"
    [connection] = result.connections
    assert connection["host"] == "allowed.test" and connection["allowed"] is True
    records = _records(egress_sandbox, "run.connection")
    assert records[-1]["host"] == "allowed.test" and records[-1]["allowed"] is True
    started = _records(egress_sandbox, "run.started")[-1]
    assert started["network"] == ["allowed.test", "local.test"]
    assert records[-1]["run"] == started["run"]


def test_javascript_reaches_it_with_its_own_connect(
    egress_sandbox: Sandbox, tls_servers: dict[str, TLSServer], runtime: str
) -> None:
    server = tls_servers["127.0.0.2"]
    code = f"""
const net = require('net'), tls = require('tls'), fs = require('fs');
const proxy = new URL(process.env.HTTPS_PROXY);
const raw = net.connect(Number(proxy.port), proxy.hostname, () => {{
  raw.write('CONNECT allowed.test:{server.port} HTTP/1.1\\r\\n\\r\\n');
}});
raw.once('data', (head) => {{
  if (!head.toString().startsWith('HTTP/1.1 200')) {{ console.log('refused'); return; }}
  const s = tls.connect({{socket: raw, servername: 'allowed.test', ca: fs.readFileSync('ca.pem')}},
    () => s.write('ping'));
  s.on('data', (d) => {{ console.log(d.toString()); s.end(); }});
}});
"""
    result = egress_sandbox.run(
        code, "javascript", files={"ca.pem": server.ca_pem}, runtime=runtime
    )
    assert (result.outcome, result.stdout) == (Outcome.OK, "hello from allowed.test: ping\n"), (
        result.stderr
    )


BYPASSES = {
    "a raw IP CONNECT": (
        "CONNECT 127.0.0.2:PORT HTTP/1.1\\r\\n\\r\\n",
        "403",
        "an IP address, not a host name",
    ),
    "a NUL in the host name": (
        "CONNECT allowed.test\\x00.other.test:PORT HTTP/1.1\\r\\n\\r\\n",
        "403",
        "NUL",
    ),
    "a host not on the list": ("CONNECT other.test:PORT HTTP/1.1\\r\\n\\r\\n", "403", "allowlist"),
    "an allowed name that resolves to loopback": (
        "CONNECT local.test:PORT HTTP/1.1\\r\\n\\r\\n",
        "403",
        "not a public address",
    ),
    "a relayed CONNECT inside an allowed tunnel": (
        "CONNECT allowed.test:PORT HTTP/1.1\\r\\n\\r\\n"
        "CONNECT other.test:PORT HTTP/1.1\\r\\n\\r\\n",
        "200",
        "not a TLS handshake",
    ),
}
RAW_CONNECT = """
import os, socket
proxy = os.environ["HTTPS_PROXY"].rsplit(":", 1)
s = socket.create_connection((proxy[0].split("//")[1], int(proxy[1])), timeout=10)
s.sendall(b"REQUEST")
data = b""
while chunk := s.recv(4096):
    data += chunk
print(data.split(b"\\r\\n")[0].decode())
"""


@pytest.mark.parametrize("case", list(BYPASSES))
def test_ways_around_the_allowlist_are_refused_and_recorded(
    egress_sandbox: Sandbox, tls_servers: dict[str, TLSServer], runtime: str, case: str
) -> None:
    request, status, reason = BYPASSES[case]
    server = tls_servers["127.0.0.2"]
    seen = len(server.handled)
    result = _run(egress_sandbox, server, RAW_CONNECT.replace("REQUEST", request), runtime)
    assert result.outcome is Outcome.OK, result.stderr
    assert result.stdout.startswith(f"HTTP/1.1 {status}")
    [connection] = result.connections
    assert connection["allowed"] is False and reason in connection["reason"]
    assert "the allowlist proxy refused 1 connection(s)" in result.notes[-1]
    assert len(server.handled) == seen  # nothing reached the server


FRONTING = """
import socket, ssl
s = socket.create_connection(("127.0.0.1", 3128), timeout=10)
s.sendall(b"CONNECT allowed.test:PORT HTTP/1.1\\r\\n\\r\\n")
print(s.recv(4096).split(b"\\r\\n")[0].decode())
ctx = ssl.create_default_context(cafile="ca.pem")
try:  # the TLS server name differs from the CONNECT host; both are served at one address
    ctx.wrap_socket(s, server_hostname="other.test").sendall(b"GET / HTTP/1.1\\r\\n\\r\\n")
    print("worked")
except OSError as e:
    print("failed", type(e).__name__)
"""


def test_domain_fronting_is_refused(
    egress_sandbox: Sandbox, tls_servers: dict[str, TLSServer], runtime: str
) -> None:
    server = tls_servers["127.0.0.2"]
    seen = len(server.handled)
    result = _run(egress_sandbox, server, FRONTING, runtime)
    assert result.stdout.splitlines()[0].startswith("HTTP/1.1 200"), result.stderr
    assert result.stdout.splitlines()[1].startswith("failed"), result.stdout
    [connection] = result.connections
    assert "TLS server name 'other.test' is not the CONNECT host" in connection["reason"]
    assert len(server.handled) == seen


IGNORE_THE_PROXY = """
import os, socket
print(sorted(name for _, name in socket.if_nameindex()))
for what, call in [
    ("dns", lambda: socket.getaddrinfo("allowed.test", 443)),
    ("direct", lambda: socket.create_connection(("127.0.0.2", PORT), timeout=5)),
    ("udp dns", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(
        b"x", ("127.0.0.53", 53))),
]:
    try:
        call()
        print(what, "worked")
    except OSError as e:
        print(what, "failed", type(e).__name__)
"""


def test_a_program_that_ignores_the_proxy_reaches_nothing(
    egress_sandbox: Sandbox, tls_servers: dict[str, TLSServer], runtime: str
) -> None:
    result = _run(egress_sandbox, tls_servers["127.0.0.2"], IGNORE_THE_PROXY, runtime)
    lines = result.stdout.splitlines()
    assert lines[0] == "['lo']", result.stdout + result.stderr
    assert lines[1].startswith("dns failed") and lines[2].startswith("direct failed")
    assert "worked" not in result.stdout.replace("udp dns worked", "")  # a datagram to its own lo
    assert result.connections == ()


def test_a_run_narrows_the_list_or_drops_the_network(
    egress_sandbox: Sandbox, tls_servers: dict[str, TLSServer]
) -> None:
    server = tls_servers["127.0.0.2"]
    offline = _run(
        egress_sandbox,
        server,
        "import os\nprint(os.environ.get('HTTPS_PROXY'))",
        "runc",
        network=[],
    )
    assert (offline.stdout, offline.connections) == ("None\n", ())
    narrowed = _run(egress_sandbox, server, HTTPS_GET, "runc", network=["local.test"])
    assert narrowed.outcome is Outcome.ERROR
    assert "not on the allowlist" in narrowed.connections[0]["reason"]
    with pytest.raises(InputError, match="not allowed at this trust level"):
        _run(egress_sandbox, server, HTTPS_GET, "runc", network=["other.test"])


def test_the_oci_tier_relays_an_allowed_host_and_nothing_else(
    engine: Engine, tls_servers: dict[str, TLSServer], runtime: str, tmp_path: Path
) -> None:
    """The same allowlist on the direct OCI tier, whose single runs start the relay from the
    compiled agent (backends/agent/compiled.py) where this host can build it."""
    server = tls_servers["127.0.0.2"]
    network = {"allow": ["allowed.test"], "ports": [server.port]}
    policy = parse_policy({"trust": {"unknown": {"network": network}}})
    proxy = EgressProxy(
        resolver=lambda host, _: HOSTS[host], reachable=[ipaddress.ip_network("127.0.0.2/32")]
    )
    audit = AuditLog(tmp_path / "audit")
    with Sandbox(policy, backend=OciBackend(engine), egress=proxy, audit=audit) as sandbox:
        allowed = _run(sandbox, server, HTTPS_GET, runtime, trust="unknown")
        around = _run(sandbox, server, IGNORE_THE_PROXY, runtime, trust="unknown")
    assert allowed.outcome is Outcome.OK, allowed.stderr
    assert allowed.stdout == "b'hello from allowed.test: GET /data HTTP/1.1'\n"
    lines = around.stdout.splitlines()
    assert lines[1].startswith("dns failed") and lines[2].startswith("direct failed"), lines
    assert allowed.connections[0]["allowed"] is True and around.connections == ()


def test_without_an_allowlist_a_run_has_no_proxy_at_all(engine: Engine) -> None:
    with Sandbox(parse_policy({}), backend=DockerBackend(engine)) as sandbox:
        result = sandbox.run(
            "import os\nprint(os.environ.get('HTTPS_PROXY'), os.path.exists('/run/hazmat-egress'))",
            "python",
            runtime="runc",
        )
    assert result.stdout == "None False\n" and result.connections == ()


def _records(sandbox: Sandbox, kind: str) -> list[dict[str, object]]:
    found = []
    for path in sorted((sandbox.audit.dir / "segments").glob("*.jsonl")):
        for line in path.read_bytes().splitlines():
            record = parse_line(line)[0]
            if record.kind == kind:
                found.append(dict(record.data))
    return found
