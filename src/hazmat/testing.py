"""Test doubles for code that uses hazmat: run the whole pipeline without Docker.

`RecordingBackend` stands in for the container backend, as httpx's `MockTransport` stands in
for the network: `Sandbox` still validates the request, resolves it against the policy,
assesses the code, applies the policy's decision and writes the audit log; only the execution
is replaced. The backend records each `Job` it is given and answers with a fixed `RunReport`
(build one with `report(...)`), or raises the error you gave it. `audit_records` reads back
what a sandbox's audit log holds.

Copy this to test your own code (pytest)::

    import hazmat
    from hazmat.testing import RecordingBackend, audit_records, report


    def grade(sandbox: hazmat.Sandbox, answer: str) -> bool:  # the code under test
        return sandbox.run(answer, "python").stdout == "42\\n"


    def test_grade_accepts_the_answer(tmp_path, monkeypatch):
        monkeypatch.setenv("HAZMAT_AUDIT_DIR", str(tmp_path))  # not your real audit log
        backend = RecordingBackend(report(stdout=b"42\\n"))
        with hazmat.Sandbox(backend=backend) as sandbox:
            assert grade(sandbox, "print(6 * 7)")
            kinds = [kind for kind, _ in audit_records(sandbox)]
        assert backend.jobs[0].program.files["main.py"] == b"print(6 * 7)"
        assert kinds[-2:] == ["run.started", "run.finished"]

Give `RecordingBackend(error=hazmat.EngineUnavailable("engine gone"))` to see how your code
takes an infrastructure failure (an `infra_error` result), and `report(exit_code=137,
oom_killed=True)` for a run that ran out of memory: the outcome is derived from these facts
exactly as from a container's.

A session on a `RecordingBackend` keeps a `KeptRecording` (in the backend's `kept`), whose
`calls` are each call's mode (`run`, `files`, ...) and job.

`as_asked(policy)` is the policy with every runtime as a run asks it: the static assessment
raises none (by default, code it finds risky runs under gVisor even at a runc level), for a
test of what a runtime itself does.

`invoke(argv, stdin=, env=)` runs the `hazmat` command in this process, as click's
`CliRunner.invoke` does, and gives back its exit status and what it wrote::

    from hazmat.testing import invoke

    result = invoke(["run", "-c", "print(1)", "--lang", "cobol"])
    assert result.exit_code == 2 and "unknown language 'cobol'" in result.stderr
"""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from hazmat.audit.layout import list_log
from hazmat.audit.records import parse_line
from hazmat.backends.base import Backend, Job, KeptBackend, RunReport, Spec
from hazmat.policy import HostResources, Policy, Runtime

if TYPE_CHECKING:
    from hazmat.sandbox import Sandbox

__all__ = [
    "Clock",
    "Invoked",
    "KeptRecording",
    "RecordingBackend",
    "as_asked",
    "audit_records",
    "download_report",
    "invoke",
    "report",
]

_EMPTY = RunReport(exit_code=0, stdout=b"", stderr=b"", duration_ms=1.0)


