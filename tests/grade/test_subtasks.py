"""Subtasks with points and testlib checkers, on a scripted backend: the order grouped tests
run in, what is skipped and why, each group's points (all or nothing, or by share), the
task's score; testlib's exit codes and quitp's points; the tasks refused before anything runs.
(The same on the real engine: tests/execution/test_judging.py.)"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from jsonschema import Draft202012Validator

from hazmat import InputError, Sandbox
from hazmat.backends.base import Job
from hazmat.grade.grader import Grader, TestResult
from hazmat.grade.schema import RESULT_SCHEMA
from hazmat.grade.scoring import order, scored, skipped_because
from hazmat.grade.tasks import parse_lines, parse_task
from hazmat.testing import RecordingBackend, audit_records, report

RESULT = Draft202012Validator(RESULT_SCHEMA)


def echo_or_judge(job: Job) -> object:
    """A pretend program that prints its stdin; a pretend testlib checker whose exit status
    and stderr are its `output` file's first word and the rest (`7 points 0.25 close`)."""
    files = job.program.files
    if "answer" in files:
        status, _, said = files["output"].decode().strip().partition(" ")
        return report(exit_code=int(status), stderr=said.encode() + b"\n")
    return report(stdout=job.program.stdin)


@pytest.fixture
def grader() -> Iterator[tuple[Grader, RecordingBackend]]:
    backend = RecordingBackend(answer=echo_or_judge)  # type: ignore[arg-type]
    with Sandbox(backend=backend) as sandbox:
        yield Grader(sandbox), backend


def grouped(tests: list[tuple[str, str]], groups: list[dict[str, object]]) -> dict[str, object]:
    """A task whose program echoes: each test (group, stdin) expects "ok"."""
    return {
        "id": "t",
        "language": "python",
        "code": "print(input())",
        "groups": groups,
        "tests": [{"group": g, "stdin": s, "expected_stdout": "ok"} for g, s in tests],
    }


def test_groups_score_all_or_nothing_and_by_share(grader: tuple[Grader, RecordingBackend]) -> None:
    g, _ = grader
    tests = [("a", "ok"), ("a", "ok"), ("b", "ok"), ("b", "no"), ("c", "ok"), ("c", "no")]
    groups = [
        {"name": "a", "points": 20},
        {"name": "b", "points": 30},
        {"name": "c", "points": 50, "scoring": "each"},
    ]
    result = g.grade(parse_task(grouped(tests, groups)))
    line = result.to_dict()
    assert not list(RESULT.iter_errors(line))
    assert [(r["name"], r["points"], r["verdict"]) for r in line["groups"]] == [
        ("a", 20, "accepted"),
        ("b", 0, "wrong_answer"),
        ("c", 25, "wrong_answer"),
    ]
    assert (line["points"], line["max_points"], line["score"]) == (45, 100, 0.45)
    assert (line["verdict"], line["passed"], line["total"]) == ("wrong_answer", 4, 6)
    assert line["message"].startswith("test 4 of 6, wrong_answer")
    assert [t["group"] for t in line["tests"]] == ["a", "a", "b", "b", "c", "c"]


def test_a_failure_skips_the_rest_of_its_group_and_the_groups_that_need_it(
    grader: tuple[Grader, RecordingBackend],
) -> None:
    g, backend = grader
    # listed out of order: the groups run in their order, each result stays in its place
    tests = [("late", "ok"), ("first", "no"), ("first", "ok"), ("free", "ok"), ("late", "ok")]
    groups = [
        {"name": "first", "points": 40},
        {"name": "free", "points": 10},
        {"name": "late", "points": 50, "after": ["first"]},
    ]
    result = g.grade(parse_task(grouped(tests, groups)))
    assert [j.program.stdin for j in backend.jobs] == [b"no", b"ok"]  # test 2, then test 4
    verdicts = [t.verdict for t in result.tests]
    assert verdicts == ["skipped", "wrong_answer", "skipped", "accepted", "skipped"]
    assert result.tests[2].message == "test 2 of group 'first' failed"
    said = "group 'first', which group 'late' needs, did not earn all its points"
    assert result.tests[0].message == said
    line = result.to_dict()
    assert [(r["name"], r["verdict"], r["points"]) for r in line["groups"]] == [
        ("first", "wrong_answer", 0),
        ("free", "accepted", 10),
        ("late", "skipped", 0),
    ]
    assert (line["score"], line["verdict"]) == (0.1, "wrong_answer")
    assert line["message"].startswith("test 2 of 5, wrong_answer")
    assert not list(RESULT.iter_errors(line))


