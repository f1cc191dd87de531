"""`hazmat polygon`: a Polygon package (the example in examples/grading/polygon/, as a folder
and as a .zip) made into batch tasks, and every package it cannot judge as Polygon would
refused with a sentence. (Graded on the real engine: tests/execution/test_judging.py.)"""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

import pytest

from hazmat import InputError
from hazmat.grade.polygon import read_problem, task_for
from hazmat.grade.tasks import parse_task
from hazmat.testing import invoke

EXAMPLE = Path(__file__).parents[2] / "examples" / "grading" / "polygon" / "triangle"


@pytest.fixture
def package(tmp_path: Path) -> Path:
    """A copy of the example package, to spoil."""
    return Path(shutil.copytree(EXAMPLE, tmp_path / "triangle"))


def spoil(package: Path, old: str, new: str) -> None:
    xml = package / "problem.xml"
    text = xml.read_text()
    assert old in text
    xml.write_text(text.replace(old, new))


def test_the_example_package_becomes_tasks_with_its_groups_points_and_checker() -> None:
    problem = read_problem(EXAMPLE)
    task = task_for(problem, EXAMPLE / "solutions" / "overflow.c")
    assert (task["id"], task["language"]) == ("triangle-overflow.c", "c")
    assert (task["timeout"], task["memory_mb"]) == (1, 256)
    # Polygon lists `large` before `small`, which it depends on: it moves after
    assert task["groups"] == [
        {"name": "samples", "points": 0, "scoring": "all"},
        {"name": "small", "points": 20, "scoring": "all", "after": ["samples"]},
        {"name": "large", "points": 80, "scoring": "each", "after": ["small"]},
    ]
    assert [(t.get("group"), t.get("points")) for t in task["tests"]] == [
        ("samples", None),
        ("small", None),
        ("small", None),
        ("large", 40),
        ("large", 40),
    ]
    assert task["tests"][3] == {
        "stdin": "1000000000\n",
        "expected_stdout": "500000000500000000\n",
        "group": "large",
        "points": 40,
    }
    assert task["comparator"]["name"] == "testlib"
    assert task["comparator"]["language"] == "cpp"
    assert task["comparator"]["code"] == (EXAMPLE / "files" / "check.cpp").read_text()
    parse_task(task)  # a task batch takes


def test_the_zip_polygon_gives_is_read_as_the_folder(tmp_path: Path) -> None:
    packed = tmp_path / "triangle-1$linux.zip"
    with zipfile.ZipFile(packed, "w") as z:
        for path in EXAMPLE.rglob("*"):
            if path.is_file():
                z.write(path, f"triangle-1/{path.relative_to(EXAMPLE)}")
    assert read_problem(packed) == read_problem(EXAMPLE)


def test_the_command_writes_a_line_per_submission_and_says_what_it_made(tmp_path: Path) -> None:
    solutions = sorted(str(p) for p in (EXAMPLE / "solutions").iterdir())
    done = invoke(["polygon", str(EXAMPLE), *solutions])
    assert done.exit_code == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert [t["id"] for t in lines] == [
        "triangle-loop.py",
        "triangle-overflow.c",
        "triangle-right.py",
    ]
    assert done.stderr == "hazmat: 3 tasks of triangle: 5 tests, 3 groups, a testlib checker\n"
    out = tmp_path / "tasks.jsonl"
    again = invoke(["polygon", str(EXAMPLE), solutions[0], "--language", "python", "-o", str(out)])
    assert again.exit_code == 0 and again.stdout == ""
    assert json.loads(out.read_text())["language"] == "python"


def test_an_interactive_problem_has_its_interactor_and_its_checker(package: Path) -> None:
    (package / "files" / "interactor.cpp").write_text('#include "testlib.h"\n')
    spoil(
        package,
        "</assets>",
        '<interactor><source path="files/interactor.cpp" type="cpp.g++17"/></interactor></assets>',
    )
    task = task_for(read_problem(package), EXAMPLE / "solutions" / "right.py")
    assert task["interactor"] == {"language": "cpp", "code": '#include "testlib.h"\n'}
    assert task["comparator"]["name"] == "testlib"
    assert parse_task(task).interactor is not None


