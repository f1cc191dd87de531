"""From findings to a level: the score, the thresholds, and what lifts a level."""

from __future__ import annotations

import pytest

from hazmat.assess.risk import rate
from hazmat.models import Finding, RiskLevel, Severity


def finding(rule: str, severity: Severity, source: str = "python-ast", line: int = 1) -> Finding:
    return Finding(rule, source, severity, rule, line)


def level(*findings: Finding, problems: tuple[str, ...] = ()) -> RiskLevel:
    return rate(
        findings, language="python", duration_ms=0, analyzers=[], problems=problems
    ).level


def test_thresholds() -> None:
    assert level() is RiskLevel.LOW
    assert level(finding("a", Severity.LOW), finding("b", Severity.LOW)) is RiskLevel.LOW
    assert level(finding("a", Severity.MEDIUM)) is RiskLevel.MEDIUM
    assert level(finding("a", Severity.HIGH)) is RiskLevel.HIGH
    assert level(*(finding(r, Severity.MEDIUM) for r in "abc")) is RiskLevel.HIGH
    assert level(finding("a", Severity.CRITICAL)) is RiskLevel.BLOCKED


def test_a_rule_counts_once_at_its_worst() -> None:
    repeated = [finding("a", Severity.MEDIUM, line=n) for n in range(1, 50)]
    assessment = rate(repeated, language="python", duration_ms=0, analyzers=[])
    assert assessment.risk_score == 4 and assessment.level is RiskLevel.MEDIUM
    assert len(assessment.findings) == 49  # all are reported, each with its line


def test_the_former_name_score_still_answers_with_a_warning_and_in_json() -> None:
    """`Assessment.score` was renamed `risk_score` (a grader's score is another thing); the
    old attribute and the JSON's old key stay until hazmat 1.0."""
    assessment = rate([finding("a", Severity.HIGH)], language="go", duration_ms=0, analyzers=[])
    with pytest.warns(DeprecationWarning, match="renamed Assessment.risk_score") as seen:
        assert assessment.score == 10
    assert seen[0].filename == __file__
    assert assessment.to_dict()["risk_score"] == assessment.to_dict()["score"] == 10


def test_identical_findings_are_reported_once() -> None:
    same = [finding("a", Severity.HIGH, source="semgrep")] * 2
    assert len(rate(same, language="go", duration_ms=0, analyzers=[]).findings) == 1


def test_info_findings_add_nothing() -> None:
    assert level(*(finding(str(n), Severity.INFO) for n in range(100))) is RiskLevel.LOW


def test_an_incomplete_assessment_is_at_least_high() -> None:
    assessment = rate(
        [], language="python", duration_ms=0, analyzers=[], problems=["bandit: timed out"]
    )
    assert assessment.level is RiskLevel.HIGH and not assessment.complete
    assert level(finding("x", Severity.CRITICAL), problems=("p",)) is RiskLevel.BLOCKED


def test_a_syntax_error_is_never_low() -> None:
    assessment = rate(
        [finding("syntax-error", Severity.MEDIUM, line=3)],
        language="python",
        duration_ms=0,
        analyzers=["python-ast"],
    )
    assert assessment.level is RiskLevel.MEDIUM
    assert assessment.syntax_error == "line 3: syntax-error"


def test_findings_come_most_severe_first() -> None:
    assessment = rate(
        [finding("a", Severity.LOW, line=1), finding("b", Severity.CRITICAL, line=9)],
        language="python",
        duration_ms=0,
        analyzers=[],
    )
    assert [f.rule for f in assessment.findings] == ["b", "a"]