def test_a_group_after_one_that_earned_all_its_points_runs(
    grader: tuple[Grader, RecordingBackend],
) -> None:
    """docs/batch.md: a group is skipped when a group it needs "has not earned all its
    points". A failed test worth 0 of an `each` group leaves it all its points; a group worth
    no points (the samples) has earned them all only when each of its tests is accepted."""
    g, backend = grader
    tests = [("samples", "no"), ("each", "ok"), ("each", "no"), ("late", "ok"), ("after", "ok")]
    task = grouped(tests, [])
    task["groups"] = [
        {"name": "samples", "points": 0},
        {"name": "each", "points": 10, "scoring": "each"},
        {"name": "late", "points": 20, "after": ["each"]},
        {"name": "after", "points": 30, "after": ["samples"]},
    ]
    for test, points in zip(task["tests"][1:3], [1, 0], strict=True):  # type: ignore[index]
        test["points"] = points
    result = g.grade(parse_task(task))
    assert [t.verdict for t in result.tests] == [
        "wrong_answer", "accepted", "wrong_answer", "accepted", "skipped",
    ]  # fmt: skip
    said = "group 'samples', which group 'after' needs, did not earn all its points"
    assert result.tests[4].message == said
    assert [j.program.stdin for j in backend.jobs] == [b"no", b"ok", b"no", b"ok"]
    line = result.to_dict()
    assert [(r["name"], r["points"]) for r in line["groups"]] == [
        ("samples", 0), ("each", 10), ("late", 20), ("after", 0),
    ]  # fmt: skip
    assert (line["points"], line["max_points"]) == (30, 60)


def test_an_each_group_whose_tests_all_pass_earns_exactly_its_points(
    grader: tuple[Grader, RecordingBackend],
) -> None:
    """3 points over seven tests worth 0.1 each came to 2.9999999999999996 (points * earned /
    total), so the group that needed it was skipped though every test was accepted."""
    g, backend = grader
    task = grouped([("a", "ok")] * 7 + [("b", "ok")], [])
    task["groups"] = [
        {"name": "a", "points": 3, "scoring": "each"},
        {"name": "b", "points": 1, "after": ["a"]},
    ]
    for test in task["tests"][:7]:  # type: ignore[index]
        test["points"] = 0.1
    line = g.grade(parse_task(task)).to_dict()
    assert [(r["name"], r["points"]) for r in line["groups"]] == [("a", 3), ("b", 1)]
    assert len(backend.jobs) == 8


def test_an_each_group_runs_every_test_unless_told_to_skip(
    grader: tuple[Grader, RecordingBackend],
) -> None:
    g, backend = grader
    tests = [("e", "no"), ("e", "ok"), ("s", "no"), ("s", "ok")]
    groups = [
        {"name": "e", "points": 10, "scoring": "each"},
        {"name": "s", "points": 10, "scoring": "each", "skip_rest": True},
    ]
    result = g.grade(parse_task(grouped(tests, groups)))
    assert len(backend.jobs) == 3
    assert [t.verdict for t in result.tests] == [
        "wrong_answer",
        "accepted",
        "wrong_answer",
        "skipped",
    ]
    assert result.to_dict()["points"] == 5


