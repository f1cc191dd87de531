"""The download of an install: a single-use sandbox of the session's image and runtime whose
only network is the package source's hosts, through the allowlist proxy (a gate of its own).
Its program is hazmat's, not the caller's (fetch_pip.py for Python, fetch_npm.js for
JavaScript and TypeScript): pip or npm works out what to install and downloads it, into one
archive whose files are named by their digest. That sandbox is told the requirements and the
caps, nothing of the host's cache: what it holds is nobody's business there. The host takes
only files whose digest the index lists (a file the index lists no digest for is refused),
checks each against it before it keeps it (cache.py) or sends it anywhere, and uses its own
copy where its cache holds one whose bytes match."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import re
import tarfile
import urllib.parse
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from hazmat._exceptions import InfraError, InputError, InstallRefused
from hazmat.backends.agent.single import RELAY_PORT
from hazmat.backends.base import Backend, Job, Program, RunReport
from hazmat.egress.gates import Gates
from hazmat.egress.proxy import proxy_env
from hazmat.languages import get_language
from hazmat.packages.cache import FileCache, check_file_name
from hazmat.packages.requirements import NPM_NAME
from hazmat.policy import MiB
from hazmat.policy.packages import PackageSettings, Source

__all__ = ["Fetched", "PackageFile", "fetch"]

CA_PATH = "ca.pem"
ARCHIVE = "files.tar"
# where an npm package goes in the session's working directory: node_modules/, nested
_NODE_NAME = f"node_modules/{NPM_NAME}"
_NODE_PATH = re.compile(f"(?:{_NODE_NAME}/)*{_NODE_NAME}")
# an exact version (semver: it starts with a digit; `.` and `..` would be folders to npm)
_NPM_SPEC = re.compile(rf"{NPM_NAME}@[0-9][0-9A-Za-z.+-]{{0,99}}")


@dataclasses.dataclass(frozen=True)
class PackageFile:
    """One package file of an install, as it is recorded and shown."""

    name: str
    version: str
    file: str
    sha256: str
    bytes: int
    cached: bool  # the host's cache held it whole (its bytes checked): its copy is the one used
    requested: bool  # asked for by name (not only a dependency)
    path: str = ""  # npm: where it goes in the working directory (node_modules/...)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PackageFile:
        return cls(**{f.name: data[f.name] for f in dataclasses.fields(cls) if f.name in data})


@dataclasses.dataclass(frozen=True)
class Fetched:
    """A package file an install needs, checked against its digest, and its content."""

    file: PackageFile
    data: bytes = dataclasses.field(repr=False)
    digest: str  # in the cache's algorithm (cache.py)


def fetch(
    backend: Backend,
    gates: Gates,
    settings: PackageSettings,
    session: Job,
    requirements: Sequence[str],
) -> tuple[list[Fetched], list[dict[str, Any]]]:
    """The files `requirements` need beside the image's, and what the download connected to.
    `session`: a job of the session's (its language, image, runtime, trust level, limits)."""
    source = settings.source(session.language.name)
    if source is None:  # pragma: no cover - check_requirements refused it already
        raise InstallRefused("this service has no package source for this language")
    cache = FileCache(settings.cache_dir(), source.kind)
    hosts, ports = source.reach()
    gate = gates.open(hosts, ports)
    if gate is None:  # pragma: no cover - a source has a host
        raise InstallRefused("the package source has no host")
    most = settings.max_mb * MiB
    want = {"requirements": list(requirements), "most_files": settings.max_packages}
    try:
        run = _Run(backend, settings, source, session, str(gate.directory))
        plan, sent = run({**want, "most_bytes": most})
        lacking = _lacking(plan, sent, cache) if source.kind == "npm" else []
        if lacking:  # npm: the tarballs of this install the cache lacks, in a sandbox again
            sent.update(run({"pack": lacking, "most_bytes": most})[1])
    finally:
        connections = gates.close(gate)
    fetched = [_checked(entry, sent, cache) for entry in plan]
    return list({f.digest + f.file.path: f for f in fetched}.values()), connections


@dataclasses.dataclass(frozen=True)
class _Run:
    """One run of the download's program: its plan and the files it sent, by member name."""

    backend: Backend
    settings: PackageSettings
    source: Source
    session: Job
    egress: str

    def __call__(self, want: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, bytes]]:
        job = _job(self.settings, self.source, self.session, want, self.egress)
        job = dataclasses.replace(job, limits=job.limits.clamped(self.backend.resources()))
        return _sent(self.backend.execute(job), self.settings, self.source)


def _lacking(plan: list[dict[str, Any]], sent: dict[str, bytes], cache: FileCache) -> list[str]:
    """npm's `<name>@<version>` of each entry the download did not send and the cache does
    not hold whole (its bytes checked)."""
    specs = []
    for entry in plan:
        listed, spec = str(entry.get("digest")), f"{entry.get('name')}@{entry.get('version')}"
        if listed not in sent and cache.is_digest(listed) and cache.get(listed) is None:
            if not _NPM_SPEC.fullmatch(spec):
                raise InstallRefused(f"the package download named a package {spec!r}: not fetched")
            specs.append(spec)
    return sorted(set(specs))


