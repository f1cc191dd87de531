"""The Assessor: bad input, budgets, and a child that misbehaves. Each result is bounded."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from hazmat import InputError, InputTooLarge, UnknownLanguage
from hazmat.assess.assessor import Assessor
from hazmat.models import RiskLevel


@pytest.mark.parametrize(
    ("code", "error", "message"),
    [
        (b"print('\xff')", InputError, "not valid UTF-8"),
        ("print(1)\x00", InputError, "NUL byte"),
        ("   \n", InputError, "empty"),
    ],
)
def test_bad_input_is_refused_with_a_clear_error(
    assessor: Assessor, code: str | bytes, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        assessor.assess(code, "python")


def test_unknown_language(assessor: Assessor) -> None:
    with pytest.raises(UnknownLanguage):
        assessor.assess("x", "cobol")


def test_oversized_code_is_refused_before_any_analyser_sees_it() -> None:
    fresh = Assessor(max_bytes=1000)  # not started: no child exists yet
    try:
        with pytest.raises(InputTooLarge, match="1001 bytes"):
            fresh.assess("#" * 1001, "python")
        assert fresh._child is None
    finally:
        fresh.close()


@pytest.mark.parametrize("language", ["python", "javascript", "typescript", "go"])
def test_ten_thousand_nested_brackets(assessor: Assessor, language: str) -> None:
    body = "(" * 10_000 + "1" + ")" * 10_000
    code = f"package main\nvar x = {body}\n" if language == "go" else f"x = {body}\n"
    assessment = assessor.assess(code, language)
    # Python's own parser refuses it (a syntax error: too many nested parentheses), which is
    # never LOW; the tree-sitter parsers read it in full, without recursion.
    assert assessment.complete
    if language == "python":
        assert "too many nested parentheses" in (assessment.syntax_error or "")
        assert assessment.level is RiskLevel.MEDIUM
    else:
        assert assessment.syntax_error is None and assessment.level is RiskLevel.LOW


def test_a_600_kb_single_expression_gives_a_bounded_incomplete_result(assessor: Assessor) -> None:
    code = "x = " + "1+" * 300_000 + "1\n"
    assert len(code) > 600_000
    assessment = assessor.assess(code, "python", max_bytes=1 << 20)
    assert not assessment.complete
    assert assessment.level.rank >= RiskLevel.HIGH.rank
    assert any("RecursionError" in p for p in assessment.problems), assessment.problems
    # and the child is still good for the next program
    assert assessor.assess("print(1)", "python").level is RiskLevel.LOW


def test_a_600_kb_javascript_expression_is_read_in_full(assessor: Assessor) -> None:
    code = "const x = " + "1+" * 300_000 + "1;\nrequire('child_process');\n"
    assessment = assessor.assess(code, "javascript", max_bytes=1 << 20)
    assert assessment.complete and assessment.level is RiskLevel.HIGH


def test_memory_budget_is_enforced_and_the_child_replaced(assessor: Assessor) -> None:
    # 100,000 unary minus signs overflow the parser's stack: Python raises MemoryError.
    assessment = assessor.assess("-" * 100_000 + "1", "python")
    assert not assessment.complete and assessment.level is RiskLevel.HIGH
    assert any("memory" in p for p in assessment.problems), assessment.problems
    assert assessor.assess("print(1)", "python").complete


def test_time_budget_kills_the_child_and_keeps_what_finished() -> None:
    code = "\n".join(f"def f{n}(a, b):\n    return a * b + {n}\n" for n in range(20_000))
    with Assessor(timeout_s=0.05, max_bytes=4 << 20) as slow:
        slow.start()
        assessment = slow.assess(code, "python")
        assert not assessment.complete and assessment.level is RiskLevel.HIGH
        assert any("time budget" in p for p in assessment.problems), assessment.problems
        slow.timeout_s = 30
        assert slow.assess("print(1)", "python").complete  # a new child took over


def test_a_child_that_dies_mid_assessment_makes_it_incomplete() -> None:
    code = "const x = " + "1+" * 1_000_000 + "1;\n"  # about 2 MB: seconds of parsing
    with Assessor(timeout_s=60, max_bytes=4 << 20) as victim:
        victim.start()
        victim.assess("1", "javascript")  # wait until the child is ready
        child = victim._child
        assert child is not None
        killer = threading.Timer(0.3, child.process.kill)
        killer.start()
        started = time.monotonic()
        assessment = victim.assess(code, "javascript")
        killer.join()
        assert not assessment.complete, "the child finished before it was killed"
        assert any("died" in p and "signal 9" in p for p in assessment.problems), (
            assessment.problems,
            time.monotonic() - started,
        )
        assert victim.assess("print(1)", "python").complete


def test_assessments_from_many_threads(assessor: Assessor) -> None:
    results: list[RiskLevel] = []

    def one(n: int) -> None:
        code = "import subprocess" if n % 2 else "print(1)"
        results.append(assessor.assess(code, "python").level)

    threads = [threading.Thread(target=one, args=(n,)) for n in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == sorted([RiskLevel.HIGH] * 8 + [RiskLevel.LOW] * 8)


def test_the_same_program_is_analysed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    with Assessor() as assessor:
        calls: list[str] = []
        real = assessor._in_process

        def counted(code: str, language: str, *rest: Any) -> float:
            calls.append(code)
            return real(code, language, *rest)

        monkeypatch.setattr(assessor, "_in_process", counted)
        first = assessor.assess("import os\nos.system('id')", "python")
        again = assessor.assess("import os\nos.system('id')", "python")
        other = assessor.assess("import os\nos.system('id')", "bash")
        assert len(calls) == 2  # python once, bash once
        assert again.level == first.level and again.findings == first.findings
        assert other.language == "bash"