def test_tests_points_weigh_their_share_of_an_each_group(
    grader: tuple[Grader, RecordingBackend],
) -> None:
    g, _ = grader
    task = grouped([("w", "ok"), ("w", "no"), ("w", "ok")], [])
    task["groups"] = [{"name": "w", "points": 10, "scoring": "each"}]
    for test, points in zip(task["tests"], [1, 3, 6], strict=True):  # type: ignore[call-overload]
        test["points"] = points
    line = g.grade(parse_task(task)).to_dict()
    assert (line["points"], line["max_points"]) == (7, 10)


def test_a_compile_error_skips_every_other_test_and_scores_nothing() -> None:
    backend = RecordingBackend(report(exit_code=1, build_status=1, stderr=b"error\n"))
    with Sandbox(backend=backend) as sandbox:
        task = grouped([("b", "1"), ("a", "2"), ("a", "3")], [{"name": "a", "points": 1}])
        task["groups"] = [{"name": "a", "points": 1}, {"name": "b", "points": 1}]
        result = Grader(sandbox).grade(parse_task({**task, "language": "c", "code": "x"}))
    assert len(backend.jobs) == 1
    assert [t.verdict for t in result.tests] == ["skipped", "compile_error", "skipped"]
    assert result.tests[0].message == "not run: the task ended in compile_error"
    assert (result.verdict, result.score) == ("compile_error", 0.0)
    assert result.message is not None and result.message.startswith("test 2 of 3, compile_error")


def test_the_verdict_record_keeps_the_groups_and_the_points() -> None:
    backend = RecordingBackend(answer=echo_or_judge)  # type: ignore[arg-type]
    with Sandbox(backend=backend) as sandbox:
        groups = [{"name": "a", "points": 3}, {"name": "b", "points": 1}]
        Grader(sandbox).grade(parse_task(grouped([("a", "ok"), ("b", "no")], groups)))
        records = audit_records(sandbox)
    record = [data for kind, data in records if kind == "grade.verdict"][-1]
    assert (record["points"], record["max_points"], record["score"]) == (3, 4, 0.75)
    assert [g["name"] for g in record["groups"]] == ["a", "b"]
    assert record["tests"] == ["accepted", "wrong_answer"]


@pytest.mark.parametrize(
    ("groups", "tests", "said"),
    [
        ([{"name": "a", "points": 1}] * 2, [("a", "")], r"groups\[1\]\.name: 'a' is used twice"),
        (
            [{"name": "a", "points": 1, "after": ["b"]}, {"name": "b", "points": 1}],
            [("a", ""), ("b", "")],
            r"groups\[0\]\.after: 'b' is not an earlier group",
        ),
        ([{"name": "a", "points": 1}], [("z", "")], r"tests\[0\]\.group: 'z' is not a group"),
        (
            [{"name": "a", "points": 1}, {"name": "b", "points": 1}],
            [("a", "")],
            r"groups\[1\]: no test case is in it",
        ),
        ([{"name": "a", "points": 0}], [("a", "")], r"groups: their points add up to 0"),
        ([{"name": "a", "points": -1}], [("a", "")], r"groups\[0\]\.points: -1 is less than"),
        (
            [{"name": "a", "points": 1}],
            [("a", "5")],
            r"tests\[0\]\.points: a test's points count only in a group scoring each",
        ),
        (
            [{"name": "a", "points": 1, "scoring": "each"}],
            [("a", "5"), ("a", "")],
            r"tests\[1\]\.points: missing, as other tests of group 'a' have points",
        ),
        (
            [{"name": "a", "points": 1, "scoring": "each"}],
            [("a", "0")],
            r"groups\[0\]: its tests' points add up to 0",
        ),
        (
            [{"name": "a", "points": 1, "scoring": "most"}],
            [("a", "")],
            r"groups\[0\]\.scoring: 'most' is not one of",
        ),
    ],
)
def test_bad_groups_are_refused_naming_the_key(
    groups: list[dict[str, object]], tests: list[tuple[str, str]], said: str
) -> None:
    # here a test's stdin, when a number, is its points
    task = grouped(tests, groups)
    for test in task["tests"]:  # type: ignore[attr-defined]
        if test["stdin"].isdigit():
            test["points"] = int(test.pop("stdin"))
    with pytest.raises(InputError, match=said):
        parse_task(task, "tasks.jsonl:3")


