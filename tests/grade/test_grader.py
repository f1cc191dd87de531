"""Grading logic on a scripted backend: verdicts per test case and per task, the score,
compile-once-per-failure rules, `check` tasks, checkers, and the result line's schema.
(The same on the real engine, in every language: tests/execution/test_grading.py.)"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from jsonschema import Draft202012Validator

from hazmat import InputError, Sandbox
from hazmat.backends.base import Job
from hazmat.grade.grader import Grader
from hazmat.grade.harness import guarded
from hazmat.grade.schema import RESULT_SCHEMA
from hazmat.grade.tasks import parse_task
from hazmat.testing import RecordingBackend, report

RESULT = Draft202012Validator(RESULT_SCHEMA)


def doubling(job: Job) -> object:
    """A pretend program: prints twice its stdin's number; some inputs misbehave."""
    stdin = job.program.stdin.decode()
    if stdin == "loop":
        return report(exit_code=124, timed_out=True)
    if stdin == "boom":
        return report(exit_code=1, stderr=b"ValueError: boom\n")
    if stdin == "hog":
        return report(exit_code=137, oom_killed=True, peak_memory_bytes=256 << 20)
    if job.program.files.get("input") is not None:  # a checker: accepts even outputs
        output = job.program.files["output"].decode().strip()
        return report(exit_code=0) if int(output) % 2 == 0 else report(exit_code=1, stdout=b"odd\n")
    return report(stdout=f"{2 * int(stdin)}\n".encode(), duration_ms=7.5)


@pytest.fixture
def grader() -> Iterator[tuple[Grader, RecordingBackend]]:
    backend = RecordingBackend(answer=doubling)  # type: ignore[arg-type]
    with Sandbox(backend=backend) as sandbox:
        yield Grader(sandbox, override_reason="scripted backend, nothing runs"), backend


def task(**extra: object) -> dict[str, object]:
    return {"id": "t", "language": "python", "code": "print(2 * int(input()))", **extra}


def test_each_test_case_gets_its_verdict_and_the_task_the_first_failure(
    grader: tuple[Grader, RecordingBackend],
) -> None:
    g, _ = grader
    tests = [
        {"stdin": "1", "expected_stdout": "2"},
        {"stdin": "2", "expected_stdout": "5"},
        {"stdin": "loop", "expected_stdout": ""},
        {"stdin": "boom", "expected_stdout": ""},
        {"stdin": "hog", "expected_stdout": ""},
        {"stdin": "3", "expected_stdout": "6"},
    ]
    result = g.grade(parse_task(task(tests=tests)))
    verdicts = [t.verdict for t in result.tests]
    assert verdicts == [
        "accepted",
        "wrong_answer",
        "time_limit",
        "runtime_error",
        "memory_limit",
        "accepted",
    ]
    assert (result.verdict, result.passed, result.total) == ("wrong_answer", 2, 6)
    line = result.to_dict()
    assert line["score"] == pytest.approx(2 / 6, abs=1e-6)
    assert line["message"] == "test 2 of 6, wrong_answer: line 1: expected '5', got '4'"
    assert line["tests"][3]["message"].endswith("ValueError: boom")
    assert line["memory_bytes"] == 256 << 20
    assert not list(RESULT.iter_errors(line))


def test_all_accepted_is_accepted_with_score_one(grader: tuple[Grader, RecordingBackend]) -> None:
    g, backend = grader
    result = g.grade(
        parse_task(task(tests=[{"stdin": str(n), "expected_stdout": str(2 * n)} for n in range(4)]))
    )
    line = result.to_dict()
    assert (line["verdict"], line["score"], line["message"]) == ("accepted", 1.0, None)
    assert [j.program.stdin for j in backend.jobs] == [b"0", b"1", b"2", b"3"]


def test_a_compile_error_ends_the_task_at_its_first_test() -> None:
    failed = report(exit_code=1, build_status=1, stderr=b"main.c:1:1: error: expected ';'\n")
    backend = RecordingBackend(failed)
    with Sandbox(backend=backend) as sandbox:
        result = Grader(sandbox).grade(
            parse_task(task(language="c", code="int main(", tests=[{"expected_stdout": ""}] * 5))
        )
    assert len(backend.jobs) == 1
    assert [t.verdict for t in result.tests] == ["compile_error"]
    assert (result.verdict, result.passed, result.total, result.score) == (
        "compile_error",
        0,
        5,
        0.0,
    )
    assert "expected ';'" in (result.tests[0].message or "")


