"""Task lines: what is accepted, and the error a bad line gets (its line and its key)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hazmat import InputError
from hazmat.grade.tasks import Comparator, parse_lines, parse_task, read_tasks


def line(**task: object) -> bytes:
    return json.dumps(task).encode() + b"\n"


BASE = {"id": "t1", "language": "python", "code": "print(input())"}


def test_a_task_with_tests_takes_the_task_comparator_unless_a_test_has_its_own() -> None:
    task = parse_task(
        {
            **BASE,
            "comparator": {"name": "float", "abs_tol": 0.01},
            "files": {"data.txt": "1 2"},
            "timeout": 2,
            "tests": [
                {"stdin": "1", "expected_stdout": "1"},
                {"stdin": "2", "expected_stdout": "2", "comparator": "exact", "args": ["-v"]},
            ],
        }
    )
    assert task.total == 2 and task.check is None and task.timeout == 2
    assert task.tests[0].comparator == Comparator("float", abs_tol=0.01)
    assert task.tests[1].comparator == Comparator("exact")
    assert task.tests[1].args == ("-v",)
    assert dict(task.files) == {"data.txt": "1 2"}


def test_the_default_comparator_is_whitespace_and_check_counts_as_one_test() -> None:
    assert parse_task({**BASE, "tests": [{"expected_stdout": ""}]}).tests[0].comparator.name == (
        "whitespace"
    )
    task = parse_task({**BASE, "check": "assert f() == 1"})
    assert (task.tests, task.check, task.total) == ((), "assert f() == 1", 1)


@pytest.mark.parametrize(
    ("raw", "said"),
    [
        ({"language": "python", "code": "", "check": ""}, "'id' is a required property"),
        ({**BASE}, "is not valid under any of the given schemas"),  # neither tests nor check
        ({**BASE, "check": "", "tests": [{"expected_stdout": ""}]}, "valid under each of"),
        ({**BASE, "check": "", "timout": 3}, "'timout' was unexpected"),
        ({**BASE, "tests": [{"expected_stdout": "", "stdin": 5}]}, ".tests[0].stdin: 5 is not"),
        ({**BASE, "tests": [{"stdin": ""}]}, "tests[0]: 'expected_stdout' is a required"),
        ({**BASE, "check": "", "timeout": 0}, ".timeout: 0 is less than or equal to"),
        ({**BASE, "check": "", "comparator": "fuzzy"}, ".comparator: 'fuzzy' is not valid"),
        ([1, 2], "[1, 2] is not of type 'object'"),
    ],
)
def test_a_bad_task_names_what_is_wrong(raw: object, said: str) -> None:
    with pytest.raises(InputError) as caught:
        parse_task(raw, "tasks.jsonl:3")
    assert str(caught.value).startswith("tasks.jsonl:3")
    assert said in str(caught.value)


LONG = "x" * 10_000
SHOWN = f"'{'x' * 80}'... (10000 characters)"


@pytest.mark.parametrize(
    ("raw", "said"),
    [
        ({**BASE, "id": LONG, "check": ""}, f".id: {SHOWN} is too long"),
        (
            {**BASE, "id": "x" * 257, "check": ""},
            f".id: '{'x' * 80}'... (257 characters) is too long",
        ),
        ({**BASE, "language": LONG, "check": ""}, f".language: {SHOWN} is too long"),
        ({**BASE, "check": "", LONG: 1}, "Additional properties are not allowed ('xxxx"),
        (
            {**BASE, "tests": [{"expected_stdout": "", "files": {LONG: 1}}]},
            f".tests[0].files[{SHOWN}]: 1 is not of type 'string'",
        ),
        ({**BASE, "check": "", "files": [LONG] * 100}, ".files: ['xxxx"),
    ],
)
def test_a_long_value_makes_a_short_error(raw: object, said: str) -> None:
    """A user's value in an error is cut to 80 characters with its length (a 10,000-character
    id made a 10,083-character error); the whole message stays within a few lines."""
    with pytest.raises(InputError) as caught:
        parse_task(raw, "tasks.jsonl:3")
    assert said in str(caught.value) and len(str(caught.value)) < 400, str(caught.value)


def test_an_id_of_256_characters_is_taken() -> None:
    assert parse_task({**BASE, "id": "x" * 256, "check": ""}).id == "x" * 256


def test_every_bad_line_is_listed_with_its_number_before_anything_runs() -> None:
    lines = [
        line(**BASE, check="pass"),
        b"\n",
        b"{not json\n",
        b'{"id": "\xff"}\n',
        b"[" * 100_000 + b"]" * 100_000 + b"\n",
        line(**BASE, check="pass"),
    ]
    with pytest.raises(InputError) as caught:
        parse_lines(lines, "t.jsonl")
    said = str(caught.value)
    assert "t.jsonl:3: the line is not JSON" in said
    assert "t.jsonl:4: the line is not UTF-8 (byte 8" in said
    assert "t.jsonl:5: the line is nested deeper than 32 levels" in said
    assert "t.jsonl:6: id 't1' is used twice" in said


def test_a_file_with_no_task_is_an_error(tmp_path: Path) -> None:
    empty = tmp_path / "none.jsonl"
    empty.write_text("\n\n")
    with pytest.raises(InputError, match="no tasks"):
        read_tasks(empty)
    ok = tmp_path / "one.jsonl"
    ok.write_bytes(line(**BASE, check="pass"))
    assert [t.id for t in read_tasks(ok)] == ["t1"]


def test_the_schema_in_the_docs_is_the_one_the_code_checks() -> None:
    from hazmat.grade.schema import RESULT_SCHEMA, TASK_SCHEMA

    docs = Path(__file__).parents[2] / "docs" / "batch.schema.json"
    assert json.loads(docs.read_text()) == {"task": TASK_SCHEMA, "result": RESULT_SCHEMA}, (
        "regenerate it: python -m hazmat.grade.schema > docs/batch.schema.json"
    )
