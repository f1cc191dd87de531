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


FLOAT = Comparator("float", abs_tol=1e-6, rel_tol=1e-6)


@pytest.mark.parametrize(
    ("expected", "actual"),
    [
        ("10", "1_0"),  # Python's float() reads it; testlib's stringToDouble does not
        ("10", "\u0661\u0660"),  # Arabic-Indic digits
        ("10", "\uff11\uff10"),  # fullwidth digits
        ("inf", "Infinity"),
        ("1e400", "inf"),
        ("0.5", "0x1p-1"),  # hex floats: testlib refuses the x
        ("1", "1e"),
        ("1", "1.0.0"),
        ("1", "+-1"),
    ],
)
def test_float_numbers_are_what_testlib_reads(expected: str, actual: str) -> None:
    said = difference(FLOAT, expected, actual)
    assert said is not None and said.startswith("line 1: expected")


@pytest.mark.parametrize(
    ("expected", "actual"),
    [("10", "+10"), ("10", "1e1"), ("0.5", ".5"), ("1", "1."), ("-0", "0"), ("1e400", "1e401")],
)
def test_float_accepts_every_form_testlib_reads(expected: str, actual: str) -> None:
    assert difference(FLOAT, expected, actual) is None


@pytest.mark.parametrize("blank", ["\u00a0", "\u001f", "\u3000", "\u000b", "\u000c", "\u0085"])
@pytest.mark.parametrize("comparator", [WORDS, FLOAT])
def test_only_testlibs_blanks_separate_words(comparator: Comparator, blank: str) -> None:
    assert difference(comparator, "1 2\n", f"1{blank}2\n") == (
        f"line 1: expected '1 2', got {f'1{blank}2'!r}"
    )
    assert difference(comparator, "1 2\n", f"1{blank} 2\n") is not None


def test_words_are_split_at_space_tab_cr_and_lf() -> None:
    assert difference(WORDS, "1 2 3 4\n", "1\t2\r\n3\r4") is None
    assert difference(FLOAT, "1 2 3\n", "1.0\t2\r\n3") is None


def test_lines_strip_only_blanks_at_the_end() -> None:
    assert difference(LINES, "a\n", "a \t\r\n") is None
    assert difference(LINES, "a\n", "a\u00a0\n") == "line 1: expected 'a', got 'a\\xa0'"
