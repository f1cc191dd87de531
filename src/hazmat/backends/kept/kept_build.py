"""A kept build: one kept container for one submission's test cases (grade/grader.py).

The submission is built once (session mode `build`: its own memory budget and time, as for a
single run) and the host keeps the build folder, as the archive the agent sends back. Each
test case is then one call (mode `again`, backends/agent/session_agent.py): the agent empties
everything the program may write (the working directory, /tmp, /dev/shm, System V IPC), the
build's archive and the test's files are unpacked, and the program runs as a fresh process,
so every test starts from the state right after the build, whatever the last one did. The
archive is the host's: a test cannot change what the next one starts from. A test that ends
the container (out of time or output, cancelled, lost) costs the next test a new container,
not a new build. Every call is still a run of the pipeline (`Sandbox.execute_in`): assessed,
recorded and checked like any other. A backend that cannot keep containers (a test's fake),
or a container that could not archive the build (an image without tar or find), gets a
single run per test instead, in a fresh container of its own.

With a `BuildCache` (build_cache.py: one per `Sandbox`), a successful build is kept by what it
depends on, and a kept build of the same source (same owner, kind of container and files)
starts from its archive instead of building: the first test's report then says so.
"""

from __future__ import annotations

import dataclasses

from hazmat._exceptions import InfraError, SessionClosed
from hazmat.backends.agent.session_agent import unclean_marker
from hazmat.backends.base import Backend, Job, KeptBackend, Program, RunReport, Spec
from hazmat.backends.kept.build_cache import BuildCache, Built
from hazmat.policy import Clock, HostResources

__all__ = ["ARCHIVE", "SHARED_NOTE", "KeptBuild"]

ARCHIVE = ".hazmat-build.tar"  # the build folder, as the agent hands it over
_MiB = 1024 * 1024
SHARED_NOTE = "the build was shared: this source was built earlier for the same owner"


