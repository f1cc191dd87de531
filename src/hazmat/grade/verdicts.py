"""A run's outcome as a judge's verdict (docs/batch.md)."""

from __future__ import annotations

from collections.abc import Mapping

from hazmat.models import Outcome

__all__ = ["VERDICT_OF"]

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
