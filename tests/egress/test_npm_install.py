"""Packages on demand for JavaScript and TypeScript, end to end on the real engine: a session
installs a package and its dependency from the policy's npm registry (a test registry on the
host's loopback, with a CA of its own handed in as `packages.ca_bundle`), through the
allowlist proxy, and requires it; a TypeScript session imports it from its build (the files
come from the host's cache then). Python's: test_package_install.py."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from npm_registry import Registry, serve
from tls_servers import mirror_proxy

from hazmat import Outcome, Sandbox
from hazmat.backends.container.engine import Engine
from hazmat.backends.docker.driver import DockerBackend
from hazmat.policy.file import parse_policy

pytestmark = [pytest.mark.docker]


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    served, server = serve(tmp_path_factory.mktemp("registry"))
    yield served
    server.shutdown()
    server.server_close()


def test_javascript_and_typescript_sessions_install_from_the_registry(
    engine: Engine, registry: Registry, tmp_path: Path
) -> None:
    (tmp_path / "ca.pem").write_bytes(registry.ca_pem)
    packages = {
        "levels": ["unknown"],
        "npm": {"registry": registry.url},
        "ca_bundle": str(tmp_path / "ca.pem"),
        "cache": str(tmp_path / "cache"),
    }
    proxy = mirror_proxy()
    policy = parse_policy({"packages": packages})
    with Sandbox(policy, backend=DockerBackend(engine), egress=proxy) as sandbox:
        with sandbox.session("javascript", trust="unknown", runtime="runc") as session:
            before = session.run("require('hazmat-probe-left')")
            assert before.outcome is Outcome.ERROR
            assert "install_packages tool" in " ".join(before.notes), before.notes
            done = session.install(["hazmat-probe-left@^2"])
            assert sorted((p.name, p.version, p.path, p.requested) for p in done.packages) == [
                ("hazmat-probe-left", "2.0.1", "node_modules/hazmat-probe-left", True),
                ("hazmat-probe-pad", "1.2.0", "node_modules/hazmat-probe-pad", False),
            ]
            assert {c["host"] for c in done.connections} == {"api.mirror.test"}
            used = session.run("console.log(require('hazmat-probe-left')(7))")
            assert (used.outcome, used.stdout) == (Outcome.OK, "...7\n"), used.stderr
            module = session.run(
                "import left from 'hazmat-probe-left';\nconsole.log(left(42));", module="esm"
            )
            assert module.stdout == "..42\n", module.stderr
        with sandbox.session("typescript", trust="unknown", runtime="runc") as session:
            again = session.install(["hazmat-probe-left@2.0.1"])
            assert all(p.cached for p in again.packages)
            typed = session.run(
                "import left = require('hazmat-probe-left');\n"
                "const n: number = 5;\nconsole.log(left(n));"
            )
            assert typed.stdout == "...5\n", typed.stderr
    # each tarball fetched once: the second install's plan found them whole in the host's cache
    fetched = [p for p in registry.requests if p.endswith(".tgz")]
    assert all(registry.requests[p] == 1 for p in fetched) and len(fetched) == 2