@pytest.mark.parametrize(
    ("where", "value", "said"),
    [
        ("group", float("nan"), r"tasks\.jsonl:3\.groups\[0\]\.points: NaN is not a number"),
        ("test", float("nan"), r"tasks\.jsonl:3\.tests\[0\]\.points: NaN is not a number"),
        ("group", float("inf"), r"groups\[0\]\.points: (infinity is not a number|.*maximum)"),
        ("timeout", float("nan"), r"tasks\.jsonl:3\.timeout: NaN is not a number \(JSON has"),
    ],
)
def test_nan_is_refused_as_nan_not_as_points_adding_up_to_0(
    where: str, value: float, said: str
) -> None:
    task = grouped([("a", "ok")], [{"name": "a", "points": 1, "scoring": "each"}])
    if where == "group":
        task["groups"][0]["points"] = value  # type: ignore[index]
    elif where == "test":
        task["tests"][0]["points"] = value  # type: ignore[index]
    else:
        task["timeout"] = value
    with pytest.raises(InputError, match=said):
        parse_task(task, "tasks.jsonl:3")
    line = json.dumps(task).encode()  # Python writes NaN, and reads it back
    with pytest.raises(InputError, match=said.replace("tasks\\.jsonl:3", "<in>:1")):
        parse_lines([line], "<in>")


def test_a_task_with_the_most_groups_and_tests_is_checked_and_scored_in_linear_time() -> None:
    """1,000 groups (the schema's most), each after the 10 before it (9,945 dependencies, of
    at most 10,000), over 10,000 tests: checked, ordered and scored with each group's members
    found once. A task naming more dependencies is refused before the schema reads them (it
    took 8 s for 1,000 groups each after every earlier one, 36 s with the check before)."""
    groups = [{"name": f"g{i}", "points": 1, "after": [f"g{j}" for j in range(i)][-10:]}
              for i in range(1000)]  # fmt: skip
    tests = [(f"g{i % 1000}", "ok") for i in range(10_000)]
    task = parse_task(grouped(tests, groups))
    assert [len(task.members[g.name]) for g in task.groups] == [10] * 1000
    ran = order(task)
    assert sorted(ran) == list(range(10_000)) and ran[:2] == [0, 1000]
    done = {i: TestResult("accepted") for i in ran}
    assert skipped_because(task, 9_999, done) is None
    assert scored(task, [done[i] for i in range(10_000)])[:2] == (1000, 1000)
    groups[-1]["after"] = [f"g{j}" for j in range(999)]
    with pytest.raises(InputError, match=r"task\.groups: 10934 dependencies in all; at most"):
        parse_task(grouped(tests, groups))


def test_a_group_needs_groups_and_a_check_task_has_none() -> None:
    plain = {"id": "t", "language": "python", "code": ""}
    with pytest.raises(InputError, match=r"tests\[0\]\.group: the task has no groups"):
        parse_task({**plain, "tests": [{"expected_stdout": "", "group": "a"}]})
    with pytest.raises(InputError, match=r"tests\[1\]\.group: missing \(the task has groups\)"):
        parse_task(
            {
                **plain,
                "groups": [{"name": "a", "points": 1}],
                "tests": [{"expected_stdout": "", "group": "a"}, {"expected_stdout": ""}],
            }
        )


def judged_by_testlib(*outputs: str) -> dict[str, object]:
    """A task judged by the pretend testlib checker: each test's output is what it answers."""
    return {
        "id": "t",
        "language": "python",
        "code": "print(input())",
        "comparator": {"name": "testlib", "code": "int main() {}"},
        "tests": [{"stdin": o, "expected_stdout": "the answer"} for o in outputs],
    }


