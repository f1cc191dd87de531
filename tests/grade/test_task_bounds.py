"""A task line's size in JSON values is bounded before the schema checks it
(grade/schema.py: `MAX_VALUES`): the schema costs about 5 us a value, and a line of 10,000
tests with 1,024 args each (10 million values) took `hazmat batch` and `POST /v1/batches`
(both through tasks.parse_lines / parse_entries) about a minute of CPU. What real tasks need
still passes."""

from __future__ import annotations

import json
from typing import Any

import pytest

from hazmat import InputError
from hazmat.grade.schema import MAX_TESTS, MAX_VALUES
from hazmat.grade.tasks import parse_entries, parse_lines, parse_task


def task(tests: list[dict[str, Any]]) -> dict[str, Any]:
    return {"id": "t", "language": "python", "code": "print(input())", "tests": tests}


def test_ten_thousand_tests_with_every_field_fit() -> None:
    full = {
        "stdin": "1 2\n",
        "expected_stdout": "3\n",
        "args": ["-v", "--fast", "x"],
        "files": {"data.txt": "1"},
        "timeout": 2,
        "memory_mb": 256,
        "group": "g",
    }
    line = json.dumps(
        {**task([full] * MAX_TESTS), "groups": [{"name": "g", "points": 100}]}
    ).encode()
    (parsed,) = parse_lines([line], "tasks.jsonl")
    assert len(parsed.tests) == MAX_TESTS


@pytest.mark.parametrize(
    "tests",
    [
        [{"stdin": "1", "args": ["a"] * 1024}] * 1000,  # a million values: about 5 s before
        [{"stdin": "1", "args": ["a"] * (MAX_VALUES // 4)}] * 4,  # just past the bound
    ],
    ids=["1,000 tests x 1,024 args", "just past"],
)
def test_a_line_of_more_values_is_refused_naming_the_bound(tests: list[dict[str, Any]]) -> None:
    line = json.dumps(task(tests)).encode()
    said = f"more than {MAX_VALUES:,} JSON values"
    with pytest.raises(InputError, match=f"tasks.jsonl:1: {said}"):
        parse_lines([line], "tasks.jsonl")
    with pytest.raises(InputError, match=f"line 1: {said}"):  # the service's batch body
        parse_entries([("line 1", json.loads(line))], "the batch")


def test_a_python_task_that_holds_itself_is_refused_not_a_recursion_error() -> None:
    tests: list[Any] = [{"stdin": "1"}]
    tests[0]["args"] = tests
    with pytest.raises(InputError, match="JSON values"):
        parse_task(task(tests))