class KeptBuild(KeptBackend):
    """Runs one submission's tests (`execute`, one per test) in a container kept for them;
    `build_files` are the input files its build sees besides the source (the task's own, not
    a test's). `close()` removes the container. With a `cache`, a build of the same source for
    the same `owner` is shared (build_cache.py)."""

    one_budget = False  # the build keeps its own memory budget (compile_memory_mb)

    def __init__(
        self,
        backend: Backend,
        lifetime_s: float,
        build_files: frozenset[str] = frozenset(),
        *,
        cache: BuildCache | None = None,
        owner: str | None = None,
    ) -> None:
        self.backend = backend
        self.lifetime_s = lifetime_s
        self.build_files = build_files
        self.cache = cache
        self.owner = owner
        self.spec: Spec | None = None
        self.kept: KeptBackend | None = None
        self.archive: bytes | None = None  # the build, once it succeeded (b"": no build step)
        self.built: dict[str, bytes] = {}  # the input files in the archive
        self.failed: RunReport | None = None  # a build that failed, or left too much in use
        self.alone: str | None = None  # why each test runs alone (no archive came back)
        self.containers = 0
        self.fresh = 0  # tests moved to a new container: the last one left what cannot be cleared
        self.ended = None

    @property
    def container_id(self) -> str | None:
        return self.kept.container_id if self.kept is not None else None

    def resources(self) -> HostResources:
        return self.backend.resources()

    @property
    def tier(self) -> str | None:  # its backend's
        return self.backend.tier

    def execute(self, job: Job) -> RunReport:
        if self.ended is not None:
            raise SessionClosed(f"the kept build has ended: {self.ended}")
        if not self.backend.keeps_containers:
            return self.backend.execute(job)
        spec = dataclasses.replace(job.spec, session=True, kept_build=True)
        if self.spec is None:
            self.spec = spec
        elif spec != self.spec:
            raise InfraError("a kept build's tests share one kind of container; this one differs")
        if self.failed is not None:
            return self.failed
        built = None
        if self.archive is None and self.alone is None:
            built = self._shared(job) or self._build(job)
            if self.archive is None and self.alone is None:
                return built
        if self.alone is not None:
            report = self.backend.execute(job)
            return dataclasses.replace(report, notes=(*report.notes, self.alone))
        # the test's own files: the archive holds the source and the build's
        files = {n: d for n, d in job.program.files.items() if self.built.get(n) != d}
        test = dataclasses.replace(
            job,
            language=dataclasses.replace(job.language, build=""),
            program=dataclasses.replace(job.program, files=files),
        )
        report = self._test(job, test)
        if built is None or not job.language.build:
            return report
        return dataclasses.replace(
            report,
            build_status=built.build_status,
            build_ms=built.build_ms,
            duration_ms=(built.build_ms or 0.0) + report.duration_ms,  # as a single run's
            notes=(*report.notes, *(n for n in built.notes if n == SHARED_NOTE)),
        )

    def _test(self, job: Job, test: Job) -> RunReport:
        """Run one test; in a new container when the agent could not clear what the last
        test left (a socket in TIME_WAIT, a process that would not end, System V IPC objects
        under gVisor, which lists none to remove), or not in time (`UNPACK_S`)."""
        kept = self._container(job)
        report = kept.call(test, "again", self.archive or b"")
        if not _unclean(report, test):
            return _own(report)
        kept.end("the last test left what the agent cannot clear")
        self.fresh += 1
        report = self._container(job).call(test, "again", self.archive or b"")
        if _unclean(report, test):
            raise InfraError("a new container for a test could not be made clean")
        return _own(report)

    def call(self, job: Job, mode: str, archive: bytes = b"") -> RunReport:
        if mode != "run":
            raise InfraError(f"a kept build takes tests only, not {mode!r} calls")
        return self.execute(job)

    def _build_files(self, job: Job) -> dict[str, bytes]:
        """What the build sees: the source (the first file) and the task's own files."""
        return {
            name: data
            for number, (name, data) in enumerate(job.program.files.items())
            if number == 0 or name in self.build_files
        }

    def _cache_key(self, job: Job) -> str | None:
        if self.cache is None or self.spec is None:
            return None
        return self.cache.key(
            self.owner, self.spec, job.language.build or "", self._build_files(job)
        )

    def _shared(self, job: Job) -> RunReport | None:
        """The build of the same source, kept earlier (build_cache.py): its archive becomes
        this kept build's, and the report says the build was shared; None if there is none."""
        key = self._cache_key(job)
        found = self.cache.get(key) if self.cache is not None and key is not None else None
        if found is None:
            return None
        self.archive, self.built = found.archive, dict(found.files)
        return RunReport(0, b"", b"", 0.0, build_status=0, build_ms=0.0, notes=(SHARED_NOTE,))

    def _build(self, job: Job) -> RunReport:
        """Build the submission; keep the archive if it succeeded (and, with a cache, share
        it). The report of a failed build (or one that left more in use than the program
        may have) is every test's."""
        kept = self._container(job)
        files = self._build_files(job)
        cap = job.limits.tmpfs_mb * _MiB
        program = Program(
            files=files, want=(ARCHIVE,), stdin=b"", max_file_bytes=cap, max_total_bytes=cap
        )
        limits = job.limits.replace(max_file_bytes=cap, max_download_bytes=cap)
        # the build is not measured: its budget is wall-clock time (compile_timeout_s)
        build = dataclasses.replace(job, program=program, limits=limits, clock=Clock.WALL)
        report = kept.call(build, "build")
        archive = report.files.get(ARCHIVE)
        report = dataclasses.replace(
            report, files={}, notes=tuple(n for n in report.notes if ARCHIVE not in n)
        )
        if job.language.build and report.build_status != 0:
            self.failed = report  # a compile error (or timeout) is every test's
            return report
        if archive is None:  # an image without tar or find, a tmpfs too small for two copies
            why = _said(report)
            self.alone = f"each test ran in a fresh container: the build was not kept ({why})"
            kept.end(self.alone)
            return report
        held = kept.limit_memory(job)
        if held is not None:
            self.failed = dataclasses.replace(report, held_after_build=held)
            return self.failed
        self.archive = archive
        self.built = files
        key = self._cache_key(job)
        if self.cache is not None and key is not None:
            self.cache.put(key, Built(archive, files, report.build_ms))
        return report

    def _container(self, job: Job) -> KeptBackend:
        """The kept build's container; a new one when the last test ended it (at the program's
        memory limit once the build is done)."""
        if self.kept is None or self.kept.ended is not None:
            assert self.spec is not None
            self.kept = self.backend.keep(self.spec, self.lifetime_s)
            self.containers += 1
            if self.archive is not None:
                self.kept.limit_memory(job)
        return self.kept

    def end(self, why: str, now: bool = False) -> None:
        if self.ended is None:
            self.ended = why
        if self.kept is not None:
            self.kept.end(why, now)

    def close(self) -> None:
        self.end("it was closed")


def _unclean(report: RunReport, test: Job) -> bool:
    """Whether the agent refused the test (what the last one left could not be cleared, so
    the program did not run), or could not unpack it in time."""
    unpacking = report.compile_timed_out and report.build_status is None
    return unpacking or report.stdout == unclean_marker(test.program.nonce)


def _own(report: RunReport) -> RunReport:
    """A test's report as its own: the agent's unpacking is not a build, and the test's
    time is its program's, from its go to its end."""
    wall = report.program_ms if report.program_ms is not None else report.duration_ms
    return dataclasses.replace(report, build_status=None, build_ms=None, duration_ms=wall)


def _said(report: RunReport) -> str:
    """What the agent said when it could not do a kept build's work (its last line of stderr)."""
    lines = report.stderr.decode("utf-8", "replace").strip().splitlines()
    return lines[-1] if lines else f"exit status {report.exit_code}"
