"""The comparators, and the first differing line each one names."""

from __future__ import annotations

import pytest

from hazmat.grade.compare import difference
from hazmat.grade.tasks import Comparator

EXACT, LINES, WORDS = Comparator("exact"), Comparator("lines"), Comparator("whitespace")


@pytest.mark.parametrize(
    ("comparator", "expected", "actual", "said"),
    [
        (EXACT, "1\n2\n", "1\n2\n", None),
        (EXACT, "1\n2\n", "1\n2", "the output ended after line 2; expected next: ''"),
        (EXACT, "1\n2\n", "1\r\n2\n", "line 1: expected '1', got '1\\r'"),
        (LINES, "1\n2\n", "1  \n2\n\n\n", None),
        (LINES, "1\n2\n", "1\n 2\n", "line 2: expected '2', got ' 2'"),
        (LINES, "a\nb\n", "a\nb\nc\n", "line 3: expected the end of the output, got 'c'"),
        (WORDS, "1 2\n3\n", "1\n2   3", None),
        (WORDS, "1 2\n3\n", "\n\n1  2\n4\n", "line 4: expected '3', got '4'"),
        (WORDS, "yes\n", "", "the output ended after line 0; expected next: 'yes'"),
        (WORDS, "x" * 200, "y", "line 1: expected '" + "x" * 79 + "…', got 'y'"),
    ],
)
def test_comparators(comparator: Comparator, expected: str, actual: str, said: str | None) -> None:
    assert difference(comparator, expected, actual) == said


def test_float_tolerance_is_absolute_or_relative_and_words_must_match_exactly() -> None:
    loose = Comparator("float", abs_tol=1e-3, rel_tol=0)
    assert difference(loose, "pi 3.1416\n", "pi 3.14159") is None
    assert difference(loose, "3.1416", "3.15") == "line 1: expected '3.1416', got '3.15'"
    assert (
        difference(loose, "pi 3.1416", "PI 3.1416")
        == "line 1: expected 'pi 3.1416', got 'PI 3.1416'"
    )
    relative = Comparator("float", abs_tol=0, rel_tol=1e-6)
    assert difference(relative, "1e12", "1000000000001") is None
    assert difference(relative, "nan inf", "nan inf") is None
    assert difference(relative, "1 2", "1 2 3") == "line 1: expected '1 2', got '1 2 3'"


def test_a_checker_is_not_a_comparator_here() -> None:
    with pytest.raises(ValueError, match="checker"):
        difference(Comparator("checker", language="python", code="pass"), "", "")
