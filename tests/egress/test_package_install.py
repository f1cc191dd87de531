"""Packages on demand, end to end on the real engine under runc and runsc: a session installs a
package and its compiled dependency from the policy's index (a test index on the host's
loopback, with a CA of its own handed in as `packages.ca_bundle`), through the allowlist proxy,
imports them and calls the compiled code; a second session gets the same files from the host's
cache by hash; every install is in the audit log. Refusals: tests/policy/test_package_policy.py."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
import uvicorn
from package_index import Index, serve
from tls_servers import mirror_proxy

from hazmat import InputError, InstallRefused, Outcome, Sandbox
from hazmat.audit.log import AuditLog
from hazmat.audit.records import parse_line
from hazmat.backends.container.engine import Engine
from hazmat.backends.docker.driver import DockerBackend
from hazmat.policy.file import parse_policy
from hazmat.server.http import create_app
from hazmat.service.tenant_keys import KeyStore
from hazmat.testing import as_asked
from server_helpers import http_client, over_http

pytestmark = [pytest.mark.docker]


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Index]:
    served, server = serve(tmp_path_factory.mktemp("index"))
    yield served
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def installing(
    engine: Engine, index: Index, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Sandbox, Path]]:
    folder = tmp_path_factory.mktemp("packages")
    (folder / "ca.pem").write_bytes(index.ca_pem)
    packages = {
        "levels": ["untrusted", "unknown"],
        "python": {"index": index.url},
        "ca_bundle": str(folder / "ca.pem"),
        "cache": str(folder / "cache"),
        "max_packages": 5,
    }
    # the runtime as the test asks it (a session under runc is not refused code the
    # assessment would route to gVisor: the subprocess below)
    sessions = {"store": str(folder / "sessions")}  # paused ones
    policy = as_asked(parse_policy({"packages": packages, "sessions": sessions}))
    proxy = mirror_proxy()
    audit = AuditLog(folder / "audit")
    with Sandbox(policy, backend=DockerBackend(engine), egress=proxy, audit=audit) as sandbox:
        yield sandbox, folder


USE = "import probe_pure, probe_native\nprint(probe_pure.VALUE, probe_native.twice(5))\n"


@pytest.mark.matrix
def test_a_session_installs_a_compiled_package_and_imports_it(
    installing: tuple[Sandbox, Path], index: Index, runtime: str
) -> None:
    sandbox, folder = installing
    fetched = +index.requests
    with sandbox.session("python", trust="unknown", runtime=runtime) as session:
        before = session.run("import probe_pure")
        assert before.outcome is Outcome.ERROR and before.exception is not None
        assert before.exception.name == "ModuleNotFoundError"
        assert "install_packages tool" in " ".join(before.notes), before.notes
        session.run("kept = 'still here'")
        done = session.install(["hazmat-probe-pure==1.0"])
        assert sorted((p.name, p.version, p.requested) for p in done.packages) == [
            ("hazmat-probe-native", "1.0", False),
            ("hazmat-probe-pure", "1.0", True),
        ]
        assert {c["host"] for c in done.connections} == {"api.mirror.test"}
        assert all(c["allowed"] for c in done.connections)
        used = session.run(USE + "print(kept)\n")
        assert (used.outcome, used.stdout) == (Outcome.OK, "42 10\nstill here\n"), used.stderr
        # a program the session starts finds them too
        child = session.run(
            "import subprocess, sys\n"
            "child = 'import probe_pure; print(probe_pure.VALUE)'\n"
            "_ = subprocess.run([sys.executable, '-c', child])"
        )
        assert child.stdout == "42\n", child.stderr
    # the files are in the host's cache, under their hashes, and nothing else is
    kept = sorted(p.parent.name for p in (folder / "cache" / "python").glob("*/*.whl"))
    assert kept == sorted(p.sha256 for p in done.packages)
    installed = [r for r in _records(sandbox) if r.get("session") == session.id]
    assert [p["sha256"] for p in installed[-1]["packages"]] == [p.sha256 for p in done.packages]
    # each file was fetched at most once (the dry run's fetch, kept in pip's cache for the
    # download; none where the host's cache had it and pip fetched metadata alone)
    fetched = index.requests - fetched
    assert all(n <= 1 for p, n in fetched.items() if p.endswith(".whl")), fetched


def test_a_second_session_gets_the_files_from_the_cache(
    installing: tuple[Sandbox, Path], index: Index
) -> None:
    sandbox, _ = installing
    with sandbox.session("python", runtime="runc") as session:
        session.install(["hazmat-probe-pure"])  # the first: fetched unless the test above ran
    fetched = +index.requests
    with sandbox.session("python", runtime="runc") as session:
        again = session.install(["hazmat-probe-pure==1.0"])
        assert all(p.cached for p in again.packages)
        used = session.run(USE)
        assert used.stdout == "42 10\n", used.stderr
    # the host used its own copies (the download is told nothing of its cache); the images'
    # pip still fetches each once to resolve, PEP 658 metadata or not (docs/api.md)
    fetched = index.requests - fetched
    assert all(n <= 1 for p, n in fetched.items() if p.endswith(".whl")), fetched


def test_a_resumed_session_gets_its_packages_back_before_its_variables(
    installing: tuple[Sandbox, Path],
) -> None:
    """Python's packages are in /tmp, which a pause does not keep: the resume installs them
    again (from the cache), before it loads the variables, which may be of their types."""
    sandbox, _ = installing
    with sandbox.session("python", trust="unknown", runtime="runc") as session:
        session.install(["hazmat-probe-pure"])
        session.run("import probe_pure\nbox = probe_pure.Box(3)")
        paused = session.pause()
    assert paused.packages == ("hazmat-probe-pure",)
    with sandbox.resume_session(paused.id) as again:
        assert again.resumed is not None
        assert again.resumed["packages"] == ["hazmat-probe-pure"]
        assert "box" in again.resumed["loaded"], again.resumed
        used = again.run("print(box.n, probe_pure.VALUE)")
        assert used.stdout == "3 42\n", used.stderr


def test_a_trial_index_on_loopback_over_plain_http(
    engine: Engine, tmp_path: Path
) -> None:
    """`packages.trial_index`: the proxy of a Sandbox made by the policy alone (no test
    resolver) forwards pip's plain requests to the index on the host's loopback."""
    (tmp_path / "index").mkdir()
    served, server = serve(tmp_path / "index", trial=True)
    packages = {
        "levels": ["unknown"],
        "trial_index": True,
        "python": {"index": served.url},
        "cache": str(tmp_path / "cache"),
    }
    policy = as_asked(parse_policy({"packages": packages}))
    try:
        with (
            Sandbox(policy, backend=DockerBackend(engine)) as sandbox,
            sandbox.session("python", trust="unknown", runtime="runc") as session,
        ):
            done = session.install(["hazmat-probe-pure==1.0"])
            assert list(done.requested) == ["hazmat-probe-pure==1.0"]
            assert session.run(USE).stdout == "42 10\n"
    finally:
        server.shutdown()
        server.server_close()
    assert served.requests["/simple/hazmat-probe-pure/"] >= 1


def test_what_the_index_does_not_have_is_said_with_pip_s_words(
    installing: tuple[Sandbox, Path],
) -> None:
    sandbox, _ = installing
    with sandbox.session("python", runtime="runc") as session:
        with pytest.raises(InputError, match="hazmat-no-such-package"):
            session.install(["hazmat-no-such-package==1.0"])
        # an install the level may not do: refused before anything is fetched
        with pytest.raises(InstallRefused, match="names a URL"):
            session.install(["evil @ https://example.invalid/evil.whl"])
        assert session.run("print(1)").stdout == "1\n"
    refused = [r for r in _records(sandbox) if r.get("session") == session.id]
    assert "refused" in refused[-1] and refused[-1]["requested"] == [
        "evil @ https://example.invalid/evil.whl"
    ]


def test_http_and_mcp_install_into_a_session(
    installing: tuple[Sandbox, Path], tmp_path: Path
) -> None:
    """The service in this process (its sandbox has the tests' resolver), on a real socket:
    `POST /v1/sessions/{id}/packages`, then the MCP tool over the SDK's own client."""
    sandbox, _ = installing
    store = KeyStore(tmp_path / "keys.json")
    key = store.create("agent", "unknown")[1]  # runc: the runtimes are the test above's
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(create_app(sandbox, store), log_level="error"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{listener.getsockname()[1]}"
    try:
        headers = {"Authorization": f"Bearer {key}"}
        with http_client(url, headers, 120) as client:
            _wait_started(server)
            sid = client.post("/v1/sessions", json={"language": "python"}).json()["id"]
            done = client.post(
                f"/v1/sessions/{sid}/packages", json={"packages": ["hazmat-probe-pure"]}
            )
            assert done.status_code == 200, done.text
            assert {p["name"] for p in done.json()["packages"]} == {
                "hazmat-probe-pure",
                "hazmat-probe-native",
            }
            wrong = client.post(
                f"/v1/sessions/{sid}/packages", json={"packages": ["x @ https://a.b/x.whl"]}
            )
            assert wrong.status_code == 403 and wrong.json()["error"]["type"] == "InstallRefused"
            used = client.post(f"/v1/sessions/{sid}/runs", json={"code": USE}).json()
            assert used["stdout"] == "42 10\n", used
            calls = [
                ("install_packages", {"session_id": sid, "packages": ["hazmat-probe-native==1.0"]}),
                ("install_packages", {"session_id": sid, "packages": ["--pre"]}),
                ("run_in_session", {"session_id": sid, "code": USE}),
                ("close_session", {"session_id": sid}),
            ]
            _, (installed, refused, ran, _) = anyio.run(over_http, url, key, calls)
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        listener.close()
    assert not installed.is_error and installed.structured_content["packages"][0]["cached"]
    assert refused.is_error and "not a requirement" in refused.content[0].text
    assert ran.structured_content["stdout"] == "42 10\n"


def _wait_started(server: uvicorn.Server) -> None:
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline, "the service did not start"
        time.sleep(0.01)


def _records(sandbox: Sandbox) -> list[dict[str, object]]:
    found = []
    for path in sorted((sandbox.audit.dir / "segments").glob("*.jsonl")):
        for line in path.read_bytes().splitlines():
            record = parse_line(line)[0]
            if record.kind == "session.installed":
                found.append(dict(record.data))
    return found
