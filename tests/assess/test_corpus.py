"""The corpus: realistic dangerous and benign programs in every language hazmat runs.

Every dangerous program must be rated at least HIGH, and no benign one HIGH or above. The rates
that docs/assessment.md reports, per language, are recomputed here, so the document cannot drift
from the corpus.
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


LANGUAGES = (
    "python", "javascript", "typescript", "go", "bash", "c", "cpp", "java", "rust", "ruby", "r",
)  # fmt: skip
# Programs each language needs at least, per side (the first four had 18 from the start).
FLOOR = {"python": 18, "javascript": 18, "typescript": 18, "go": 18}


def test_corpus_is_large_enough_in_every_language() -> None:
    assert len(DANGEROUS) >= 170 and len(BENIGN) >= 170
    for programs in (DANGEROUS, BENIGN):
        languages = Counter(language_for_path(p).name for p in programs)
        assert set(languages) == set(LANGUAGES), languages
        for name, count in languages.items():
            assert count >= FLOOR.get(name, 15), (name, count)


@pytest.mark.parametrize("path", DANGEROUS, ids=lambda p: p.name)
def test_every_dangerous_program_is_at_least_high(assessor: Assessor, path: Path) -> None:
    assert level(assessor, path).rank >= RiskLevel.HIGH.rank


@pytest.mark.parametrize("path", BENIGN, ids=lambda p: p.name)
def test_no_benign_program_is_high_or_above(assessor: Assessor, path: Path) -> None:
    assert level(assessor, path).rank < RiskLevel.HIGH.rank


def corpus_table(assessor: Assessor) -> list[str]:
    """The rows of docs/assessment.md's corpus table, per language and in all."""

    def rates(programs: list[Path]) -> tuple[int, int, int]:
        levels = Counter(level(assessor, p) for p in programs)
        high = levels[RiskLevel.HIGH] + levels[RiskLevel.BLOCKED]
        return len(programs), high, levels[RiskLevel.MEDIUM]

    rows = []
    for name in (*LANGUAGES, "all"):
        dangerous = [p for p in DANGEROUS if name in ("all", language_for_path(p).name)]
        benign = [p for p in BENIGN if name in ("all", language_for_path(p).name)]
        nd, detected, _ = rates(dangerous)
        nb, flagged, medium = rates(benign)
        rows.append(
            f"| {name} | {nd} | {detected} ({100 * detected / nd:.0f}%) | {nb} | "
            f"{flagged} ({100 * flagged / nb:.0f}%) | {medium} |"
        )
    return rows


def test_docs_report_the_rates_this_corpus_gives(assessor: Assessor) -> None:
    text = DOC.read_text(encoding="utf-8")
    table = re.search(r"<!-- corpus:begin -->(.*?)<!-- corpus:end -->", text, re.S)
    assert table, "docs/assessment.md has no corpus table"
    for row in corpus_table(assessor):
        assert row in table.group(1), f"docs/assessment.md should say: {row}"
