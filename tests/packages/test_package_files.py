"""Package files on the host, on a recording backend (hazmat.testing) that plays a hostile
index's download: only files whose digest the index lists are taken, the download is told
nothing of the host's cache, a cached file counts only when its bytes match its digest (one
damaged or gone is fetched again and the cache repaired), and every member of a wheel or an
npm tarball is checked before anything of it is written (tests/egress/ runs the real index)."""

from __future__ import annotations

import hashlib
import io
import json
import stat
import tarfile
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hazmat import InputError, InstallRefused, Sandbox
from hazmat.backends.base import Job
from hazmat.packages.archives import npm_tree, unpacked_size
from hazmat.packages.cache import FileCache
from hazmat.policy.file import parse_policy
from hazmat.testing import RecordingBackend, audit_records, download_report, report

WHEEL = "tool-1.0-py3-none-any.whl"
INDEX = {"python": {"index": "https://pypi.mirror.example/simple/"}}
REGISTRY = {"npm": {"registry": "https://npm.mirror.example/"}}


def _zip(members: dict[str, bytes], links: tuple[str, ...] = ()) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for name, data in members.items():
            info = zipfile.ZipInfo(name)
            kind = stat.S_IFLNK if name in links else stat.S_IFREG
            info.external_attr = (kind | 0o644) << 16
            archive.writestr(info, data)
    return out.getvalue()


def _tgz(members: list[tarfile.TarInfo], data: bytes = b"x") -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as archive:
        for info in members:
            if info.isfile():
                info.size = len(data)
            archive.addfile(info, io.BytesIO(data) if info.isfile() else None)
    return out.getvalue()


def _member(name: str, kind: bytes = tarfile.REGTYPE, target: str = "", mode: int = 0o644) -> Any:
    info = tarfile.TarInfo(name)
    info.type, info.linkname, info.mode = kind, target, mode
    return info


DATA = _zip({"tool/__init__.py": b"VALUE = 1\n"})
SHA256 = hashlib.sha256(DATA).hexdigest()


def _index(file: str, data: bytes, listed: str, path: str = "") -> Callable[[Job], Any]:
    """A download that sends `data` as `file`, the index listing `listed` as its digest."""
    member = hashlib.new("sha512" if path else "sha256", data).hexdigest()
    plan = [{"name": "tool", "version": "1.0", "file": file, "digest": listed,
             "member": member, "requested": True, "path": path}]  # fmt: skip
    return lambda job: download_report({member: data}, plan)


def _installs(sandbox: Sandbox, session: str) -> list[dict[str, Any]]:
    records = [d for k, d in audit_records(sandbox) if k == "session.installed"]
    return [d for d in records if d["session"] == session]


def _sandbox(tmp_path: Path, answer: Callable[[Job], Any], source: dict[str, Any]) -> Any:
    section = {"levels": ["unknown"], "cache": str(tmp_path / "cache"), **source}
    backend = RecordingBackend(answer=lambda job: report() if job.egress is None else answer(job))
    return Sandbox(parse_policy({"packages": section}), backend=backend), backend


def test_a_file_the_index_lists_no_digest_for_is_refused(tmp_path: Path) -> None:
    sandbox, backend = _sandbox(tmp_path, _index(WHEEL, DATA, ""), INDEX)
    with sandbox, sandbox.session("python", trust="unknown") as session:
        with pytest.raises(InstallRefused, match="the index lists no sha256 digest"):
            session.install(["tool==1.0"])
        [record] = _installs(sandbox, session.id)
    assert "refused" in record and backend.kept[0].calls == []  # nothing sent to the session
    assert not (tmp_path / "cache").exists()


def test_the_download_is_told_nothing_of_the_host_s_cache(tmp_path: Path) -> None:
    cache = FileCache(tmp_path / "cache", "python")
    other = _zip({"other/__init__.py": b""})
    kept = [cache.put("other-1.0-py3-none-any.whl", other), cache.put(WHEEL, DATA)]
    sandbox, backend = _sandbox(tmp_path, _index(WHEEL, DATA, SHA256), INDEX)
    with sandbox, sandbox.session("python", trust="unknown") as session:
        done = session.install(["tool==1.0"])
    want = backend.jobs[0].program.files["want.json"]
    assert sorted(json.loads(want)) == ["most_bytes", "most_files", "requirements"]
    assert not any(digest.encode() in want for digest in kept)
    assert [p.cached for p in done.packages] == [True]  # the host used its own, checked copy


