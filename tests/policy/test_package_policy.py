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
from hazmat.packages.requirements import check_requirements
from hazmat.policy.file import parse_policy
from hazmat.policy.packages import PackageSettings, Source
from hazmat.testing import RecordingBackend, audit_records, download_report, invoke, report

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
        ({"npm": {"registry": "ftp://npm.example/"}}, "packages.npm.registry"),
        ({"npm": {"index": "https://npm.example/"}}, "packages.npm.index"),
        ({"conda": {}}, "packages.conda"),
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
    assert settings.python is not None
    assert settings.python.reach() == (["files.x", "pypi.mirror.example"], [8443])
    npm = parse_policy(
        {"packages": {"levels": ["trusted"], "npm": {"registry": "https://npm.example"}}}
    ).packages
    assert npm.allows("trusted", "typescript") and not npm.allows("trusted", "python")
    assert npm.source("javascript") == Source("npm", "https://npm.example/")


@pytest.mark.parametrize(
    ("asked", "error", "says"),
    [
        ([], InputError, "non-empty list"),
        ("six", InputError, "non-empty list"),
        ([3], InputError, "requirement strings"),
        (["--index-url=https://evil.example/"], InputError, "options are not taken"),
        (["six==="], InputError, "is not a requirement"),
        (["six; os_name == 'nt'"], InputError, "markers"),
        (["six @ https://evil.example/six.whl"], InstallRefused, "ask for it by name"),
        (["a", "b", "c", "d"], InstallRefused, "at most 3"),
        # what pip reads as a local file to unpack or build, not a name
        (["six.tar.gz"], InputError, "a file name"),
        (["rt4.whl"], InputError, "a file name"),
        (["Tool.ZIP"], InputError, "a file name"),
        (["x===/etc/x.whl"], InputError, "`===` is not taken"),
        (["x===1.0"], InputError, "`===` is not taken"),
        (["six===a\x00b"], InputError, "printable ASCII"),
        (["six==1.0\n--index-url=x"], InputError, "printable ASCII"),
        (["./six"], InputError, "is not a requirement"),
        ([".."], InputError, "is not a requirement"),
    ],
)
def test_what_may_be_asked(asked: object, error: type[Exception], says: str) -> None:
    settings = PackageSettings(("unknown",), Source("python", INDEX), max_packages=3)
    with pytest.raises(error, match=says):
        check_requirements(asked, settings, "unknown", "python")


@pytest.mark.parametrize(
    ("asked", "error", "says"),
    [
        (["git+https://evil.example/x.git"], InstallRefused, "a repository"),
        (["file:../x"], InstallRefused, "a path"),
        (["npm:lodash@1"], InstallRefused, "ask for it by name"),
        (["user/repo"], InputError, "not an npm package name"),
        (["Lodash"], InputError, "not an npm package name"),
        (["lodash@1.0.0 || $(id)"], InputError, "not an npm package name"),
        (["--registry=https://evil.example/"], InputError, "options are not taken"),
        # what npm reads as a folder or a file to install from, not a version
        (["x@."], InputError, "not an npm package name"),
        (["x@.."], InputError, "not an npm package name"),
        (["x@.hidden"], InputError, "not an npm package name"),
        (["x.tgz"], InputError, "a file name"),
        (["x@y.tar.gz"], InputError, "a file name"),
        (["x@1\x00"], InputError, "printable ASCII"),
        (["_x@1"], InputError, "not an npm package name"),
        (["node_modules"], InputError, "not an npm package name"),
        (["x@1.0.0 ; id"], InputError, "not an npm package name"),
    ],
)
def test_what_an_npm_session_may_ask(asked: object, error: type[Exception], says: str) -> None:
    settings = PackageSettings(("unknown",), npm=Source("npm", "https://npm.example/"))
    with pytest.raises(error, match=says):
        check_requirements(asked, settings, "unknown", "typescript")


def test_npm_requirements_pass_as_given() -> None:
    settings = PackageSettings(("unknown",), npm=Source("npm", "https://npm.example/"))
    asked = ["lodash@4.17.21", "@types/node@^20", "left-pad", "x@>=1.2 <2 || 3.x", "x@latest",
             "x@~1.2.3", "x@1.0.0-beta.1", "x@1.2.3 - 2", "x@*", "a.b@^1"]  # fmt: skip
    assert check_requirements(asked, settings, "unknown", "javascript") == tuple(asked)


def test_requirements_are_kept_as_packaging_writes_them() -> None:
    settings = PackageSettings(("unknown",), Source("python", INDEX))
    asked = ["Seaborn == 0.13.2", "requests[socks]>=2.31", "Seaborn==0.13.2"]
    assert check_requirements(asked, settings, "unknown", "python") == (
        "Seaborn==0.13.2",
        "requests[socks]>=2.31",
    )