def _job(
    settings: PackageSettings,
    source: Source,
    session: Job,
    want: dict[str, Any],
    egress: str,
) -> Job:
    most = settings.max_mb * MiB
    python = source.kind == "python"
    language = get_language("python" if python else "javascript")
    inside = _inside("fetch_pip.py" if python else "fetch_npm.js")
    files = {language.source_name: inside, "want.json": json.dumps(want).encode()}
    env = {**proxy_env(RELAY_PORT)}
    env["PIP_INDEX_URL" if python else "npm_config_registry"] = source.url
    if python and source.on_trial:  # pip takes an http:// index only from a host it is told
        env["PIP_TRUSTED_HOST"] = urllib.parse.urlsplit(source.url).netloc
    if settings.ca_bundle:
        try:
            files[CA_PATH] = Path(settings.ca_bundle).read_bytes()
        except OSError as exc:
            raise InfraError(f"packages.ca_bundle: cannot read it: {exc}") from exc
        # in the working directory (backends/container)
        env["PIP_CERT" if python else "npm_config_cafile"] = f"/work/{CA_PATH}"
    program = Program(
        files=files, want=(ARCHIVE,), stdin=b"", max_file_bytes=most + 4 * MiB, env=env
    )
    limits = session.limits.replace(
        memory_mb=settings.memory_mb + 3 * settings.max_mb,  # pip's or npm's, and its files'
        timeout_s=settings.timeout_s,
        tmpfs_mb=2 * settings.max_mb + 64,
        max_file_bytes=most + 4 * MiB,
        max_download_bytes=most + 4 * MiB,
        compile_memory_mb=0,
    )
    return Job(language, session.image, limits, session.runtime, session.trust, program, egress)


def _sent(
    report: RunReport, settings: PackageSettings, source: Source
) -> tuple[list[Any], dict[str, bytes]]:
    if report.timed_out:
        raise InfraError(
            f"the package index did not answer in time ({settings.timeout_s:g} s, policy "
            "packages.timeout_s); try again, or ask for fewer packages"
        )
    unreachable = _unreachable(report)
    if unreachable is not None:  # the service's index, not the caller's requirements
        raise InfraError(
            f"the package index at {source.url} did not answer ({unreachable}); nothing was "
            "installed: the service's operator can check that the index is reachable"
        )
    if report.exit_code in (3, 4, 5):
        raise (InstallRefused if report.exit_code == 4 else InputError)(_says(report))
    if report.exit_code != 0 or ARCHIVE not in report.files:
        why = "; ".join(report.notes) or _says(report)
        raise InfraError(f"the package download failed (status {report.exit_code}): {why}")
    with tarfile.open(fileobj=io.BytesIO(report.files[ARCHIVE])) as archive:
        members = {m.name.removeprefix("./"): m for m in archive.getmembers() if m.isfile()}
        sent = {name: _read(archive, members, name) for name in members}
    plan = json.loads(sent.pop("plan.json", b"null"))
    if not isinstance(plan, list) or not all(isinstance(entry, dict) for entry in plan):
        raise InfraError("the package download's archive lacks its plan")
    return plan, sent


def _checked(entry: dict[str, Any], sent: dict[str, bytes], cache: FileCache) -> Fetched:
    name, listed = str(entry["file"]), str(entry["digest"])
    path = str(entry.get("path") or "")
    if not check_file_name(name) or (path and not _NODE_PATH.fullmatch(path)):
        raise InstallRefused(f"the package download named a file {name!r} at {path!r}: not kept")
    if not cache.is_digest(listed):
        raise InstallRefused(
            f"{name}: the index lists no {cache.algorithm} digest for it: not installed (only "
            "files the index vouches for are)"
        )
    kept = cache.get(listed)  # its bytes checked: a damaged or missing file is not "cached"
    if kept is not None:
        data, cached = kept[1], True
    else:
        member = str(entry.get("member") or listed)  # npm's second run: by digest
        if member not in sent:
            raise InfraError(f"the package download did not send {name!r}")
        data, cached = sent[member], False
        if cache.digest(data) != listed:
            raise InfraError(f"{name}: its digest is not the one the index lists: not installed")
        cache.put(name, data)
    file = PackageFile(
        str(entry["name"]),
        str(entry["version"]),
        name,
        hashlib.sha256(data).hexdigest(),
        len(data),
        cached,
        bool(entry.get("requested")),
        path,
    )
    return Fetched(file, data, cache.digest(data))


def _read(archive: tarfile.TarFile, members: dict[str, tarfile.TarInfo], name: str) -> bytes:
    member = members.get(name)
    stream = archive.extractfile(member) if member is not None else None
    if stream is None:
        raise InfraError(f"the package download's archive lacks {name!r}")
    return stream.read()


# what pip (its retries) and npm (its error codes) say when the index cannot be reached
_NO_ANSWER = re.compile(
    r"Retrying \(Retry\(.*\)\) after connection broken by '?(?P<pip>[A-Za-z]+Error)"
    r"|npm error code (?P<npm>ECONNREFUSED|ECONNRESET|ENOTFOUND|ETIMEDOUT|EAI_AGAIN)"
)


def _unreachable(report: RunReport) -> str | None:
    """How the download failed to reach the index (pip's `ProxyError`, npm's
    `ECONNREFUSED`), when that is why it failed; None otherwise."""
    if report.exit_code == 0:
        return None
    found = _NO_ANSWER.search(report.stderr.decode(errors="replace"))
    return None if found is None else found.group("pip") or found.group("npm")


def _says(report: RunReport) -> str:
    """pip's or npm's own words: its last errors, after its first warning (why it skipped an
    index page, where that was the cause)."""
    lines = [ln.strip() for ln in report.stderr.decode(errors="replace").splitlines()]
    errors = [ln for ln in lines if ln.startswith(("ERROR", "npm error", "hazmat:"))][-3:]
    warned = [ln for ln in lines if ln.startswith("WARNING")][:1]
    said = " ".join(warned + errors) or " ".join(ln for ln in lines if ln)[-300:]
    return said or "it said nothing"


def _inside(name: str) -> bytes:
    return resources.files("hazmat.packages").joinpath(name).read_bytes()