@pytest.mark.parametrize("damage", ["truncated", "removed", "beside"])
def test_a_damaged_or_missing_cached_file_is_fetched_again_and_the_cache_repaired(
    tmp_path: Path, damage: str
) -> None:
    folder = tmp_path / "cache" / "python" / SHA256
    FileCache(tmp_path / "cache", "python").put(WHEEL, DATA)
    if damage == "truncated":
        (folder / WHEEL).write_bytes(DATA[:10])
    elif damage == "removed":
        (folder / WHEEL).unlink()  # its folder left
    else:  # a damaged copy under another name, the whole one gone
        (folder / WHEEL).rename(folder / "tool-1.0-py3-none-any.tgz")
        (folder / "tool-1.0-py3-none-any.tgz").write_bytes(b"damaged")
    sandbox, backend = _sandbox(tmp_path, _index(WHEEL, DATA, SHA256), INDEX)
    with sandbox, sandbox.session("python", trust="unknown") as session:
        first = session.install(["tool==1.0"])
        again = session.install(["tool==1.0"])
    assert [p.cached for p in first.packages + again.packages] == [False, True]
    assert [p.name for p in folder.iterdir()] == [WHEEL] and (folder / WHEEL).read_bytes() == DATA
    [(_, call), _] = backend.kept[0].calls
    assert call.program.files[f".hazmat-install/{WHEEL}"] == DATA


WHEEL_MEMBERS = [
    ("../escape.py", ()),
    ("/etc/escape.py", ()),
    ("tool//escape.py", ()),
    ("tool/./x.py", ()),
    ("tool\\..\\x.py", ()),
    ("tool/x\x01.py", ()),
    ("tool/link", ("tool/link",)),
]


@pytest.mark.parametrize(("member", "links"), WHEEL_MEMBERS)
def test_a_wheel_member_outside_its_place_is_refused_before_anything_is_sent(
    tmp_path: Path, member: str, links: tuple[str, ...]
) -> None:
    wheel = _zip({"tool/__init__.py": b"", member: b"/etc/passwd"}, links)
    digest = hashlib.sha256(wheel).hexdigest()
    sandbox, backend = _sandbox(tmp_path, _index(WHEEL, wheel, digest), INDEX)
    with (
        sandbox,
        sandbox.session("python", trust="unknown") as session,
        pytest.raises(InstallRefused, match="not installed"),
    ):
        session.install(["tool==1.0"])
    assert backend.kept[0].calls == []


NPM_MEMBERS = [
    _member("package//work/victim.txt"),  # GNU tar's --strip-components=1: /work/victim.txt
    _member("package/../victim.txt"),
    _member("/package/victim.txt"),
    _member("package/a/../../victim.txt"),
    _member("package/link", tarfile.SYMTYPE, "/work/victim.txt"),
    _member("package/hard", tarfile.LNKTYPE, "/work/victim.txt"),
    _member("package/fifo", tarfile.FIFOTYPE),
    _member("package/dev", tarfile.CHRTYPE),
]


@pytest.mark.parametrize("member", NPM_MEMBERS, ids=[m.name for m in NPM_MEMBERS])
def test_an_npm_member_outside_its_place_is_refused_before_anything_is_sent(
    tmp_path: Path, member: tarfile.TarInfo
) -> None:
    tgz = _tgz([_member("package/index.js"), member])
    digest = hashlib.sha512(tgz).hexdigest()
    answer = _index("left-1.0.0.tgz", tgz, digest, "node_modules/left")
    sandbox, backend = _sandbox(tmp_path, answer, REGISTRY)
    with (
        sandbox,
        sandbox.session("javascript", trust="unknown") as session,
        pytest.raises(InstallRefused, match="not installed"),
    ):
        session.install(["left@1"])
    assert backend.kept[0].calls == []