def test_a_compile_errors_test_has_no_figures_of_the_build() -> None:
    failed = report(
        exit_code=1,
        build_status=1,
        build_ms=900.0,
        duration_ms=950.0,
        program_ms=50.0,
        cpu_time_ms=800.0,
        peak_memory_bytes=300 << 20,
        stderr=b"main.c:1:1: error: expected ';'\n",
    )
    with Sandbox(backend=RecordingBackend(failed)) as sandbox:
        result = Grader(sandbox).grade(
            parse_task(task(language="c", code="int main(", tests=[{"expected_stdout": ""}]))
        )
    line = result.to_dict()
    test = line["tests"][0]
    assert (test["time_ms"], test["wall_ms"], test["memory_bytes"]) == (None, None, None)
    assert (line["time_ms"], line["memory_bytes"], line["compile_ms"]) == (None, None, 900.0)
    assert not list(RESULT.iter_errors(line))


def test_a_blocked_submission_is_blocked_without_running() -> None:
    backend = RecordingBackend()
    code = "().__class__.__base__.__subclasses__()"  # BLOCKED: sandbox-escape idiom
    with Sandbox(backend=backend) as sandbox:
        result = Grader(sandbox).grade(
            parse_task(task(code=code, tests=[{"expected_stdout": ""}] * 3))
        )
    assert backend.jobs == []
    assert result.verdict == "blocked" and len(result.tests) == 1


def test_check_tasks_append_the_test_code_and_judge_by_exit_status() -> None:
    backend = RecordingBackend(report(exit_code=1, stderr=b"AssertionError\n"))
    with Sandbox(backend=backend) as sandbox:
        result = Grader(sandbox).grade(
            parse_task(task(code="def f():\n    return 1\n", check="assert f() == 2\n"))
        )
    assert backend.jobs[0].program.files["main.py"] == (
        b"def f():\n    return 1\n\nassert f() == 2\n"
    )
    assert (result.verdict, result.score, result.total) == ("wrong_answer", 0.0, 1)
    assert result.tests[0].message == "the program exited with status 1: AssertionError"


def test_a_checker_program_judges_and_its_own_failure_is_infra_error(
    grader: tuple[Grader, RecordingBackend],
) -> None:
    g, backend = grader
    checker = {"name": "checker", "language": "python", "code": "import sys"}
    result = g.grade(
        parse_task(
            task(
                comparator=checker,
                tests=[
                    {"stdin": "1", "expected_stdout": "x"},
                    {"stdin": "2", "expected_stdout": "x"},
                ],
            )
        )
    )
    # both outputs (2 and 4) are even: the checker accepts them whatever the expected text
    assert [t.verdict for t in result.tests] == ["accepted", "accepted"]
    checker_job = backend.jobs[1]
    # the checker's code with harness.py's line, which ends it with CRASHED if it raises
    assert dict(checker_job.program.files) == {
        "main.py": guarded("import sys", "python").encode(),
        "input": b"1",
        "output": b"2\n",
        "expected": b"x",
    }
    assert list(checker_job.program.args) == ["input", "output", "expected"]


def test_a_task_whose_runs_the_policy_would_refuse_is_refused_before_any_runs() -> None:
    backend = RecordingBackend()
    tests = [{"expected_stdout": ""}, {"expected_stdout": "", "memory_mb": 10**6}]
    with Sandbox(backend=backend) as sandbox:
        grader = Grader(sandbox)
        with pytest.raises(InputError, match=r"task 't', run 2: .*memory_mb"):
            grader.check(parse_task(task(tests=tests)))
        with pytest.raises(InputError, match="task 'u', run 1"):
            list(sandbox.map([task(id="u", check="", timeout=10**6)]))
        checker = {"name": "checker", "language": "klingon", "code": "x"}
        with pytest.raises(InputError, match=r"\.tests\[0\]\.comparator\.language: unknown"):
            parse_task(task(tests=[{"expected_stdout": "", "comparator": checker}]))
    assert backend.jobs == []


def test_each_verdict_is_recorded_and_the_result_carries_its_receipt() -> None:
    import hashlib

    from hazmat.testing import audit_records

    backend = RecordingBackend(answer=doubling)  # type: ignore[arg-type]
    with Sandbox(backend=backend) as sandbox:
        result = Grader(sandbox).grade(
            parse_task(task(tests=[{"stdin": "2", "expected_stdout": "4"}]))
        )
        records = audit_records(sandbox)
    verdicts = [data for kind, data in records if kind == "grade.verdict"]
    assert verdicts[-1]["task"] == "t" and verdicts[-1]["verdict"] == "accepted"
    code = task()["code"]
    assert verdicts[-1]["code_sha256"] == hashlib.sha256(str(code).encode()).hexdigest()
    assert isinstance(result.receipt, int) and result.to_dict()["receipt"] == result.receipt
