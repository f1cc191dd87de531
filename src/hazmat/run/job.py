"""From a checked request and its plan to what a backend runs: the `Job` (the program's files,
its environment with the allowlist's proxy, the output files wanted, the watch), and the notes
on limits the host lowered."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hazmat.backends.agent.single import RELAY_PORT
from hazmat.backends.base import Job, Program
from hazmat.egress.proxy import Gate, proxy_env
from hazmat.languages import Language, get_language
from hazmat.policy import Clock, Limits
from hazmat.run.module_kind import module_for
from hazmat.run.results import Plan
from hazmat.watch import Watch

__all__ = ["clamp_notes", "job_for"]


def job_for(plan: Plan, gate: Gate | None, watch: Watch | None) -> Job:
    request = plan.request
    lang = get_language(request.language)
    source = lang.source_for(module_for(lang, request.code, request.module))
    program = Program(
        files={source: request.code.encode(), **request.files},
        want=tuple(request.output_files),
        stdin=request.stdin,
        max_file_bytes=plan.limits.max_file_bytes,
        max_total_bytes=plan.limits.max_download_bytes,
        env={**(proxy_env(RELAY_PORT, bool(gate.secrets)) if gate else {}), **request.env},
        args=tuple(request.args),
        displays=_displays(lang, plan.limits, request.figure_formats, request.final_value),
    )
    egress = str(gate.directory) if gate else None
    clock = request.clock or Clock.WALL
    return Job(
        lang, plan.image, plan.limits, plan.runtime, request.trust, program, egress, watch, clock,
        tuple(request.build_flags),
    )  # fmt: skip


def _displays(
    lang: Language, limits: Limits, formats: Sequence[str], final: str | None
) -> dict[str, Any] | None:
    """What the program is asked to show (displays.py; the figures' formats are Python's, and
    `final`, the last line's value as the result); None: nothing (a language that shows none,
    or a policy that allows no display)."""
    if not lang.displays or not limits.max_displays:
        return None
    if not limits.max_display_bytes:
        return None
    ask: dict[str, Any] = {
        "max": limits.max_displays,
        "bytes": limits.max_display_bytes,
        "formats": list(formats or ("png",)),
    }
    if final == "result":
        ask["result"] = True
    return ask


def clamp_notes(asked: Limits, applied: Limits) -> list[str]:
    notes = []
    if applied.memory_mb < asked.memory_mb:
        notes.append(
            f"memory lowered from {asked.memory_mb} MB to {applied.memory_mb} MB (host share)"
        )
    if applied.cpus < asked.cpus:
        notes.append(f"cpus lowered from {asked.cpus:g} to {applied.cpus:g} (host has no more)")
    return notes