def test_an_npm_tarball_is_made_again_of_plain_files_and_folders() -> None:
    members = [
        _member("./package", tarfile.DIRTYPE, mode=0o777),
        _member("./package/package.json", mode=0o666),
        _member("package/bin/run", mode=0o4777),
        _member("top-level-file"),  # npm drops what has no folder
    ]
    tgz = _tgz(members)
    assert unpacked_size(tgz, "x.tgz") == 2  # the bytes written
    with tarfile.open(fileobj=io.BytesIO(npm_tree(tgz, "x.tgz"))) as tree:
        made = [(m.name, m.type, m.mode, m.uid, m.uname) for m in tree]
    assert made == [
        ("package.json", tarfile.REGTYPE, 0o644, 0, ""),
        ("bin/run", tarfile.REGTYPE, 0o755, 0, ""),
    ]


def test_the_cache_says_cached_only_for_whole_files(tmp_path: Path) -> None:
    cache = FileCache(tmp_path, "python")
    digest = cache.put(WHEEL, DATA)
    assert cache.get(digest) == (WHEEL, DATA)
    (tmp_path / "python" / digest / WHEEL).write_bytes(DATA + b"!")
    assert cache.get(digest) is None
    assert cache.get("../" + digest) is None and not cache.is_digest(digest.upper())


def test_npm_fetches_in_a_second_run_only_the_tarballs_the_cache_lacks(tmp_path: Path) -> None:
    tgz = _tgz([_member("package/index.js")])
    digest = hashlib.sha512(tgz).hexdigest()
    plan = [{"name": "left", "version": "1.0.0", "file": "left-1.0.0.tgz", "digest": digest,
             "member": "", "requested": True, "path": "node_modules/left"}]  # fmt: skip

    def answer(job: Job) -> Any:
        if "pack" in json.loads(job.program.files["want.json"]):
            return download_report({digest: tgz}, [])
        return download_report({}, plan)

    sandbox, backend = _sandbox(tmp_path, answer, REGISTRY)
    with sandbox, sandbox.session("javascript", trust="unknown") as session:
        first = session.install(["left@1"])
        again = session.install(["left@1"])
    wants = [json.loads(job.program.files["want.json"]) for job in backend.jobs if job.egress]
    assert [sorted(want) for want in wants] == [
        ["most_bytes", "most_files", "requirements"],
        ["most_bytes", "pack"],  # told only what this install lacks
        ["most_bytes", "most_files", "requirements"],  # the second install: all cached
    ]
    assert wants[1]["pack"] == ["left@1.0.0"]
    assert [p.cached for p in first.packages + again.packages] == [False, True]


@pytest.mark.parametrize(("name", "version"), [("left", "."), ("left", ".."), ("l~eft", "1.0.0")])
def test_a_plan_naming_what_npm_would_read_as_a_folder_is_refused(
    tmp_path: Path, name: str, version: str
) -> None:
    """A registry's answer the download turned into a plan: `left@.` would make `npm pack`
    pack a folder, and a name the requirement check refuses is refused here too (one pattern,
    requirements.NPM_NAME): the install is refused, nothing packed, never an InfraError."""
    digest = hashlib.sha512(b"x").hexdigest()
    plan = [{"name": name, "version": version, "file": "left-1.0.0.tgz", "digest": digest,
             "member": "", "requested": True, "path": f"node_modules/{name}"}]  # fmt: skip
    answer = download_report({}, plan)
    sandbox, backend = _sandbox(tmp_path, lambda job: answer, REGISTRY)
    with (
        sandbox,
        sandbox.session("javascript", trust="unknown") as session,
        pytest.raises(InstallRefused, match="the package download named a"),
    ):
        session.install(["left@1"])
    wants = [json.loads(job.program.files["want.json"]) for job in backend.jobs if job.egress]
    assert all("pack" not in want for want in wants)


@pytest.mark.parametrize(
    ("language", "asked"),
    [
        ("python", "six===a\x00b"),
        ("python", "six.tar.gz"),
        ("python", "x===/etc/x.whl"),
        ("javascript", "x@."),
        ("javascript", "x@.."),
    ],
)
def test_a_requirement_that_is_a_path_is_the_caller_s_error_recorded_as_refused(
    tmp_path: Path, language: str, asked: str
) -> None:
    source = INDEX if language == "python" else REGISTRY
    sandbox, backend = _sandbox(tmp_path, lambda job: report(), source)
    with sandbox, sandbox.session(language, trust="unknown") as session:
        with pytest.raises(InputError) as refused:
            session.install([asked])
        [record] = _installs(sandbox, session.id)
    assert refused.value.http_status == 400 and "refused" in record and "failed" not in record
    assert not [job for job in backend.jobs if job.egress]  # nothing fetched
