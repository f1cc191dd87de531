"""`hazmat polygon`: a Polygon package (the example in examples/grading/polygon/, as a folder
and as a .zip) made into batch tasks, and every package it cannot judge as Polygon would
refused with a sentence. (Graded on the real engine: tests/execution/test_judging.py.)"""

from __future__ import annotations

import json
import os
import shutil
import stat
import zipfile
from pathlib import Path
from typing import Any

import pytest

from hazmat import InputError
from hazmat.grade.polygon import _ordered, read_problem, task_for
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
    with pytest.raises(InputError, match=r"'tests/01' is a link; a package holds files"):
        read_problem(package)


def test_a_fifo_a_link_inside_or_a_linked_folder_is_refused_and_nothing_blocks(
    package: Path,
) -> None:
    """A FIFO read to its end blocked `hazmat polygon` forever; a package's files are regular
    files, reached through no link."""
    (package / "tests" / "03").unlink()
    os.mkfifo(package / "tests" / "03")
    with pytest.raises(InputError, match=r"tests/03 is not a regular file"):
        read_problem(package)
    (package / "tests" / "03").unlink()
    (package / "tests" / "03").symlink_to(package / "tests" / "02")
    with pytest.raises(InputError, match=r"'tests/03' is a link"):
        read_problem(package)
    (package / "tests" / "03").unlink()
    shutil.copy(EXAMPLE / "tests" / "03", package / "tests" / "03")
    (package / "tests").rename(package / "real")
    (package / "tests").symlink_to(package / "real")
    with pytest.raises(InputError, match=r"'tests/01' is a link"):
        read_problem(package)


def test_a_zip_entry_that_is_a_link_is_refused(tmp_path: Path) -> None:
    packed = zipped(EXAMPLE, tmp_path / "p.zip", frozenset({"triangle/tests/02"}))
    with zipfile.ZipFile(packed, "a") as z:
        link = zipfile.ZipInfo("triangle/tests/02")
        link.external_attr = (stat.S_IFLNK | 0o777) << 16
        z.writestr(link, "/etc/passwd")
    with pytest.raises(InputError, match=r"tests/02 is not a regular file in the \.zip"):
        read_problem(packed)


def zipped(folder: Path, packed: Path, leave_out: frozenset[str] = frozenset()) -> Path:
    with zipfile.ZipFile(packed, "w", zipfile.ZIP_DEFLATED) as z:
        for path in folder.rglob("*"):
            name = f"triangle/{path.relative_to(folder)}"
            if path.is_file() and name not in leave_out:
                z.write(path, name)
    return packed


def test_a_problem_xml_in_utf16_with_a_doctype_is_refused(package: Path) -> None:
    """The DOCTYPE check read the raw bytes: in UTF-16 it found nothing, and the entity was
    expanded. defusedxml reads the declared encoding and refuses any DTD."""
    xml = package / "problem.xml"
    text = xml.read_text().replace('encoding="utf-8"', 'encoding="utf-16"')
    xml.write_bytes(text.encode("utf-16"))
    assert read_problem(package).name == "triangle"  # UTF-16 itself is fine
    bomb = text.replace(
        '<problem revision="1" short-name="triangle"',
        '<!DOCTYPE problem [<!ENTITY n "triangle">]>\n<problem revision="1" short-name="&n;"',
    )
    xml.write_bytes(bomb.encode("utf-16"))
    with pytest.raises(InputError, match="declares a DOCTYPE or entities; refused"):
        read_problem(package)
    xml.write_bytes(text.replace("<problem ", '<!DOCTYPE problem SYSTEM "x.dtd"><problem ', 1)
                    .encode("utf-16"))  # fmt: skip
    with pytest.raises(InputError, match="declares a DOCTYPE or entities; refused"):
        read_problem(package)


@pytest.mark.parametrize(
    ("pattern", "said"),
    [
        ("tests/%99999999d", r"'tests/%99999999d' asks for 99999999 digits; at most 9"),
        ("tests/%999999999d", r"asks for 999999999 digits; at most 9"),
        ("tests/%.99999999d", r"asks for 99999999 digits; at most 9"),
        ("tests/%0100d", r"asks for 100 digits"),
        ("tests/%d%d", r"'tests/%d%d' is not a printf pattern of one number"),
        ("tests/%s", r"is not a printf pattern of one number"),
        ("tests/%(x)d", r"is not a printf pattern of one number"),
    ],
)
def test_a_path_patterns_width_is_bounded_with_a_short_error(
    package: Path, pattern: str, said: str
) -> None:
    """`%99999999d` made a 100-million-character error and took 1.1 GB; `%999999999d` was
    "internal error (MemoryError)"."""
    spoil(package, "<input-path-pattern>tests/%02d<", f"<input-path-pattern>{pattern}<")
    with pytest.raises(InputError, match=said) as raised:
        read_problem(package)
    assert len(str(raised.value)) < 400
    done = invoke(["polygon", str(package), str(EXAMPLE / "solutions" / "right.py")])
    assert done.exit_code == 2 and "internal error" not in done.stderr


