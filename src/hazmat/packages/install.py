"""An install into a session, start to end: the requirements checked against the policy
(requirements.py), the files fetched through the allowlist proxy in a sandbox of their own
(fetch.py), every member of every file checked on the host (archives.py), installed by the
session itself (install_cell.py: pip into /tmp/.packages, on an exec tmpfs; install_npm.js:
npm's tarballs, their members at checked plain paths, into the working directory's
node_modules/), and the whole recorded in the audit log (`session.installed`: what was asked,
every file's package, version and SHA-256, and what the download connected to)."""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable, Mapping, Sequence
from importlib import resources
from typing import Any

from hazmat._exceptions import HazmatError, InfraError, InstallRefused
from hazmat.backends.base import Backend, Job, Program, RunReport
from hazmat.egress.gates import Gates
from hazmat.languages import get_language
from hazmat.packages.archives import npm_tree, unpacked_size
from hazmat.packages.fetch import Fetched, PackageFile, fetch
from hazmat.packages.requirements import check_requirements
from hazmat.policy import MiB
from hazmat.policy.packages import PackageSettings

__all__ = ["Installed", "install"]

FOLDER = ".hazmat-install"


@dataclasses.dataclass(frozen=True)
class Installed:
    """What an install put into a session."""

    session: str
    requested: tuple[str, ...]
    packages: tuple[PackageFile, ...]
    duration_ms: float
    connections: tuple[dict[str, Any], ...] = ()

    @property
    def note(self) -> str:
        """One sentence for a model: what it may now import."""
        if not self.packages:
            return "already installed in the image: nothing to do; import it"
        names = ", ".join(f"{p.name} {p.version}" for p in self.packages)
        return f"installed {names}; import them in the next call"

    def to_dict(self) -> dict[str, Any]:
        return {
            "session": self.session,
            "requested": list(self.requested),
            "packages": [p.to_dict() for p in self.packages],
            "duration_ms": round(self.duration_ms, 1),
            "connections": list(self.connections),
            "note": self.note,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Installed:
        """What `to_dict` gave (a cluster worker's answer)."""
        return cls(
            str(data["session"]),
            tuple(data["requested"]),
            tuple(PackageFile.from_dict(p) for p in data["packages"]),
            float(data["duration_ms"]),
            tuple(data["connections"]),
        )


@dataclasses.dataclass(frozen=True)
class Target:
    """The session an install goes into, as the install needs it."""

    id: str
    language: str
    trust: str
    job: Callable[[Program], Job]  # a job of the session's for a program
    call: Callable[[Program, str, float], RunReport]  # an agent call of the session's, timed


def install(
    target: Target,
    asked: object,
    settings: PackageSettings,
    backend: Backend,
    gates: Gates,
    record: Callable[[Mapping[str, Any]], None],
) -> Installed:
    began = time.monotonic()
    try:
        requirements = check_requirements(asked, settings, target.trust, target.language)
        probe = target.job(Program(files={}, want=(), stdin=b"", max_file_bytes=1))
        files, connections = fetch(backend, gates, settings, probe, requirements)
        if files:
            _check_room(files, probe.limits.tmpfs_mb, target.trust)
            _put(target, files, settings.timeout_s)
    except HazmatError as exc:  # a refused or failed install is recorded too, with what was asked
        shown = [str(x)[:200] for x in asked] if isinstance(asked, list) else [str(asked)[:200]]
        why = "failed" if isinstance(exc, InfraError) else "refused"
        record({"session": target.id, "requested": shown[:100], why: str(exc)})
        raise
    took = (time.monotonic() - began) * 1000
    packages = tuple(f.file for f in files)
    done = Installed(target.id, requirements, packages, took, tuple(connections))
    record(done.to_dict())
    return done


def _check_room(files: Sequence[Fetched], tmpfs_mb: int, trust: str) -> None:
    """`InstallRefused` where the files would not fit the session: they are written into its
    working directory, and installed (unpacked) into its /tmp (Python) or working directory
    (npm), each a tmpfs of `tmpfs_mb`."""
    packed = sum(len(f.data) for f in files)
    unpacked = sum(unpacked_size(f.data, f.file.file) for f in files)  # every member checked
    npm = any(f.file.path for f in files)  # both in the working directory
    if max(packed, unpacked) > tmpfs_mb * MiB or (npm and packed + unpacked > tmpfs_mb * MiB):
        raise InstallRefused(
            f"these packages take {unpacked / MiB:.1f} MB installed ({packed / MiB:.1f} MB "
            f"of files); a session at trust level {trust!r} has {tmpfs_mb} MB for them (policy "
            f"trust.{trust}.tmpfs_mb): install fewer or smaller packages"
        )


def _put(target: Target, files: Sequence[Fetched], timeout_s: float) -> None:
    """Send the files into the session and have it install them: Python's interpreter with
    pip (install_cell.py), or Node unpacking npm's tarballs (install_npm.js)."""
    language = get_language(target.language)
    sent: dict[str, bytes]
    if language.name == "python":
        cell = _inside("install_cell.py").decode()
        code = f"exec(compile({cell!r}, '<hazmat install>', 'exec'), {{'__name__': 'install'}})\n"
        sent = {f"{FOLDER}/{f.file.file}": f.data for f in files}
    else:
        code = _inside("install_npm.js").decode()
        plan = [{"path": f.file.path, "archive": f"{f.digest}.tgz"} for f in files]
        # each tarball's members checked and at plain paths, first part removed (archives.py)
        sent = {f"{FOLDER}/{f.digest}.tgz": npm_tree(f.data, f.file.file) for f in files}
        sent[f"{FOLDER}/plan.json"] = json.dumps(plan).encode()
    program = Program(
        files={language.source_name: code.encode(), **sent}, want=(), stdin=b"", max_file_bytes=1
    )
    report = target.call(program, "run", timeout_s)
    if report.exit_code != 0:
        said = report.stderr.decode(errors="replace").strip().splitlines()[-3:]
        raise InfraError(
            f"the session could not install the packages (status {report.exit_code}): "
            + (" ".join(said) or "; ".join(report.notes) or "no message")
        )


def _inside(name: str) -> bytes:
    return resources.files("hazmat.packages").joinpath(name).read_bytes()
