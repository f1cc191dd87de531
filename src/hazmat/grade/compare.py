"""Judging a test's stdout against its expected output, and saying where they differ.

`exact`: the same text. `lines`: the same lines, each without its trailing blanks, and
trailing blank lines ignored. `whitespace` (the default): the same words, however spaced or
broken into lines. `float`: like `whitespace`, but two words that are both numbers match when
they are within `abs_tol` or `rel_tol` of each other. A checker program is run by the
grader (grader.py), not here. A mismatch is one sentence naming the first line that differs,
in the program's output, with both texts shortened to `SHOWN` characters.

Words and numbers are testlib's (testlib.h's `isBlanks` and `stringToDouble`): words are
separated by the ASCII blanks space, tab, line feed and carriage return alone (a no-break
space, U+001F or an ideographic space is part of a word, as it is to testlib); a number is
ASCII digits with an optional sign, at most one decimal point and an optional exponent, all of
the word (no `_`, no digits of other scripts, no `inf` or `nan` words: such a word matches only
itself).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

from hazmat.grade.tasks import Comparator

__all__ = ["BLANKS", "difference", "number", "words"]

SHOWN = 80
BLANKS = " \t\n\r"  # testlib.h's isBlanks
_BLANK_RUN = re.compile(r"[ \t\n\r]+")
# what testlib's stringToDouble reads: only [0-9.eE+-], then sscanf("%lf") consuming it all
_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", re.ASCII)


def difference(comparator: Comparator, expected: str, actual: str) -> str | None:
    """None when `actual` passes; otherwise where it first differs from `expected`."""
    if comparator.name == "exact":
        return None if actual == expected else _first_line(expected, actual, _as_is, _same)
    if comparator.name == "lines":
        return _first_line(expected, actual, _rstripped, _same)
    if comparator.name == "float":
        close = _numbers_close(comparator.abs_tol, comparator.rel_tol)
        if _words_match(words(expected), words(actual), close):
            return None
        return _first_line(expected, actual, _words, _line_match(close))
    if comparator.name == "whitespace":
        if words(expected) == words(actual):
            return None
        return _first_line(expected, actual, _words, _same)
    raise ValueError(f"no comparator {comparator.name!r} here")


def words(text: str) -> list[str]:
    """The words of `text`, split at runs of testlib's blanks alone."""
    return [word for word in _BLANK_RUN.split(text) if word]


def number(word: str) -> float | None:
    """The word's value if testlib reads it as a number (its stringToDouble), else None."""
    return float(word) if _NUMBER.fullmatch(word) else None


def _as_is(text: str) -> list[tuple[int, str]]:
    return list(enumerate(text.split("\n"), 1))


def _rstripped(text: str) -> list[tuple[int, str]]:
    lines = [(n, line.rstrip(BLANKS)) for n, line in enumerate(text.split("\n"), 1)]
    while lines and not lines[-1][1]:
        lines.pop()
    return lines


def _words(text: str) -> list[tuple[int, str]]:
    """Each line that has words, as its words joined by one space."""
    split = [(n, words(line)) for n, line in enumerate(text.split("\n"), 1)]
    return [(n, " ".join(line)) for n, line in split if line]


def _same(a: str, b: str) -> bool:
    return a == b


def _first_line(
    expected: str,
    actual: str,
    lines_of: Callable[[str], list[tuple[int, str]]],
    match: Callable[[str, str], bool],
) -> str | None:
    want, got = lines_of(expected), lines_of(actual)
    for (_, w), (n, g) in zip(want, got, strict=False):
        if not match(w, g):
            return f"line {n}: expected {_short(w)}, got {_short(g)}"
    if len(got) < len(want):
        after = got[-1][0] if got else 0
        return f"the output ended after line {after}; expected next: {_short(want[len(got)][1])}"
    if len(got) > len(want):
        n, extra = got[len(want)]
        return f"line {n}: expected the end of the output, got {_short(extra)}"
    return None


def _short(text: str) -> str:
    return repr(text if len(text) <= SHOWN else text[: SHOWN - 1] + "…")


def _numbers_close(abs_tol: float, rel_tol: float) -> Callable[[str, str], bool]:
    def close(a: str, b: str) -> bool:
        if a == b:
            return True
        x, y = number(a), number(b)
        if x is None or y is None:
            return False
        return math.isclose(x, y, rel_tol=rel_tol, abs_tol=abs_tol)

    return close


def _words_match(want: list[str], got: list[str], close: Callable[[str, str], bool]) -> bool:
    return len(want) == len(got) and all(close(w, g) for w, g in zip(want, got, strict=True))


def _line_match(close: Callable[[str, str], bool]) -> Callable[[str, str], bool]:
    return lambda w, g: _words_match(words(w), words(g), close)
