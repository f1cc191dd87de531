"""Semgrep after the run, for trust levels whose policy says `semgrep: async`: the run does not
wait for it, and its findings go to the audit log as an `assess.semgrep` record."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from hazmat.assess.risk import rate
from hazmat.audit.run_records import RunRecorder
from hazmat.models import Assessment, ExecutionRequest

if TYPE_CHECKING:
    from hazmat.assess.assessor import Assessor


class LateSemgrep:
    def __init__(self, assessor: Assessor, recorder: RunRecorder) -> None:
        self._assessor = assessor
        self._recorder = recorder
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    def submit(self, run_id: str, request: ExecutionRequest, assessment: Assessment) -> None:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(1, thread_name_prefix="hazmat-semgrep")
            self._pool.submit(self._scan, run_id, request, assessment)

    def _scan(self, run_id: str, request: ExecutionRequest, assessment: Assessment) -> None:
        report = self._assessor.semgrep.scan(request.code, request.language)
        merged = rate(
            [*assessment.findings, *report.findings],
            language=request.language,
            duration_ms=assessment.duration_ms + report.duration_ms,
            analyzers=[*assessment.analyzers, "semgrep"],
            problems=[*assessment.problems, *([report.problem] if report.problem else [])],
        )
        self._recorder.late_findings(
            run_id,
            {
                "findings": [f.to_dict() for f in report.findings],
                "problem": report.problem,
                "cached": report.cached,
                "duration_ms": round(report.duration_ms, 3),
                "level_before": assessment.level.value,
                "level_after": merged.level.value,
            },
        )

    def close(self) -> None:
        """Wait for the scans still pending."""
        with self._lock:
            pool = self._pool
        if pool is not None:
            pool.shutdown(wait=True)