class Clock:
    """A clock the test moves itself (`clock.now += 60`), for the parts that take one: quota
    books, the pool's sizer, the local server's idle watch."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class RecordingBackend(Backend):
    """Records each job and answers with a fixed report (or raises).

    `jobs` holds every `Job` the pipeline handed over, in order: what would have run, with
    its image, runtime, limits and program (files, stdin, wanted outputs). A run the policy
    blocks never gets here. `closed` tells whether the sandbox closed its backend.

    `report` is the answer to every job (default: exit status 0, stdout `hi\\n`); `answer`, if
    given, makes the answer from each job instead (say, from its stdin: a grader's test cases,
    docs/batch.md); `error`, if given, is raised instead, as a backend raises `InfraError`
    when its engine fails.
    `host` is what the machine is said to have: limits are clamped to a share of it
    (default: 2 CPUs, 24 GB).
    """

    def __init__(
        self,
        report: RunReport | None = None,
        error: Exception | None = None,
        host: HostResources | None = None,
        answer: Callable[[Job], RunReport] | None = None,
    ) -> None:
        self.jobs: list[Job] = []
        self.answer = answer
        self.report = report or RunReport(exit_code=0, stdout=b"hi\n", stderr=b"", duration_ms=5)
        self.error = error
        self.host = host or HostResources(cpus=2, memory_mb=24 * 1024)
        self.closed = False
        self.kept: list[KeptRecording] = []

    def execute(self, job: Job) -> RunReport:
        self.jobs.append(job)
        if self.error:
            raise self.error
        return self.answer(job) if self.answer is not None else self.report

    def resources(self) -> HostResources:
        return self.host

    def keep(self, spec: Spec, lifetime_s: float) -> KeptBackend:
        """A session's kept container, recorded (`kept`): its calls are recorded and answered
        as the backend's jobs are. (A grader's tests still run one by one here: the backend
        says it keeps no containers for kept builds.)"""
        self.kept.append(KeptRecording(self, spec))
        return self.kept[-1]

    def close(self) -> None:
        self.closed = True


class KeptRecording(KeptBackend):
    """One kept container of a `RecordingBackend`: `calls` holds each call's mode (`run`,
    `files`, `save`, `restore`) and job, in order; every job also lands in the backend's
    `jobs`. `ended` says why it was ended, once it is."""

    def __init__(self, backend: RecordingBackend, spec: Spec) -> None:
        self.backend = backend
        self.spec = spec
        self.calls: list[tuple[str, Job]] = []
        self.number = len(backend.kept) + 1  # its place among the backend's kept containers

    @property
    def container_id(self) -> str | None:
        return f"recorded-{self.number}"

    @property
    def fixed_runtime(self) -> Runtime:
        return self.spec.runtime

    def call(self, job: Job, mode: str, archive: bytes = b"") -> RunReport:
        self.calls.append((mode, job))
        return self.backend.execute(job)

    def execute(self, job: Job) -> RunReport:
        return self.call(job, "run")

    def end(self, why: str, now: bool = False) -> None:
        self.ended = self.ended or why


def as_asked(policy: Policy | None = None) -> Policy:
    """`policy` (default: the built-in one) with each runtime as a run asks it: the assessment
    raises none (`assess.runtime_for: {}` at every level, run/routing.py), so that a test of
    runc with risky code runs under runc. Everything else of the policy is kept."""
    policy = policy or Policy()
    levels = {
        level: replace(
            settings, assess=replace(settings.assess, runtime_for=MappingProxyType({}))
        )
        for level, settings in policy.levels.items()
    }
    return replace(policy, levels=MappingProxyType(levels))


def report(**facts: Any) -> RunReport:
    """A `RunReport` of a run that exited 0 with no output in 1 ms, but for the given facts
    (`exit_code`, `stdout`, `timed_out`, `oom_killed`, `files`, ...: `RunReport`'s fields)."""
    return replace(_EMPTY, **facts)


def download_report(files: Mapping[str, bytes], plan: Sequence[Mapping[str, Any]]) -> RunReport:
    """The report of a package download's sandbox that sends `files` (each under the name it
    has in the archive) with `plan` (its entries: `file`, `digest`, `member`, ...), in the one
    archive `hazmat/packages/fetch.py` reads: what a hostile or broken download can answer."""
    import json
    import tarfile

    from hazmat.packages.fetch import ARCHIVE

    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as archive:
        for name, data in {"plan.json": json.dumps(list(plan)).encode(), **files}.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return report(files={ARCHIVE: out.getvalue()})


def audit_records(sandbox: Sandbox) -> list[tuple[str, dict[str, Any]]]:
    """The records of the sandbox's audit log so far, oldest first, as `(kind, data)`:
    `("run.started", {...})`, `("run.finished", {...})`, `("run.blocked", {...})`, ..."""
    found: list[tuple[str, dict[str, Any]]] = []
    for _, path in sorted(list_log(sandbox.audit.dir).segments.items()):
        for line in path.read_bytes().splitlines():
            record = parse_line(line)[0]
            found.append((record.kind, record.data))
    return found


@dataclass(frozen=True)
class Invoked:
    """What `invoke` saw: the command's exit status and what it wrote (as click's `Result`:
    the bytes, and `stdout` / `stderr` as text)."""

    exit_code: int
    stdout_bytes: bytes
    stderr_bytes: bytes

    @property
    def stdout(self) -> str:
        return self.stdout_bytes.decode("utf-8", errors="replace")

    @property
    def stderr(self) -> str:
        return self.stderr_bytes.decode("utf-8", errors="replace")


def invoke(
    argv: Sequence[str],
    *,
    stdin: bytes | str = b"",
    env: Mapping[str, str | None] | None = None,
) -> Invoked:
    """Run `hazmat *argv` in this process (`hazmat.cli.main`), with `stdin` as its standard
    input and `env` over the environment (a None value unsets a variable), both put back
    afterwards. Standard output and error are pipes to the command: not terminals, and with
    no file descriptor (a test that needs a real process, for signals or file descriptors,
    starts one). Not thread-safe: it swaps `sys.std*` and `os.environ` while it runs."""
    from hazmat.cli import main

    data = stdin.encode() if isinstance(stdin, str) else stdin
    out, err = io.BytesIO(), io.BytesIO()
    streams = (
        io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"),
        io.TextIOWrapper(out, encoding="utf-8", write_through=True),
        io.TextIOWrapper(err, encoding="utf-8", errors="backslashreplace", write_through=True),
    )
    saved, environment = (sys.stdin, sys.stdout, sys.stderr), dict(os.environ)
    try:
        for name, value in (env or {}).items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        sys.stdin, sys.stdout, sys.stderr = streams
        code = main(list(argv))
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved
        os.environ.clear()
        os.environ.update(environment)
    for stream in streams[1:]:
        stream.flush()
    return Invoked(code, out.getvalue(), err.getvalue())
