"""The runtime a run gets once its code is assessed: the risk picks it when it must.

Each trust level has a runtime (`trust.<level>.runtime`) and, under `assess.runtime_for`, the
least runtime code assessed at a risk level runs under (an entry covers its level and every
level above it). The built-in policy asks `high: runsc` at every level: code assessed HIGH,
and BLOCKED code run on an override, runs under gVisor even at a level whose runtime is runc,
so LOW and MEDIUM code keeps runc's speed. A runtime is only ever raised, never lowered: a
level or a caller asking for runsc keeps it whatever the assessment says.

The runtime is picked after the assessment and before anything of the program reaches a
container, so a run routed to gVisor never runs under runc, even in part. A session's
container (and a kept build's, once built) already runs under one runtime: a call whose code
needs a stronger one is refused (`blocked`), with what to open instead, never run under the
weaker one. The result and the run's audit record carry `runtime_reason`.
"""

from __future__ import annotations

from hazmat.models import Assessment
from hazmat.policy import AssessSettings, Runtime, TrustLevel

__all__ = ["route", "session_refusal"]


def route(
    runtime: Runtime, assessment: Assessment, settings: AssessSettings, trust: TrustLevel
) -> tuple[Runtime, str] | None:
    """The stronger runtime the assessment asks for, with why (the result's and the record's
    `runtime_reason`); None when `runtime` is strong enough for it."""
    asked = settings.least_runtime(assessment.level.value)
    if asked is None or asked[0].strength <= runtime.strength:
        return None
    needed, key = asked
    why = (
        f"assessed {assessment.level.value}: policy trust.{trust.value}.assess.runtime_for.{key} "
        f"asks {needed.value} (asked: {runtime.value})"
    )
    return needed, why


def session_refusal(needed: Runtime, runtime: Runtime, why: str) -> str:
    """The error of a call refused because its container's runtime is weaker than needed."""
    return (
        f"refused: {why}, and this session's container runs under {runtime.value}. Open the "
        f"session with runtime {needed.value!r}, or run this code on its own"
    )
