"""A kept build's own logic (backends/kept/kept_build.py), on in-memory containers: one build, the
archive and only the test's own files with each test, a new container (not a new build) after one
ends, a failed build for every test, an unclean container's test moved, the fallback for a
backend that keeps nothing. (The kept build on the real engine:
tests/execution/test_kept_build.py.)"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest

from hazmat import InfraError, Policy, Sandbox
from hazmat.backends.agent.session_agent import unclean_marker
from hazmat.backends.base import Backend, Job, KeptBackend, Program, RunReport, Spec
from hazmat.backends.kept.build_cache import BuildCache, Built
from hazmat.backends.kept.kept_build import ARCHIVE, SHARED_NOTE, KeptBuild
from hazmat.grade.grader import Grader
from hazmat.grade.tasks import parse_task
from hazmat.languages import get_language
from hazmat.policy import Runtime, TrustLevel

Answer = Callable[[Job, str], RunReport]


def built(job: Job, mode: str) -> RunReport:
    if mode == "build":
        return RunReport(0, b"", b"", 40.0, build_status=0, build_ms=30.0, files={ARCHIVE: b"A"})
    return RunReport(0, b"ran " + job.program.stdin, b"", 5.0)


class FakeKept(KeptBackend):
    def __init__(self, host: FakeHost, spec: Spec) -> None:
        self.host = host
        self.spec = spec
        self.limited = 0

    @property
    def container_id(self) -> str | None:
        return "c"

    def call(self, job: Job, mode: str, archive: bytes = b"") -> RunReport:
        self.host.calls.append((mode, dict(job.program.files), archive, self))
        report = self.host.answer(job, mode)
        if report.timed_out:
            self.ended = "it ran out of time"
        return report

    def limit_memory(self, job: Job) -> int | None:
        self.limited += 1
        return self.host.held

    def end(self, why: str, now: bool = False) -> None:
        self.ended = self.ended or why


class FakeHost(Backend):
    keeps_containers = True

    def __init__(self, answer: Answer = built, held: int | None = None) -> None:
        self.answer = answer
        self.held = held
        self.kept: list[FakeKept] = []
        self.calls: list[tuple[str, dict[str, bytes], bytes, FakeKept]] = []
        self.executed: list[Job] = []

    def keep(self, spec: Spec, lifetime_s: float) -> KeptBackend:
        assert spec.kept_build and spec.session
        self.kept.append(FakeKept(self, spec))
        return self.kept[-1]

    def execute(self, job: Job) -> RunReport:
        self.executed.append(job)
        return RunReport(0, b"alone", b"", 1.0)


def job(language: str = "c", stdin: bytes = b"", **files: bytes) -> Job:
    lang = get_language(language)
    source = {lang.source_names[0]: b"int main(void) { return 0; }"}
    program = Program(files={**source, **files}, want=(), stdin=stdin, max_file_bytes=1 << 20)
    limits = Policy().settings(TrustLevel.UNTRUSTED).limits
    return Job(lang, "image", limits, Runtime.RUNC, TrustLevel.UNTRUSTED, program)


def test_it_builds_once_and_sends_the_archive_and_the_tests_own_files_only() -> None:
    host = FakeHost()
    kept_build = KeptBuild(host, 60.0, frozenset({"data.txt"}))
    first = kept_build.execute(job(stdin=b"1", **{"data.txt": b"task", "in.txt": b"a"}))
    second = kept_build.execute(job(stdin=b"2", **{"data.txt": b"test's own", "in.txt": b"b"}))
    modes = [(mode, sorted(files), archive) for mode, files, archive, _ in host.calls]
    assert modes == [
        ("build", ["data.txt", "main.c"], b""),  # the source and the task's files
        ("again", ["in.txt"], b"A"),
        ("again", ["data.txt", "in.txt"], b"A"),  # a file that differs from the build's
    ]
    assert (first.stdout, second.stdout) == (b"ran 1", b"ran 2")
    # the first test carries the build's time, as a single run would
    assert (first.build_status, first.build_ms, first.duration_ms) == (0, 30.0, 35.0)
    assert (second.build_status, second.build_ms) == (None, None)
    assert len(host.kept) == 1 and host.kept[0].limited == 1


def test_a_test_that_ends_the_container_costs_a_new_container_not_a_build() -> None:
    def answer(job: Job, mode: str) -> RunReport:
        report = built(job, mode)
        return dataclasses.replace(report, timed_out=job.program.stdin == b"slow")

    host = FakeHost(answer)
    kept_build = KeptBuild(host, 60.0)
    for stdin in (b"1", b"slow", b"3"):
        kept_build.execute(job(stdin=stdin))
    assert [mode for mode, *_ in host.calls] == ["build", "again", "again", "again"]
    assert len(host.kept) == 2 and kept_build.containers == 2
    assert host.calls[-1][2] == b"A"  # the kept archive, not a second build
    assert host.kept[1].limited == 1  # at the program's memory limit from the start


def test_a_failed_build_is_every_tests_report() -> None:
    def answer(job: Job, mode: str) -> RunReport:
        return RunReport(1, b"", b"error: x undeclared", 9.0, build_status=1, build_ms=9.0)

    host = FakeHost(answer)
    kept_build = KeptBuild(host, 60.0)
    reports = [kept_build.execute(job(stdin=b"%d" % n)) for n in range(3)]
    assert [r.build_status for r in reports] == [1, 1, 1]
    assert [mode for mode, *_ in host.calls] == ["build"]


def test_a_build_that_leaves_too_much_in_use_is_every_tests_memory_limit() -> None:
    host = FakeHost(held=300 << 20)
    kept_build = KeptBuild(host, 60.0)
    reports = [kept_build.execute(job(stdin=b"%d" % n)) for n in range(2)]
    assert [r.held_after_build for r in reports] == [300 << 20] * 2
    assert [mode for mode, *_ in host.calls] == ["build"]


def test_a_test_the_agent_cannot_make_clean_moves_to_a_new_container() -> None:
    unclean = {"count": 1}

    def answer(job: Job, mode: str) -> RunReport:
        if mode == "again" and unclean["count"] > 0:
            unclean["count"] -= 1
            return RunReport(126, unclean_marker(job.program.nonce), b"", 2.0)
        return built(job, mode)

    host = FakeHost(answer)
    kept_build = KeptBuild(host, 60.0)
    report = kept_build.execute(job(stdin=b"1"))
    assert report.stdout == b"ran 1"
    assert len(host.kept) == 2 and host.kept[0].ended is not None
    # a new container that is not clean either is the infrastructure's failure
    unclean["count"] = 2
    with pytest.raises(InfraError, match="could not be made clean"):
        kept_build.execute(job(stdin=b"2"))


def test_a_backend_that_keeps_nothing_runs_each_test_alone() -> None:
    host = FakeHost()
    host.keeps_containers = False
    kept_build = KeptBuild(host, 60.0)
    assert kept_build.execute(job(stdin=b"1")).stdout == b"alone"
    assert len(host.executed) == 1 and host.calls == []


def test_every_test_of_a_bench_needs_the_same_kind_of_container() -> None:
    kept_build = KeptBuild(FakeHost(), 60.0)
    kept_build.execute(job(stdin=b"1"))
    other = job(stdin=b"2")
    other = dataclasses.replace(other, limits=other.limits.replace(memory_mb=64))
    with pytest.raises(InfraError, match="one kind of container"):
        kept_build.execute(other)


def test_a_language_without_a_build_step_is_archived_too() -> None:
    host = FakeHost(lambda job, mode: built(job, mode) if mode == "again" else _archived())
    kept_build = KeptBuild(host, 60.0)
    report = kept_build.execute(job("python", stdin=b"1"))
    assert report.stdout == b"ran 1" and report.build_ms is None
    assert [(mode, archive) for mode, _, archive, _ in host.calls] == [
        ("build", b""),
        ("again", b"T"),
    ]


def _archived() -> RunReport:
    return RunReport(0, b"", b"", 20.0, files={ARCHIVE: b"T"})


def test_a_grader_shares_a_bench_unless_fresh_or_a_tests_memory_differs() -> None:
    tests = [
        {"stdin": "1", "expected_stdout": "ran 1"},
        {"stdin": "2", "expected_stdout": "ran 2"},
        {"stdin": "3", "memory_mb": 64, "expected_stdout": "alone"},
    ]
    task = parse_task({"id": "t", "language": "c", "code": "int main(void){}", "tests": tests})
    host = FakeHost()
    with Sandbox(backend=host) as sandbox:
        result = Grader(sandbox, override_reason="fake containers, nothing runs").grade(task)
    assert [t.verdict for t in result.tests] == ["accepted"] * 3, result.message
    assert [mode for mode, *_ in host.calls] == ["build", "again", "again"]
    assert [j.limits.memory_mb for j in host.executed] == [64]
    assert result.compile_ms == 30.0

    fresh = FakeHost()
    with Sandbox(backend=fresh) as sandbox:
        Grader(sandbox, fresh=True, override_reason="fake containers, nothing runs").grade(task)
    assert fresh.calls == [] and len(fresh.executed) == 3


def test_a_container_that_cannot_archive_the_build_runs_each_test_alone() -> None:
    def answer(job: Job, mode: str) -> RunReport:
        if mode == "build":  # built, but no archive: an image without tar
            return RunReport(2, b"", b"sh: tar: not found\n", 9.0, build_status=0, build_ms=5.0)
        raise AssertionError("no test runs in the kept build")

    host = FakeHost(answer)
    kept_build = KeptBuild(host, 60.0)
    reports = [kept_build.execute(job(stdin=b"%d" % n)) for n in range(2)]
    assert [r.stdout for r in reports] == [b"alone", b"alone"]
    assert "tar: not found" in reports[0].notes[-1]
    assert len(host.executed) == 2 and host.kept[0].ended is not None


def test_the_same_source_is_built_once_across_kept_builds_of_one_owner() -> None:
    """A second kept build of the same source, files and kind of container starts from the
    first one's archive: no build call, the first test says the build was shared. Another
    owner, another source or another task file builds again."""
    host, cache = FakeHost(), BuildCache()

    def grade(owner: str | None, source: bytes = b"int main(void) { return 0; }", **files: bytes):
        kept_build = KeptBuild(host, 60.0, frozenset(files), cache=cache, owner=owner)
        with kept_build:
            made = job(stdin=b"1", **files)
            made = dataclasses.replace(
                made, program=dataclasses.replace(made.program, files={"main.c": source, **files})
            )
            return kept_build.execute(made), kept_build.execute(made)

    first, _ = grade("tenant:a")
    again, second_test = grade("tenant:a")
    assert [mode for mode, *_ in host.calls] == ["build", "again", "again", "again", "again"]
    assert host.calls[3][2] == b"A"  # the shared archive goes with the test, as a kept one
    assert SHARED_NOTE not in first.notes and SHARED_NOTE in again.notes
    assert SHARED_NOTE not in second_test.notes  # said once, with the first test
    assert (again.build_status, again.build_ms) == (0, 0.0) and again.stdout == b"ran 1"
    assert (cache.hits, len(cache)) == (1, 1)
    host.calls.clear()
    grade("tenant:b")  # another owner
    grade("tenant:a", b"int main(void) { return 1; }")  # another source
    grade("tenant:a", **{"data.txt": b"x"})  # a file the build sees
    assert [mode for mode, *_ in host.calls].count("build") == 3


def test_a_failed_build_is_not_shared() -> None:
    def answer(job: Job, mode: str) -> RunReport:
        return RunReport(1, b"", b"error: x undeclared", 9.0, build_status=1, build_ms=9.0)

    host, cache = FakeHost(answer), BuildCache()
    for _ in range(2):
        with KeptBuild(host, 60.0, cache=cache, owner="t") as kept_build:
            assert kept_build.execute(job()).build_status == 1
    assert [mode for mode, *_ in host.calls] == ["build", "build"] and len(cache) == 0


def test_the_cache_keeps_the_most_recently_used_builds_within_its_bytes() -> None:
    cache = BuildCache(max_bytes=10)
    spec = job().spec
    keys = [BuildCache.key("o", spec, "", {"main.c": bytes([n])}) for n in range(3)]
    cache.put(keys[0], Built(b"x" * 4, {}, 1.0))
    cache.put(keys[1], Built(b"y" * 4, {}, 1.0))
    assert cache.get(keys[0]) is not None  # used: the newest now
    cache.put(keys[2], Built(b"z" * 4, {}, 1.0))  # 12 bytes: the least recently used goes
    assert cache.get(keys[1]) is None and cache.get(keys[0]) and cache.get(keys[2])
    cache.put(keys[1], Built(b"w" * 11, {}, 1.0))  # alone over the bound: not kept
    assert cache.get(keys[1]) is None and len(cache) == 2
