"""pip install inside the sandbox, through the allowlist, from the package index the host's
pip is configured with (read from pip's configuration now; no index is named here). Needs the
host to reach that index; skipped, saying why, when it does not."""

from __future__ import annotations

import ipaddress
import os
import re
import socket
import ssl
import subprocess
import sys
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from hazmat import Outcome, Sandbox
from hazmat.backends.container.engine import Engine
from hazmat.backends.docker.driver import DockerBackend
from hazmat.egress.proxy import EgressProxy
from hazmat.policy.file import parse_policy

pytestmark = [pytest.mark.docker, pytest.mark.slow]

PACKAGE, VERSION = "six", "1.17.0"  # small, pure Python, no dependencies


def _pip_config() -> dict[str, str]:
    out = subprocess.run(
        [sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True
    ).stdout
    found = {}
    for line in out.splitlines():
        key, _, value = line.partition("=")
        found[key.rpartition(".")[2]] = value.strip().strip("'\"")
    for key in ("index-url", "cert"):
        env = os.environ.get("PIP_" + key.upper().replace("-", "_"))
        if env:
            found[key] = env
    return found


def _index_url(config: dict[str, str]) -> str:
    if config.get("index-url", "").startswith("https://"):
        return config["index-url"].rstrip("/") + "/"
    from pip._internal.models.index import PyPI  # pip's own default index

    return PyPI.simple_url.rstrip("/") + "/"


def _file_hosts(index: str, context: ssl.SSLContext) -> set[str]:
    """The hosts the index sends pip to for the package's files."""
    page_url = urllib.parse.urljoin(index, f"{PACKAGE}/")
    try:
        page = urllib.request.urlopen(page_url, context=context, timeout=30).read().decode()
    except OSError as exc:
        pytest.skip(f"the host does not reach its pip index ({exc})")
    hosts = set()
    for href in re.findall(r'href="([^"]+)"', page):
        url = urllib.parse.urljoin(page_url, href)
        if f"{PACKAGE}-{VERSION}" in url:
            hosts.add(urllib.parse.urlparse(url).hostname or "")
    return hosts - {""}


@pytest.mark.matrix
def test_pip_installs_a_package_through_the_allowlist(engine: Engine, runtime: str) -> None:
    config = _pip_config()
    index = _index_url(config)
    ca = Path(config["cert"]).read_bytes() if config.get("cert") else None
    context = ssl.create_default_context(cafile=config.get("cert") or None)
    hosts = {urllib.parse.urlparse(index).hostname or "", *_file_hosts(index, context)}
    # Where the host's own resolver puts the index in a non-public range (a mirror, or this
    # machine's interception), those exact addresses are declared reachable, as an operator
    # with an internal mirror would; everything else stays refused.
    reachable = [
        ipaddress.ip_network(info[4][0])
        for host in hosts
        for info in socket.getaddrinfo(host, 443, type=socket.SOCK_STREAM)
    ]
    # pip takes its time (120 s allowed) and memory: a level whose limits allow them
    level = {"network": {"allow": sorted(hosts)}, "timeout_s": 120, "memory_mb": 512}
    policy = parse_policy({"trust": {"untrusted": level}})
    code = (
        "import subprocess, sys\n"
        "subprocess.run([sys.executable, '-m', 'pip', 'install', '--quiet', '--no-cache-dir',\n"
        f"    '--target', '/tmp/pkgs', '{PACKAGE}=={VERSION}'], check=True)\n"
        "sys.path.insert(0, '/tmp/pkgs')\n"
        f"import {PACKAGE}\n"
        f"print({PACKAGE}.__version__)\n"
    )
    env = {"PIP_INDEX_URL": index, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    files = {}
    if ca is not None:
        env["PIP_CERT"] = "/work/ca.pem"
        files["ca.pem"] = ca
    proxy = EgressProxy(reachable=reachable)
    with Sandbox(policy, backend=DockerBackend(engine), egress=proxy) as sandbox:
        result = sandbox.run(
            code, "python", runtime=runtime, env=env, files=files, timeout=120, memory_mb=512
        )
    assert (result.outcome, result.stdout) == (Outcome.OK, f"{VERSION}\n"), result.stderr
    assert {c["host"] for c in result.connections} <= hosts
    assert all(c["allowed"] for c in result.connections) and result.connections
