"""Sandbox.metrics(): counts per outcome, blocked runs, pool hits and misses, percentiles."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from hazmat import Outcome, Policy, Sandbox
from hazmat.audit.log import AuditLog
from hazmat.backends.base import Job, RunReport
from hazmat.testing import RecordingBackend, report


class ScriptedBackend(RecordingBackend):
    """Answers each job with the next report of a script."""

    def __init__(self, reports: list[RunReport]) -> None:
        super().__init__()
        self.reports = list(reports)

    def execute(self, job: Job) -> RunReport:
        self.jobs.append(job)
        return self.reports.pop(0)


def test_metrics_count_outcomes_pool_use_and_latency(tmp_path: Path) -> None:
    reports = [
        replace(report(), pooled=True),
        replace(report(exit_code=1), pooled=True),
        replace(report(timed_out=True, exit_code=137), pooled=False),
        replace(report(oom_killed=True, exit_code=137), pooled=True),
        report(),
    ]
    backend = ScriptedBackend(reports)
    with Sandbox(Policy(), backend=backend, audit=AuditLog(tmp_path)) as sandbox:
        empty = sandbox.metrics()
        outcomes = [sandbox.run("print(1)").outcome for _ in reports]
        blocked = sandbox.run("().__class__.__base__.__subclasses__()")
        stats = sandbox.metrics()
    assert empty.runs == 0 and empty.latency_p50_ms is None and empty.rate(0) == 0.0
    assert outcomes == [
        Outcome.OK,
        Outcome.ERROR,
        Outcome.TIMEOUT,
        Outcome.MEMORY_LIMIT,
        Outcome.OK,
    ]
    assert blocked.outcome is Outcome.BLOCKED
    assert (stats.runs, stats.ok, stats.errors, stats.timeouts) == (6, 2, 1, 1)
    assert (stats.memory_limit_hits, stats.blocked, stats.infra_errors) == (1, 1, 0)
    assert (stats.pool_hits, stats.pool_misses) == (3, 1)
    assert stats.pool_hit_rate == 0.75
    assert stats.latency_p50_ms is not None and stats.latency_p95_ms is not None
    assert 0 < stats.latency_p50_ms <= stats.latency_p95_ms
    data = stats.to_dict()
    assert data["rates"]["ok"] == 2 / 6 and data["rates"]["blocked"] == 1 / 6


def test_a_refused_fork_decides_the_outcome_only_when_the_program_failed(tmp_path: Path) -> None:
    reports = [
        report(exit_code=2, pids_refused=3),  # e.g. Go: "failed to create new OS thread"
        report(exit_code=0, pids_refused=5),  # it coped: its status stands, a note says so
        report(exit_code=137, pids_refused=1, oom_killed=True),  # memory decides first
    ]
    with Sandbox(Policy(), backend=ScriptedBackend(reports), audit=AuditLog(tmp_path)) as sb:
        failed, coped, oom = (sb.run("print(1)") for _ in reports)
        stats = sb.metrics()
    assert (failed.outcome, failed.exit_code) == (Outcome.PIDS_LIMIT, 2)
    assert failed.error is not None and "refused at its limit of" in failed.error
    assert coped.outcome is Outcome.OK and coped.error is None
    assert any("5 fork(s) or thread(s) were refused" in note for note in coped.notes)
    assert oom.outcome is Outcome.MEMORY_LIMIT
    assert (stats.pids_limit_hits, stats.memory_limit_hits) == (1, 1)
