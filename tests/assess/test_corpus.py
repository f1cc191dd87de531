"""The corpus: realistic dangerous and benign programs in all four languages.

Every dangerous program must be rated at least HIGH, and no benign one BLOCKED. The rates that
docs/assessment.md reports are recomputed here, so the document cannot drift from the corpus.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from hazmat.assess.assessor import Assessor
from hazmat.languages import language_for_path
from hazmat.models import RiskLevel

CORPUS = Path(__file__).with_name("corpus")
DANGEROUS = sorted((CORPUS / "dangerous").iterdir())
BENIGN = sorted((CORPUS / "benign").iterdir())
DOC = Path(__file__).parents[2] / "docs" / "assessment.md"


def level(assessor: Assessor, path: Path) -> RiskLevel:
    assessment = assessor.assess(path.read_text(encoding="utf-8"), language_for_path(path).name)
    assert assessment.complete, assessment.problems
    return assessment.level


def test_corpus_is_large_enough_in_every_language() -> None:
    assert len(DANGEROUS) >= 40 and len(BENIGN) >= 40
    for programs in (DANGEROUS, BENIGN):
        languages = Counter(language_for_path(p).name for p in programs)
        assert set(languages) == {"python", "javascript", "typescript", "go"}, languages
        assert min(languages.values()) >= 8, languages


@pytest.mark.parametrize("path", DANGEROUS, ids=lambda p: p.name)
def test_every_dangerous_program_is_at_least_high(assessor: Assessor, path: Path) -> None:
    assert level(assessor, path).rank >= RiskLevel.HIGH.rank


@pytest.mark.parametrize("path", BENIGN, ids=lambda p: p.name)
def test_no_benign_program_is_blocked(assessor: Assessor, path: Path) -> None:
    assert level(assessor, path) is not RiskLevel.BLOCKED


def test_docs_report_the_rates_this_corpus_gives(assessor: Assessor) -> None:
    dangerous = Counter(level(assessor, p) for p in DANGEROUS)
    benign = Counter(level(assessor, p) for p in BENIGN)
    detected = dangerous[RiskLevel.HIGH] + dangerous[RiskLevel.BLOCKED]
    flagged = benign[RiskLevel.HIGH] + benign[RiskLevel.BLOCKED]
    text = DOC.read_text(encoding="utf-8")
    table = re.search(r"<!-- corpus:begin -->(.*?)<!-- corpus:end -->", text, re.S)
    assert table, "docs/assessment.md has no corpus table"
    expected = [
        f"| dangerous | {len(DANGEROUS)} | {detected} ({100 * detected / len(DANGEROUS):.0f}%) |",
        f"| benign | {len(BENIGN)} | {flagged} ({100 * flagged / len(BENIGN):.0f}%) |",
        f"| dangerous BLOCKED | {len(DANGEROUS)} | {dangerous[RiskLevel.BLOCKED]} |",
        f"| benign BLOCKED | {len(BENIGN)} | {benign[RiskLevel.BLOCKED]} |",
        f"| benign MEDIUM | {len(BENIGN)} | {benign[RiskLevel.MEDIUM]} |",
    ]
    for row in expected:
        assert row in table.group(1), f"docs/assessment.md should say: {row}"