def test_the_package_reads_have_one_budget_however_often_a_file_is_read(tmp_path: Path) -> None:
    """200 tests reading one 48 MiB file (48 KiB zipped) took all the memory: every read
    counts against one budget, the size of a task line and the package's sources."""
    folder = Path(shutil.copytree(EXAMPLE, tmp_path / "triangle"))
    (folder / "big").write_bytes(b"1" * (48 * 2**20))
    tests = "".join('<test method="manual"/>' for _ in range(200))
    spoil(folder, "<input-path-pattern>tests/%02d<", "<input-path-pattern>big/%d/..<")
    spoil(folder, "<answer-path-pattern>tests/%02d.a<", "<answer-path-pattern>big/%d/..<")
    text = (folder / "problem.xml").read_text()
    start, end = text.index("<tests>"), text.index("</groups>") + len("</groups>")
    (folder / "problem.xml").write_text(f"{text[:start]}<tests>{tests}</tests>{text[end:]}")
    packed = zipped(folder, tmp_path / "p.zip")
    assert packed.stat().st_size < 1024 * 1024
    for source in (folder, packed):
        with pytest.raises(InputError, match=r"reading big would take the package's reads over"):
            read_problem(source)


def test_the_tests_and_groups_of_a_package_are_bounded(package: Path) -> None:
    text = (package / "problem.xml").read_text()
    start, end = text.index("<tests>"), text.index("</groups>") + len("</groups>")
    many = "".join('<test method="manual"/>' for _ in range(10_001))
    (package / "problem.xml").write_text(f"{text[:start]}<tests>{many}</tests>{text[end:]}")
    with pytest.raises(InputError, match=r"has 10001 tests; a task has at most 10000"):
        read_problem(package)
    groups = "".join(f'<group name="g{i}" points="1"/>' for i in range(1001))
    tests = '<test group="g0" method="manual"/>'
    (package / "problem.xml").write_text(
        f"{text[:start]}<tests>{tests}</tests><groups>{groups}</groups>{text[end:]}"
    )
    with pytest.raises(InputError, match=r"has 1001 groups; a task has at most 1000"):
        read_problem(package)


class Counted(dict[str, Any]):
    """A group whose dependencies count their reads."""

    reads = 0

    def __getitem__(self, key: str) -> Any:
        if key == "after":
            Counted.reads += 1
        return super().__getitem__(key)


def test_the_group_sort_reads_each_groups_dependencies_once() -> None:
    """Counted, not timed: the scan it replaced read every unplaced group's dependencies for
    each group it placed (5,000 groups took more than 75 s; see the report's figures)."""
    count = 2000
    groups = {
        f"g{i}": Counted(name=f"g{i}", after=[f"g{i + 1}"] if i + 1 < count else [])
        for i in range(count)
    }
    Counted.reads = 0
    placed = [g["name"] for g in _ordered(groups, Path("p"))]
    assert placed == [f"g{i}" for i in reversed(range(count))]
    assert Counted.reads <= count


def test_groups_are_ordered_after_what_they_need_in_one_pass(package: Path) -> None:
    """1,000 groups (the most a task has), each listed before the one it needs: they are
    placed in reverse. (The scan this sort replaced was cubic: 3,000 groups took 83 s.)"""
    text = (package / "problem.xml").read_text()
    start, end = text.index("<tests>"), text.index("</groups>") + len("</groups>")
    count = 1000
    groups = "".join(
        f'<group name="g{i}" points="1"><dependencies><dependency group="g{i + 1}"/>'
        "</dependencies></group>"
        if i + 1 < count
        else f'<group name="g{i}" points="1"/>'
        for i in range(count)
    )
    tests = "".join(f'<test group="g{i}" method="manual"/>' for i in range(count))
    (package / "problem.xml").write_text(
        f"{text[:start]}<tests>{tests}</tests><groups>{groups}</groups>{text[end:]}"
        .replace("<input-path-pattern>tests/%02d<", "<input-path-pattern>tests/%02d/../01<")
        .replace("<answer-path-pattern>tests/%02d.a<", "<answer-path-pattern>tests/%02d/../01.a<")
    )  # fmt: skip
    problem = read_problem(package)
    assert [g["name"] for g in problem.groups] == [f"g{i}" for i in reversed(range(count))]
    assert problem.groups[1]["after"] == ["g999"]


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
        ("tests/%02d.a", "tests/%s%s.a", "'tests/%s%s.a' is not a printf pattern of one number"),
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
