"""What the pipeline does with an assessment: run, warn, block, or run on an override.

The policy says per trust level what LOW, MEDIUM and HIGH do. BLOCKED always blocks; code the
policy blocks runs only when the caller gives an override with a written reason, which is
recorded with the run.
"""

from __future__ import annotations

import enum

from hazmat._exceptions import InputError
from hazmat.models import Assessment, RiskLevel
from hazmat.policy import Action, AssessSettings

__all__ = ["Decision", "check_override_reason", "decide", "explain"]


class Decision(enum.StrEnum):
    """What the pipeline did with a program after assessing it."""

    RUN = "run"
    WARN = "warn"  # runs; the result carries a note
    BLOCK = "block"  # does not run; outcome `blocked`
    OVERRIDE = "override"  # the policy would block; the caller's written reason let it run


def check_override_reason(reason: str | None, settings: AssessSettings) -> str | None:
    """The reason, stripped; an `InputError` if it is too short to explain anything."""
    if reason is None:
        return None
    if not isinstance(reason, str):
        raise InputError(f"override_reason must be a string, not {type(reason).__name__}")
    reason = " ".join(reason.split())
    if len(reason) < settings.override_min_chars:
        raise InputError(
            f"override reason must say why in at least {settings.override_min_chars} "
            f"characters (got {len(reason)})"
        )
    return reason


def decide(assessment: Assessment, settings: AssessSettings, override: str | None) -> Decision:
    action = settings.action(assessment.level)
    if action is Action.BLOCK:
        return Decision.OVERRIDE if override else Decision.BLOCK
    return Decision.WARN if action is Action.WARN else Decision.RUN


def explain(assessment: Assessment) -> str:
    """One line: the level and the most severe findings."""
    parts = [f"{assessment.level.value} (risk score {assessment.risk_score})"]
    if not assessment.complete:
        parts.append("incomplete: " + "; ".join(assessment.problems))
    top = [f for f in assessment.findings if f.severity.rank >= 2][:3]
    if top:
        parts.append(", ".join(f"line {f.line}: {f.message} [{f.rule}]" for f in top))
    if assessment.level is RiskLevel.BLOCKED and not top:
        parts.append("see the findings")
    return "; ".join(parts)