@pytest.mark.parametrize(
    ("packages", "trust", "language", "says"),
    [
        ({}, "untrusted", "python", "trust level 'untrusted' may not install"),
        ({"python": {}}, "unknown", "python", "names no python source: packages.python.index"),
        ({}, "unknown", "javascript", "names no npm source: packages.npm.registry"),
        ({}, "unknown", "ruby", "only Python, JavaScript and TypeScript sessions"),
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


def _entry(file: str, listed: str, member: str, **more: Any) -> dict[str, Any]:
    return {"name": "tool", "version": "1.0", "file": file, "digest": listed, "member": member,
            "requested": True, **more}  # fmt: skip


def _index_answer(listed: str, sent: bytes = DATA) -> Any:
    member = hashlib.sha256(sent).hexdigest()
    plan = [_entry(WHEEL, listed, member)]

    def answer(job: Job) -> Any:
        if job.egress is None:  # the install call in the session
            return report()
        return download_report({member: sent}, plan)

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
    assert (tmp_path / "python" / digest / WHEEL).read_bytes() == DATA
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
        pytest.raises(InfraError, match="its digest is not the one the index lists"),
    ):
        session.install(["tool"])
    assert backend.kept[0].calls == []
    [failed] = _installs(sandbox, session.id)  # recorded, with why
    assert "its digest is not the one the index lists" in failed["failed"]
    assert list(tmp_path.iterdir()) == []


def test_an_install_that_would_not_fit_the_session_is_refused_before_it_is_sent(
    tmp_path: Path,
) -> None:
    big = _zip(70 * 1024 * 1024)  # 70 MB unpacked: the level's tmpfs is 64 MB (standard)
    member = hashlib.sha256(big).hexdigest()
    answer = download_report({member: big}, [_entry(WHEEL, member, member)])
    backend = RecordingBackend(answer)
    with (
        Sandbox(_policy(tmp_path), backend=backend) as sandbox,
        sandbox.session("python", trust="unknown") as session,
        pytest.raises(InstallRefused, match=r"70\.0 MB installed .* has 64 MB .*tmpfs_mb"),
    ):
        session.install(["t"])
    assert backend.kept[0].calls == []


def test_a_file_named_to_escape_is_not_kept(tmp_path: Path) -> None:
    plan = [_entry("../x.whl", "", "m")]
    answer = download_report({"m": DATA}, plan)
    with (
        Sandbox(_policy(tmp_path), backend=RecordingBackend(answer)) as sandbox,
        sandbox.session("python", trust="unknown") as session,
        pytest.raises(InstallRefused, match="named a file"),
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


def _tgz(files: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as archive:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return out.getvalue()


@pytest.mark.parametrize("path", ["node_modules/left", "../../etc/left", "node_modules/../x"])
def test_an_npm_install_puts_each_tarball_in_its_place_in_node_modules(
    tmp_path: Path, path: str
) -> None:
    tgz = _tgz({"package/index.js": b"module.exports = 1;\n"})
    digest = hashlib.sha512(tgz).hexdigest()
    plan = [_entry("left-1.0.0.tgz", digest, digest, path=path)]
    answer = download_report({digest: tgz}, plan)
    backend = RecordingBackend(answer=lambda job: report() if job.egress is None else answer)
    npm = {"levels": ["unknown"], "npm": {"registry": "https://npm.example/"}}
    policy = parse_policy({"packages": {**npm, "cache": str(tmp_path)}})
    with (
        Sandbox(policy, backend=backend) as sandbox,
        sandbox.session("typescript", trust="unknown") as session,
    ):
        if path != "node_modules/left":  # a place outside node_modules/: nothing is kept
            with pytest.raises(InstallRefused, match="named a file"):
                session.install(["left@1"])
            assert not (tmp_path / "npm").exists() and backend.kept[0].calls == []
            return
        done = session.install(["left@1"])
    download = backend.jobs[0]
    assert download.language.name == "javascript" and "main.js" in download.program.files
    assert download.program.env["npm_config_registry"] == "https://npm.example/"
    assert not backend.kept[0].spec.packages  # npm's packages need no exec /tmp
    [(mode, call)] = backend.kept[0].calls
    assert mode == "run"
    sent = call.program.files
    assert "main.ts" in sent  # the tarball made again at plain paths, `package/` removed
    with tarfile.open(fileobj=io.BytesIO(sent[f".hazmat-install/{digest}.tgz"])) as tree:
        assert [(m.name, m.isfile()) for m in tree] == [("index.js", True)]
    assert json.loads(sent[".hazmat-install/plan.json"]) == [
        {"path": "node_modules/left", "archive": f"{digest}.tgz"}
    ]
    assert [(p.name, p.path) for p in done.packages] == [("tool", "node_modules/left")]
    assert (tmp_path / "npm" / digest / "left-1.0.0.tgz").read_bytes() == tgz


def test_a_pause_keeps_the_names_of_python_s_packages_and_an_older_one_has_none() -> None:
    from hazmat.sessions.store import Paused

    paused = Paused(
        "s-1", "python", "unknown", "runc", None, None, None, 1.0, 10, packages=("six",)
    )
    assert Paused.from_dict(json.loads(json.dumps(paused.as_dict()))) == paused
    older = {k: v for k, v in paused.as_dict().items() if k != "packages"}
    assert Paused.from_dict(older).packages == ()
