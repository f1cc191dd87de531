"""The download of an install: a single-use sandbox of the session's image and runtime whose
only network is the package index's hosts, through the allowlist proxy (a gate of its own).
Its program is hazmat's (fetch_inside.py), not the caller's: pip works out what to install and
downloads what the host's cache lacks. The host checks every file against the hash the index
listed before it keeps it (cache.py) or sends it anywhere."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import tarfile
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
from hazmat.package_policy import PackageSettings
from hazmat.packages.cache import WheelCache, check_file_name
from hazmat.policy import MiB

__all__ = ["Fetched", "PackageFile", "fetch"]

CA_PATH = "ca.pem"
ARCHIVE = "files.tar"


@dataclasses.dataclass(frozen=True)
class PackageFile:
    """One package file of an install, as it is recorded and shown."""

    name: str
    version: str
    file: str
    sha256: str
    bytes: int
    cached: bool  # it came from the host's cache, not the index
    requested: bool  # asked for by name (not only a dependency)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PackageFile:
        return cls(**{f.name: data[f.name] for f in dataclasses.fields(cls)})


@dataclasses.dataclass(frozen=True)
class Fetched:
    """A package file an install needs, checked against its hash, and its content."""

    file: PackageFile
    data: bytes = dataclasses.field(repr=False)


def fetch(
    backend: Backend,
    gates: Gates,
    settings: PackageSettings,
    session: Job,
    requirements: Sequence[str],
) -> tuple[list[Fetched], list[dict[str, Any]]]:
    """The files `requirements` need beside the image's, and what the download connected to.
    `session`: a job of the session's (its image, runtime, trust level and limits)."""
    cache = WheelCache(settings.cache_dir())
    hosts, ports = settings.reach
    gate = gates.open(hosts, ports)
    if gate is None:  # pragma: no cover - settings.allows() needs an index
        raise InstallRefused("this service has no package index (packages.python.index)")
    try:
        job = _job(settings, session, requirements, cache, str(gate.directory))
        job = dataclasses.replace(job, limits=job.limits.clamped(backend.resources()))
        report = backend.execute(job)
    finally:
        connections = gates.close(gate)
    return _files(report, settings, cache), connections


def _job(
    settings: PackageSettings,
    session: Job,
    requirements: Sequence[str],
    cache: WheelCache,
    egress: str,
) -> Job:
    most = settings.max_mb * MiB
    want = {
        "requirements": list(requirements),
        "cached": cache.hashes(),
        "most_files": settings.max_packages,
        "most_bytes": most,
    }
    files = {"main.py": _inside("fetch_inside.py"), "want.json": json.dumps(want).encode()}
    env = {**proxy_env(RELAY_PORT), "PIP_INDEX_URL": settings.index or ""}
    if settings.ca_bundle:
        try:
            files[CA_PATH] = Path(settings.ca_bundle).read_bytes()
        except OSError as exc:
            raise InfraError(f"packages.ca_bundle: cannot read it: {exc}") from exc
        env["PIP_CERT"] = f"/work/{CA_PATH}"  # the working directory (backends/container)
    program = Program(
        files=files, want=(ARCHIVE,), stdin=b"", max_file_bytes=most + 4 * MiB, env=env
    )
    limits = session.limits.replace(
        memory_mb=settings.memory_mb + 3 * settings.max_mb,  # pip's, and its files' (tmpfs)
        timeout_s=settings.timeout_s,
        tmpfs_mb=2 * settings.max_mb + 64,
        max_file_bytes=most + 4 * MiB,
        max_download_bytes=most + 4 * MiB,
        compile_memory_mb=0,
    )
    python = get_language("python")
    return Job(python, session.image, limits, session.runtime, session.trust, program, egress)


def _files(report: RunReport, settings: PackageSettings, cache: WheelCache) -> list[Fetched]:
    if report.timed_out:
        raise InfraError(
            f"the package index did not answer in time ({settings.timeout_s:g} s, policy "
            "packages.timeout_s); try again, or ask for fewer packages"
        )
    if report.exit_code in (3, 4, 5):
        raise (InstallRefused if report.exit_code == 4 else InputError)(_pip_says(report))
    if report.exit_code != 0 or ARCHIVE not in report.files:
        why = "; ".join(report.notes) or _pip_says(report)
        raise InfraError(f"the package download failed (status {report.exit_code}): {why}")
    with tarfile.open(fileobj=io.BytesIO(report.files[ARCHIVE])) as archive:
        members = {m.name: m for m in archive.getmembers() if m.isfile()}
        plan = json.loads(_read(archive, members, "plan.json"))
        return [_checked(entry, archive, members, cache) for entry in plan]


def _checked(
    entry: dict[str, Any],
    archive: tarfile.TarFile,
    members: dict[str, tarfile.TarInfo],
    cache: WheelCache,
) -> Fetched:
    name, listed = str(entry["file"]), str(entry["sha256"])
    kept = cache.get(listed) if listed else None
    if kept is not None and kept[0] == name:
        data, cached = kept[1], True
    else:
        if not check_file_name(name) or name not in members:
            raise InfraError(f"the package download did not send {name!r}")
        data, cached = _read(archive, members, name), False
        digest = hashlib.sha256(data).hexdigest()
        if listed and digest != listed:
            raise InfraError(f"{name}: its SHA-256 is not the one the index lists: not installed")
        cache.put(name, data)
    sha256 = hashlib.sha256(data).hexdigest()
    requested = bool(entry.get("requested"))
    file = PackageFile(
        str(entry["name"]), str(entry["version"]), name, sha256, len(data), cached, requested
    )
    return Fetched(file, data)


def _read(archive: tarfile.TarFile, members: dict[str, tarfile.TarInfo], name: str) -> bytes:
    member = members.get(name)
    stream = archive.extractfile(member) if member is not None else None
    if stream is None:
        raise InfraError(f"the package download's archive lacks {name!r}")
    return stream.read()


def _pip_says(report: RunReport) -> str:
    """pip's own words: its last errors, after its first warning (why it skipped an index
    page or a connection failed, where that was the cause)."""
    lines = [ln.strip() for ln in report.stderr.decode(errors="replace").splitlines()]
    errors = [ln for ln in lines if ln.startswith(("ERROR", "hazmat:"))][-2:]
    warned = [ln for ln in lines if ln.startswith("WARNING")][:1]
    return (
        " ".join(warned + errors) or " ".join(ln for ln in lines if ln)[-300:] or "pip said nothing"
    )


def _inside(name: str) -> bytes:
    return resources.files("hazmat.packages").joinpath(name).read_bytes()