def test_tests_outside_every_group_make_a_group_of_their_own(package: Path) -> None:
    spoil(
        package,
        '<test group="samples" method="manual" points="0.0" sample="true"/>',
        '<test method="manual" sample="true"/>',
    )
    problem = read_problem(package)
    # `samples` has no test left: `small`, which needed it, needs nothing
    assert [(g["name"], g.get("after")) for g in problem.groups] == [
        ("small", None),
        ("large", ["small"]),
        ("(no group)", None),
    ]
    assert problem.tests[0]["group"] == "(no group)"


def test_an_interactive_problem_reading_a_file_is_refused(package: Path) -> None:
    spoil(package, 'input-file=""', 'input-file="in.txt"')
    spoil(
        package,
        "</assets>",
        '<interactor><source path="files/check.cpp" type="cpp.g++17"/></interactor></assets>',
    )
    with pytest.raises(InputError, match=r"interactive problem whose input is the file 'in\.txt'"):
        read_problem(package)


def test_a_link_out_of_the_package_is_refused(package: Path, tmp_path: Path) -> None:
    (tmp_path / "secret").write_text("42\n")
    (package / "tests" / "01").unlink()
    (package / "tests" / "01").symlink_to(tmp_path / "secret")
    with pytest.raises(InputError, match=r"'tests/01' is outside the package \(a link\)"):
        read_problem(package)


def test_points_that_add_up_to_nothing_make_no_groups(package: Path) -> None:
    spoil(
        package,
        'points="40.0"/>\n                <test group="large" method="manual" points="40.0"',
        'points="0"/>\n                <test group="large" method="manual" points="0"',
    )
    spoil(package, 'name="small" points="20.0"', 'name="small" points="0"')
    problem = read_problem(package)
    assert problem.groups == []
    assert all("group" not in t and "points" not in t for t in problem.tests)


@pytest.mark.parametrize(
    ("old", "new", "said"),
    [
        (
            "</assets>",
            '<interactor><source path="files/interactor.cpp" type="cpp.g++17"/></interactor>'
            "</assets>",
            r"files/interactor\.cpp is missing",
        ),
        ('output-file=""', 'output-file="out.txt"', "written to the file 'out.txt'"),
        ("tests/%02d.a", "../tests/%02d.a", r"'\.\./tests/01\.a' is outside the package"),
        ("tests/%02d.a", "tests/%02d.ans", r"tests/01\.ans is missing"),
        ('type="cpp.g++17"', 'type="pascal.fpc"', "the checker is 'pascal.fpc', a language"),
        (
            "</assets>",
            '<interactor><source path="files/check.cpp" type="kotlin.1.9"/></interactor></assets>',
            "the interactor is 'kotlin.1.9', a language hazmat has not",
        ),
        (
            '<dependency group="samples"/>',
            '<dependency group="large"/>',
            "the groups large, small depend on each other",
        ),
        ('<dependency group="samples"/>', '<dependency group="medium"/>', "on 'medium', no group"),
        ("<time-limit>1000", "<time-limit>fast", "time-limit 'fast' is not a number"),
        ("tests/%02d.a", "tests/%s%s.a", "not printf patterns of one number"),
        ('type="cpp.g++17"', 'type="python.2"', "the checker is 'python.2', a language"),
        (
            '<?xml version="1.0" encoding="utf-8" standalone="no"?>',
            '<?xml version="1.0"?><!DOCTYPE p [<!ENTITY a "aaaa">]>',
            "declares a DOCTYPE or entities",
        ),
        ("<problem ", "<problem><problem ", "problem.xml is not XML"),
    ],
)
def test_what_cannot_be_judged_as_polygon_would_is_refused(
    package: Path, old: str, new: str, said: str
) -> None:
    spoil(package, old, new)
    with pytest.raises(InputError, match=said):
        read_problem(package)


def test_a_test_that_is_not_text_or_a_folder_that_is_no_package_is_refused(
    package: Path, tmp_path: Path
) -> None:
    (package / "tests" / "03").write_bytes(b"\xff\xfe1000\n")
    with pytest.raises(InputError, match=r"tests/03 is not UTF-8 text \(byte 0\)"):
        read_problem(package)
    with pytest.raises(InputError, match="not a Polygon package"):
        read_problem(tmp_path)
    (tmp_path / "a.zip").write_bytes(b"not a zip")
    with pytest.raises(InputError, match=r"not a Polygon package folder or \.zip"):
        read_problem(tmp_path / "a.zip")
    problem = read_problem(EXAMPLE)
    (tmp_path / "main.pas").write_text("begin end.")
    with pytest.raises(InputError, match=r"main\.pas: .*--language"):
        task_for(problem, tmp_path / "main.pas")