def test_testlib_exit_codes_are_verdicts_and_quitp_points_are_shares(
    grader: tuple[Grader, RecordingBackend],
) -> None:
    g, backend = grader
    outputs = [
        "0 ok 3 numbers",
        "1 wrong answer expected 3, found 4",
        "2 wrong output format Unexpected end of file",
        "4 wrong output format Extra information in the output file",
        "8 unexpected eof",
        "7 points 0.25 close enough",
        "7 points 1",
        "7 points 1.5 more than all",
        "3 FAIL answer is wrong itself",
        "7 points many",
        "5 what",
    ]
    result = g.grade(parse_task(judged_by_testlib(*outputs)))
    judged = [(t.verdict, t.score, t.message) for t in result.tests]
    assert judged == [
        ("accepted", 1.0, None),
        ("wrong_answer", 0.0, "wrong answer expected 3, found 4"),
        ("wrong_answer", 0.0, "wrong output format Unexpected end of file"),
        ("wrong_answer", 0.0, "wrong output format Extra information in the output file"),
        ("wrong_answer", 0.0, "unexpected eof"),
        ("partially_correct", 0.25, "partly right (0.25 of the test): points 0.25 close enough"),
        ("accepted", 1.0, None),
        ("accepted", 1.0, None),
        ("infra_error", 0.0, "the checker failed: FAIL answer is wrong itself"),
        ("infra_error", 0.0, "the checker failed: no points in 'points many'"),
        ("infra_error", 0.0, "the checker failed: status 5 is not testlib's: what"),
    ]
    assert result.to_dict()["points"] == pytest.approx(3.25)
    # testlib's order of arguments and names, and the checker in C++ by default
    checker = backend.jobs[1].program
    assert list(checker.args) == ["input", "output", "answer"]
    assert set(checker.files) == {"main.cpp", "input", "output", "answer"}
    assert checker.files["answer"] == b"the answer"


def test_a_languages_time_multiplier_stretches_its_timeout_and_is_recorded() -> None:
    backend = RecordingBackend(answer=echo_or_judge)  # type: ignore[arg-type]
    task = {
        "id": "t",
        "language": "py",  # an alias names the language too
        "code": "print(input())",
        "timeout": 2,
        "time_multipliers": {"c": 1, "python": 2.5},
        "tests": [
            {"stdin": "ok", "expected_stdout": "ok"},
            {"stdin": "ok", "expected_stdout": "ok", "timeout": 1},
        ],
    }
    with Sandbox(backend=backend) as sandbox:
        result = Grader(sandbox).grade(parse_task(task))
        records = audit_records(sandbox)
    assert [j.limits.timeout_s for j in backend.jobs] == [5, 2.5]
    assert result.to_dict()["time_multiplier"] == 2.5
    record = [data for kind, data in records if kind == "grade.verdict"][-1]
    assert (record["timeout"], record["time_multiplier"]) == (2, 2.5)
    # the language's own entry alone: C's task keeps its time
    assert parse_task({**task, "language": "c", "code": "x"}).time_multiplier == 1


def test_a_time_multiplier_is_refused_without_a_timeout_or_past_the_levels_limit() -> None:
    task = {
        "id": "t",
        "language": "python",
        "code": "x",
        "time_multipliers": {"python": 3},
        "tests": [{"expected_stdout": ""}],
    }
    with pytest.raises(InputError, match=r"time_multipliers: there is no timeout to multiply"):
        parse_task(task)
    with pytest.raises(InputError, match=r"time_multipliers\['cobol'\]: unknown language"):
        parse_task({**task, "timeout": 1, "time_multipliers": {"cobol": 2}})
    with pytest.raises(InputError, match=r"time_multipliers\.python: 0 is less than or equal"):
        parse_task({**task, "timeout": 1, "time_multipliers": {"python": 0}})
    with (
        Sandbox(backend=RecordingBackend()) as sandbox,
        pytest.raises(InputError, match=r"task 't', run 1: .*timeout"),
    ):
        Grader(sandbox).check(parse_task({**task, "timeout": 10_000}))
