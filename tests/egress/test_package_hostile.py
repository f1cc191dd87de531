"""Packages from a hostile index, end to end on the real engine: nothing of a package runs
while it is fetched (a build backend named by a URL dependency at any depth, an index with
only a source distribution), no file the index lists no digest for is taken, a cached file
that was damaged or removed is fetched again, and an npm tarball cannot write outside its
place in node_modules/. The fakes: package_index.py (`serve_hostile`) and npm_registry.py.

Cells: the build backend's test runs under runc and runsc (the download's sandbox runs in the
session's runtime, and what it refuses is what this test is about); the others in one cell
each, runc, since what they check happens in pip's process or on the host, before anything
reaches a runtime."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import npm_registry
import package_index
import pytest
from package_index import Index
from tls_servers import mirror_proxy

from hazmat import InputError, InstallRefused, Outcome, Sandbox
from hazmat.backends.container.engine import Engine
from hazmat.backends.docker.driver import DockerBackend
from hazmat.policy.file import parse_policy
from hazmat.testing import as_asked, audit_records

pytestmark = [pytest.mark.docker]


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Index]:
    served, server = package_index.serve_hostile(tmp_path_factory.mktemp("hostile"))
    yield served
    server.shutdown()
    server.server_close()


def _sandbox(engine: Engine, folder: Path, ca_pem: bytes, source: dict[str, object]) -> Sandbox:
    (folder / "ca.pem").write_bytes(ca_pem)
    packages = {
        "levels": ["untrusted", "unknown"],
        "ca_bundle": str(folder / "ca.pem"),
        "cache": str(folder / "cache"),
        **source,
    }
    policy = as_asked(parse_policy({"packages": packages}))
    return Sandbox(policy, backend=DockerBackend(engine), egress=mirror_proxy())


@pytest.mark.matrix
def test_no_build_backend_runs_at_fetch_whatever_the_depth(
    engine: Engine, hostile: Index, runtime: str, tmp_path: Path
) -> None:
    """deep -> urldep -> `hazmat-probe-evil @ https://<index>/...tar.gz`, whose in-tree
    backend would fetch /exfil/... from the index if it ran."""
    with (
        _sandbox(engine, tmp_path, hostile.ca_pem, {"python": {"index": hostile.url}}) as sandbox,
        sandbox.session("python", trust="unknown", runtime=runtime) as session,
    ):
        with pytest.raises(InstallRefused, match=r"hazmat-probe-evil ?@ https://") as refused:
            session.install(["hazmat-probe-deep"])
        assert "a URL or a path" in str(refused.value) and "urldep" in str(refused.value)
        assert session.run("print(1)").stdout == "1\n"
        records = [d for k, d in audit_records(sandbox) if k == "session.installed"]
        [record] = [d for d in records if d["session"] == session.id]
    assert "refused" in record
    assert hostile.exfiltrated() == [], hostile.requests
    assert hostile.requests["/files/hazmat_probe_evil-1.0.tar.gz"] == 0  # not even fetched


@pytest.mark.parametrize(
    ("asked", "refusal"),
    [
        # a dependency named by a URL to a wheel: refused as a URL, fetched by nobody
        (
            "hazmat-probe-wheelurl",
            (InstallRefused, "a URL or a path", "/files/hazmat_probe_target"),
        ),
        # only a source distribution on the index: pip finds nothing it may take
        ("hazmat-probe-sdistonly", (InputError, "hazmat-probe-sdistonly", "/files/hazmat_probe_s")),
        # a wheel whose link carries no digest: refused before it is fetched
        (
            "hazmat-probe-nohash",
            (InstallRefused, "SHA-256 the index lists", "/files/hazmat_probe_n"),
        ),
    ],
)
def test_what_the_hostile_index_offers_is_refused_before_it_is_fetched(
    engine: Engine, hostile: Index, tmp_path: Path, asked: str, refusal: tuple[type, str, str]
) -> None:
    error, says, never = refusal
    with (
        _sandbox(engine, tmp_path, hostile.ca_pem, {"python": {"index": hostile.url}}) as sandbox,
        sandbox.session("python", trust="unknown", runtime="runc") as session,
        pytest.raises(error, match=says),
    ):
        session.install([asked])
    assert not [p for p in hostile.requests if p.startswith(never)], hostile.requests
    assert hostile.exfiltrated() == []


def test_a_damaged_or_removed_cached_file_is_fetched_again(
    engine: Engine, tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    index, server = package_index.serve(tmp_path_factory.mktemp("index"))
    try:
        with _sandbox(engine, tmp_path, index.ca_pem, {"python": {"index": index.url}}) as sandbox:
            with sandbox.session("python", runtime="runc") as session:
                first = session.install(["hazmat-probe-pure==1.0"])
            cache = tmp_path / "cache" / "python"
            native, pure = sorted(first.packages, key=lambda p: p.name)
            (cache / native.sha256 / native.file).write_bytes(b"damaged")
            (cache / pure.sha256 / pure.file).unlink()  # its folder left
            with sandbox.session("python", runtime="runc") as session:
                again = session.install(["hazmat-probe-pure==1.0"])
                used = session.run("import probe_pure\nprint(probe_pure.VALUE)")
    finally:
        server.shutdown()
        server.server_close()
    assert [p.cached for p in again.packages] == [False, False]
    assert (used.outcome, used.stdout) == (Outcome.OK, "42\n"), used.stderr
    for p in again.packages:  # repaired
        assert (cache / p.sha256 / p.file).stat().st_size == p.bytes


@pytest.mark.parametrize("package", ["hazmat-probe-escape", "hazmat-probe-linked"])
def test_an_npm_tarball_cannot_write_outside_its_place(
    engine: Engine, tmp_path_factory: pytest.TempPathFactory, tmp_path: Path, package: str
) -> None:
    registry, server = npm_registry.serve(tmp_path_factory.mktemp("registry"))
    try:
        with (
            _sandbox(engine, tmp_path, registry.ca_pem, {"npm": {"registry": registry.url}}) as sb,
            sb.session("javascript", trust="unknown", runtime="runc") as session,
        ):
            session.run("require('fs').writeFileSync('/work/victim.txt', 'mine\\n')")
            with pytest.raises(InstallRefused, match="not installed"):
                session.install([f"{package}@1.0.0"])
            after = session.run(
                "process.stdout.write(require('fs').readFileSync('/work/victim.txt'))"
            )
            fine = session.install(["hazmat-probe-left@2"])  # a plain one still installs
            used = session.run("console.log(require('hazmat-probe-left')(7))")
    finally:
        server.shutdown()
        server.server_close()
    assert after.stdout.strip() == "mine", after.stderr
    assert len(fine.packages) == 2 and used.stdout == "...7\n", used.stderr
