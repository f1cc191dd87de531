"""Packages on demand, the pipeline's own logic on a recording backend (hazmat.testing): the
policy's `packages` section, the requirements a session may ask, the refusals a model reads,
the download's job (its network is the index alone), the files checked by hash before the
cache keeps them or a session gets them, and the audit records. The real thing:
tests/egress/test_package_install.py."""

from __future__ import annotations

import hashlib
import io
import json
import re
import tarfile
import zipfile
from pathlib import Path
from typing import Any

import pytest

from hazmat import InfraError, InputError, InstallRefused, PolicyError, Sandbox
from hazmat.backends.base import Job
from hazmat.package_policy import PackageSettings
from hazmat.packages.requirements import check_requirements
from hazmat.policy_file import parse_policy
from hazmat.testing import RecordingBackend, audit_records, invoke, report

INDEX = "https://pypi.mirror.example:8443/simple/"
WHEEL = "tool-1.0-py3-none-any.whl"


def _zip(size: int) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("tool/__init__.py", b"\0" * size)
    return out.getvalue()


DATA = _zip(10)


def _policy(tmp_path: Path, **packages: Any) -> Any:
    section = {
        "levels": ["unknown"],
        "python": {"index": INDEX},
        "cache": str(tmp_path),
        **packages,
    }
    return parse_policy({"packages": section})


@pytest.mark.parametrize(
    ("section", "key"),
    [
        ({"levels": ["root"]}, "packages.levels"),
        ({"python": {"index": "http://plain.example/simple"}}, "packages.python.index"),
        ({"python": {"index": "https://user@x.example/"}}, "packages.python.index"),
        ({"python": {"hosts": ["*.example"]}}, "packages.python.hosts[0]"),
        ({"python": {"mirror": "x"}}, "packages.python.mirror"),
        ({"max_mb": 0}, "packages.max_mb"),
        ({"max_mb": 2.5}, "packages.max_mb"),
        ({"timeout_s": "slow"}, "packages.timeout_s"),
        ({"ca_bundle": 3}, "packages.ca_bundle"),
        ({"npm": {}}, "packages.npm"),
        ([], "packages"),
    ],
)
def test_a_wrong_packages_section_names_its_key(section: Any, key: str) -> None:
    with pytest.raises(PolicyError, match="<policy>: " + re.escape(key)):
        parse_policy({"packages": section})


def test_installing_is_off_by_default_and_reaches_only_the_index() -> None:
    assert not PackageSettings().allows("trusted", "python")
    settings = parse_policy(
        {"packages": {"levels": ["trusted"], "python": {"index": INDEX, "hosts": ["files.x"]}}}
    ).packages
    assert settings.allows("trusted", "python") and not settings.allows("untrusted", "python")
    assert not settings.allows("trusted", "javascript")
    assert settings.reach == (["files.x", "pypi.mirror.example"], [8443])


@pytest.mark.parametrize(
    ("asked", "error", "says"),
    [
        ([], InputError, "non-empty list"),
        ("six", InputError, "non-empty list"),
        ([3], InputError, "requirement strings"),
        (["--index-url=https://evil.example/"], InputError, "pip's options are not taken"),
        (["six==="], InputError, "is not a requirement"),
        (["six; os_name == 'nt'"], InputError, "markers"),
        (["six @ https://evil.example/six.whl"], InstallRefused, "ask for it by name"),
        (["a", "b", "c", "d"], InstallRefused, "at most 3"),
    ],
)
def test_what_may_be_asked(asked: object, error: type[Exception], says: str) -> None:
    settings = PackageSettings(levels=("unknown",), index=INDEX, max_packages=3)
    with pytest.raises(error, match=says):
        check_requirements(asked, settings, "unknown", "python")


def test_requirements_are_kept_as_packaging_writes_them() -> None:
    settings = PackageSettings(levels=("unknown",), index=INDEX)
    asked = ["Seaborn == 0.13.2", "requests[socks]>=2.31", "Seaborn==0.13.2"]
    assert check_requirements(asked, settings, "unknown", "python") == (
        "Seaborn==0.13.2",
        "requests[socks]>=2.31",
    )


@pytest.mark.parametrize(
    ("packages", "trust", "language", "says"),
    [
        ({}, "untrusted", "python", "trust level 'untrusted' may not install"),
        ({"python": {}}, "unknown", "python", "the policy names no package index"),
        ({}, "unknown", "javascript", "only Python sessions"),
    ],
)
def test_a_refusal_says_what_to_do_instead_and_is_recorded(
    tmp_path: Path, packages: dict[str, Any], trust: str, language: str, says: str
) -> None:
    backend = RecordingBackend()
    with Sandbox(_policy(tmp_path, **packages), backend=backend) as sandbox:
        with sandbox.session(language, trust=trust) as session:
            with pytest.raises(InstallRefused, match=says) as refused:
                session.install(["six"])
            assert "use" in str(refused.value)  # the one thing to do next
        records = _installs(sandbox, session.id)
    assert records == [{"session": session.id, "requested": ["six"], "refused": str(refused.value)}]
    assert [mode for mode, _ in backend.kept[0].calls] == []  # nothing ran in the session
    assert not backend.kept[0].spec.packages  # and its /tmp stays noexec


