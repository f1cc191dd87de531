"""From findings to a risk level.

Each distinct rule counts once per analyser, at its most severe finding: a program that calls
`os.system` twenty times is no riskier than one that calls it once, while one that reaches for
several different dangerous things is. The weights added are the risk score: low 1, medium 4,
high 10, critical 40.

    any critical finding               -> BLOCKED
    risk score >= 10                   -> HIGH
    risk score >= 4, or a syntax error -> MEDIUM
    otherwise                          -> LOW

An incomplete assessment (an analyser failed, timed out, crashed or skipped the code) is at
least HIGH: what was not looked at cannot be called safe.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from hazmat.assess.base import SYNTAX_ERROR
from hazmat.models import Assessment, Finding, RiskLevel, Severity

__all__ = ["HIGH_SCORE", "MEDIUM_SCORE", "WEIGHTS", "rate", "risk_score"]

WEIGHTS = {
    Severity.INFO: 0,
    Severity.LOW: 1,
    Severity.MEDIUM: 4,
    Severity.HIGH: 10,
    Severity.CRITICAL: 40,
}
HIGH_SCORE = 10
MEDIUM_SCORE = 4


def risk_score(findings: Iterable[Finding]) -> int:
    worst: dict[tuple[str, str], int] = {}
    for f in findings:
        key = (f.source, f.rule)
        worst[key] = max(worst.get(key, 0), WEIGHTS[f.severity])
    return sum(worst.values())


def rate(
    findings: Sequence[Finding],
    *,
    language: str,
    duration_ms: float,
    analyzers: Sequence[str],
    problems: Sequence[str] = (),
) -> Assessment:
    """The assessment for these findings; `problems` non-empty means incomplete."""
    ordered = sorted(set(findings), key=lambda f: (-f.severity.rank, f.line, f.column, f.rule))
    total = risk_score(ordered)
    syntax = next((f for f in ordered if f.rule == SYNTAX_ERROR), None)
    if any(f.severity is Severity.CRITICAL for f in ordered):
        level = RiskLevel.BLOCKED
    elif total >= HIGH_SCORE:
        level = RiskLevel.HIGH
    elif total >= MEDIUM_SCORE or syntax is not None:
        level = RiskLevel.MEDIUM
    else:
        level = RiskLevel.LOW
    if problems and level.rank < RiskLevel.HIGH.rank:
        level = RiskLevel.HIGH
    return Assessment(
        level=level,
        risk_score=total,
        complete=not problems,
        findings=tuple(ordered),
        duration_ms=duration_ms,
        language=language,
        analyzers=tuple(analyzers),
        problems=tuple(problems),
        syntax_error=f"line {syntax.line}: {syntax.message}" if syntax else None,
    )
