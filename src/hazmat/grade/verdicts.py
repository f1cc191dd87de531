"""A run's outcome as a judge's verdict (docs/batch.md)."""

from __future__ import annotations

from collections.abc import Mapping

from hazmat.models import ExecutionResult, Outcome

__all__ = ["VERDICT_OF", "verdict_of"]

VERDICT_OF: Mapping[Outcome, str] = {
    Outcome.OK: "accepted",  # until its output is judged
    Outcome.ERROR: "runtime_error",
    Outcome.PIDS_LIMIT: "runtime_error",
    Outcome.COMPILE_ERROR: "compile_error",
    Outcome.COMPILE_TIMEOUT: "compile_error",
    Outcome.TIMEOUT: "time_limit",
    Outcome.MEMORY_LIMIT: "memory_limit",
    Outcome.OUTPUT_LIMIT: "output_limit",
    Outcome.BLOCKED: "blocked",
    Outcome.INFRA_ERROR: "infra_error",
    Outcome.CANCELLED: "infra_error",
}


def verdict_of(run: ExecutionResult) -> str:
    """A run's verdict before its output is judged: `VERDICT_OF` its outcome, but
    `idleness_limit` for a program stopped as idle on the CPU clock (it slept or waited for
    input past the wall-clock backstop: Codeforces' "idleness limit exceeded")."""
    if run.outcome is Outcome.TIMEOUT and run.stopped_by == "idle":
        return "idleness_limit"
    return VERDICT_OF[run.outcome]