@pytest.mark.parametrize(
    ("trust", "says"), [("unknown", "install it first"), ("untrusted", "no network")]
)
def test_a_missing_module_s_note_says_to_install_it_where_the_session_may(
    tmp_path: Path, trust: str, says: str
) -> None:
    stderr = b"Traceback (most recent call last):\nModuleNotFoundError: No module named 'yaml'\n"
    backend = RecordingBackend(report(exit_code=1, stderr=stderr))
    with (
        Sandbox(_policy(tmp_path), backend=backend) as sandbox,
        sandbox.session("python", trust=trust) as session,
    ):
        notes = " ".join(session.run("import yaml").notes)
        one_off = " ".join(sandbox.run("import yaml", trust="unknown").notes)
    assert says in notes, notes
    if trust == "unknown":  # by the name it has on the index
        assert "session.install(['PyYAML'])" in notes
    assert "install it first" not in one_off  # a single run cannot install


def _installs(sandbox: Sandbox, session: str) -> list[dict[str, Any]]:
    return [
        d for k, d in audit_records(sandbox) if k == "session.installed" and d["session"] == session
    ]


def _download(files: dict[str, bytes], plan: list[dict[str, Any]]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as archive:
        for name, data in {"plan.json": json.dumps(plan).encode(), **files}.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return out.getvalue()


def _index_answer(listed: str, sent: bytes = DATA) -> Any:
    plan = [{"name": "tool", "version": "1.0", "file": WHEEL, "sha256": listed, "requested": True}]

    def answer(job: Job) -> Any:
        if job.egress is None:  # the install call in the session
            return report()
        return report(files={"files.tar": _download({WHEEL: sent}, plan)})

    return answer


def test_an_install_fetches_through_the_index_alone_then_installs_in_the_session(
    tmp_path: Path,
) -> None:
    digest = hashlib.sha256(DATA).hexdigest()
    backend = RecordingBackend(answer=_index_answer(digest))
    with Sandbox(_policy(tmp_path), backend=backend) as sandbox:
        with sandbox.session("python", trust="unknown") as session:
            done = session.install(["tool==1.0"])
            kept = backend.kept[0]
        records = _installs(sandbox, session.id)
    download = backend.jobs[0]
    assert download.egress is not None and download.program.want == ("files.tar",)
    assert download.program.env["PIP_INDEX_URL"] == INDEX
    assert json.loads(download.program.files["want.json"])["requirements"] == ["tool==1.0"]
    assert (download.image, download.runtime) == (kept.spec.image, kept.spec.runtime)
    assert kept.spec.packages  # the session's /tmp allows exec, for compiled extensions
    [(mode, call)] = kept.calls
    assert mode == "run" and call.program.files[f".hazmat-install/{WHEEL}"] == DATA
    assert [(p.name, p.sha256, p.cached) for p in done.packages] == [("tool", digest, False)]
    assert (tmp_path / digest / WHEEL).read_bytes() == DATA
    assert records[0]["packages"][0]["sha256"] == digest and records[0]["requested"] == [
        "tool==1.0"
    ]
    assert "import them" in done.note


def test_a_file_whose_hash_is_not_the_index_s_is_neither_kept_nor_installed(
    tmp_path: Path,
) -> None:
    backend = RecordingBackend(answer=_index_answer("0" * 64))
    with (
        Sandbox(_policy(tmp_path), backend=backend) as sandbox,
        sandbox.session("python", trust="unknown") as session,
        pytest.raises(InfraError, match="not the one the index lists"),
    ):
        session.install(["tool"])
    assert backend.kept[0].calls == []
    assert list(tmp_path.iterdir()) == []


def test_an_install_that_would_not_fit_the_session_is_refused_before_it_is_sent(
    tmp_path: Path,
) -> None:
    big = _zip(70 * 1024 * 1024)  # 70 MB unpacked: the level's tmpfs is 64 MB (standard)
    plan = [{"name": "t", "version": "1", "file": WHEEL, "sha256": "", "requested": True}]
    answer = report(files={"files.tar": _download({WHEEL: big}, plan)})
    backend = RecordingBackend(answer)
    with (
        Sandbox(_policy(tmp_path), backend=backend) as sandbox,
        sandbox.session("python", trust="unknown") as session,
        pytest.raises(InstallRefused, match=r"70\.0 MB installed .* has 64 MB .*tmpfs_mb"),
    ):
        session.install(["t"])
    assert backend.kept[0].calls == []


def test_a_file_named_to_escape_is_not_kept(tmp_path: Path) -> None:
    plan = [{"name": "t", "version": "1", "file": "../x.whl", "sha256": "", "requested": True}]
    answer = report(files={"files.tar": _download({"../x.whl": DATA}, plan)})
    with (
        Sandbox(_policy(tmp_path), backend=RecordingBackend(answer)) as sandbox,
        sandbox.session("python", trust="unknown") as session,
        pytest.raises(InfraError, match="did not send"),
    ):
        session.install(["t"])
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("status", "stderr", "error", "says"),
    [
        (3, b"ERROR: No matching distribution found for nope\n", InputError, "No matching"),
        (4, b"hazmat: these need 9 packages\n", InstallRefused, "need 9 packages"),
        (1, b"Traceback ...\n", InfraError, "download failed"),
    ],
)
def test_a_failed_download_says_why(
    tmp_path: Path, status: int, stderr: bytes, error: type[Exception], says: str
) -> None:
    backend = RecordingBackend(report(exit_code=status, stderr=stderr))
    with (
        Sandbox(_policy(tmp_path), backend=backend) as sandbox,
        sandbox.session("python", trust="unknown") as session,
        pytest.raises(error, match=says),
    ):
        session.install(["nope"])


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (["--pip", "six"], "packages cannot be installed here"),
        (["--pip", "six", "--memory", "64"], "does not take --memory"),
    ],
)
def test_hazmat_run_pip_is_refused_before_a_container_starts(flags: list[str], says: str) -> None:
    ran = invoke(["run", "--local", *flags, "-c", "print(1)"])
    assert ran.exit_code == 2 and says in ran.stderr, ran.stderr
