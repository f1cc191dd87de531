"""A Polygon problem package as batch tasks (`hazmat polygon`, docs/batch.md).

A package (a folder, or the .zip Polygon gives) is read through its `problem.xml`: the
testset named `tests` (else the first), its time and memory limits, each test's input and
answer (`input-path-pattern`, `answer-path-pattern`), its groups and points, the checker's
source (`assets/checker/source`) and the interactor's (`assets/interactor/source`). Each
submission becomes one task with those tests, judged by the checker in testlib's convention
(grade/checkers.py); an interactive problem's by its interactor, then the checker of the
interactor's output file, as Polygon does (grade/interaction.py). Groups keep Polygon's rules:
`complete-group` scores `all` (worth the group's points, or its tests' points added),
`each-test` scores `each` with each test's own points, dependencies become `after` (the groups
put in an order where each comes after those it needs); tests with points but no groups make
one `each` group. A package whose points add up to 0 (ICPC style) has no groups.

What cannot be judged as Polygon would is refused with a sentence, never approximated: an
answer written to a file, a checker or interactor in a language hazmat has not, a test missing
from the package (a package without its generated tests: Polygon's "full" package, or one
after its doall.sh, has them), a test that is not UTF-8, a path that leaves the package, a task
line over `MAX_LINE_BYTES`. What would exhaust the host is refused too: a path pattern wider
than `MAX_WIDTH` digits, more tests or groups than a task may have (schema.py), and what
polygon_package.py refuses (a DTD or entities in problem.xml, a file that is not a regular
one, reads past the package's budget). The groups are ordered by Kahn's topological sort.
"""

from __future__ import annotations

import heapq
import json
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

from hazmat._exceptions import InputError, UnknownLanguage, quoted
from hazmat.grade.polygon_package import MAX_XML, Package, parse_xml
from hazmat.grade.schema import MAX_GROUPS, MAX_TESTS
from hazmat.grade.tasks import MAX_LINE_BYTES, parse_task
from hazmat.languages import LANGUAGES, get_language, language_for_path

__all__ = ["Problem", "read_problem", "task_for"]

# Polygon's source types (cpp.g++17, java11, python.3, ...) by prefix: each language's module
# names its prefixes (languages/: `names["polygon"]`); these it has not
_NOT_OURS = ("python.2",)  # hazmat's Python is 3
# a path pattern: one printf conversion of the test's number, `%d` or `%i` with flags, a width
# and a precision of one digit each (Polygon's are `tests/%02d`), and `%%` for a `%`
_CONVERSION = re.compile(r"%(%|[-+ 0#]*([0-9]*)(?:\.([0-9]*))?[di])|%")
MAX_WIDTH = 9


@dataclass(frozen=True)
class Problem:
    """What every task of the problem shares: its tests, groups, checker and limits."""

    name: str
    tests: list[dict[str, Any]]
    groups: list[dict[str, Any]] = field(default_factory=list)
    comparator: dict[str, Any] | None = None
    interactor: dict[str, Any] | None = None
    timeout: float | None = None
    memory_mb: int | None = None


def task_for(problem: Problem, submission: Path, language: str | None = None) -> dict[str, Any]:
    """The task line for one submission file (its language from `language` or its name)."""
    try:
        code = submission.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{submission}: not UTF-8 text") from None
    except OSError as exc:
        raise InputError(f"cannot read {submission}: {exc.strerror or exc}") from None
    try:
        lang = get_language(language) if language else language_for_path(submission)
    except UnknownLanguage as exc:
        raise InputError(f"{submission}: {exc} (say which with --language)") from None
    task: dict[str, Any] = {
        "id": f"{problem.name}-{submission.name}",
        "language": lang.name,
        "code": code,
        "tests": problem.tests,
    }
    if problem.groups:
        task["groups"] = problem.groups
    if problem.comparator is not None:
        task["comparator"] = problem.comparator
    if problem.interactor is not None:
        task["interactor"] = problem.interactor
    if problem.timeout is not None:
        task["timeout"] = problem.timeout
    if problem.memory_mb is not None:
        task["memory_mb"] = problem.memory_mb
    size = len(json.dumps(task, ensure_ascii=False).encode())
    if size > MAX_LINE_BYTES:
        raise InputError(
            f"{submission}: its task line would be {size} bytes, over {MAX_LINE_BYTES} "
            "(the tests are too large for one line)"
        )
    parse_task(task, f"the task of {problem.name} and {submission.name}")  # as batch will
    return task


def read_problem(path: Path) -> Problem:
    """The problem of a Polygon package: a folder holding problem.xml, or a .zip of one."""
    with Package(path) as package:
        root = parse_xml(package.read("problem.xml", MAX_XML), path)
        judging = root.find("judging")
        testsets = judging.findall("testset") if judging is not None else []
        if judging is None or not testsets:
            raise InputError(f"{path}: problem.xml has no judging/testset")
        testset = next((t for t in testsets if t.get("name") == "tests"), testsets[0])
        name = root.get("short-name") or path.stem
        input_file = (judging.get("input-file") or "").strip()
        output_file = (judging.get("output-file") or "").strip()
        if output_file and output_file != "stdout":
            raise InputError(
                f"{path}: the answer is written to the file {quoted(output_file)}; hazmat "
                "judges what a program writes to stdout"
            )
        if input_file not in ("", "stdin") and root.find("assets/interactor") is not None:
            raise InputError(
                f"{path}: an interactive problem whose input is the file {quoted(input_file)}: "
                "its input is the interactor's alone"
            )
        tests = _tests(package, testset, input_file if input_file != "stdin" else "")
        return Problem(
            name=name,
            tests=tests,
            groups=_groups(testset, tests, path),
            comparator=_program(package, root, "checker", path),
            interactor=_program(package, root, "interactor", path),
            timeout=_number(testset, "time-limit", 1000.0),
            memory_mb=_memory(testset),
        )


def _tests(package: Package, testset: ElementTree.Element, input_file: str) -> list[dict[str, Any]]:
    listed = testset.findall("tests/test")
    inputs = testset.findtext("input-path-pattern") or ""
    answers = testset.findtext("answer-path-pattern") or ""
    if not listed or "%" not in inputs or "%" not in answers:
        raise InputError(f"{package.path}: the testset has no tests or no path patterns")
    if len(listed) > MAX_TESTS:
        raise InputError(
            f"{package.path}: the testset has {len(listed)} tests; a task has at most {MAX_TESTS}"
        )
    for pattern in (inputs, answers):
        _check_pattern(pattern, package.path)
    tests = []
    for number, test in enumerate(listed, 1):
        input_path, answer_path = inputs % number, answers % number
        given = package.text(input_path)
        entry: dict[str, Any] = {"expected_stdout": package.text(answer_path)}
        if input_file:
            entry["files"] = {input_file: given}
        else:
            entry["stdin"] = given
        if test.get("group") is not None:
            entry["group"] = test.get("group")
        if test.get("points") is not None:
            entry["points"] = _float(test.get("points"), f"test {number}'s points")
        tests.append(entry)
    return tests


def _check_pattern(pattern: str, path: Path) -> None:
    """A path pattern has one conversion of the test's number, of a width that makes a path
    (a width of 99999999 made a 100-million-character error and took a gigabyte)."""
    found = [m for m in _CONVERSION.finditer(pattern) if m.group(1) != "%"]
    if len(found) != 1 or found[0].group(1) is None:
        raise InputError(
            f"{path}: the path pattern {quoted(pattern)} is not a printf pattern of one number "
            "(as tests/%02d)"
        )
    for digits in found[0].groups()[1:]:
        if digits and int(digits) > MAX_WIDTH:
            raise InputError(
                f"{path}: the path pattern {quoted(pattern)} asks for {int(digits)} digits; "
                f"at most {MAX_WIDTH} (as tests/%02d)"
            )


def _groups(
    testset: ElementTree.Element, tests: list[dict[str, Any]], path: Path
) -> list[dict[str, Any]]:
    """Polygon's groups as hazmat's (the module's words); none when nothing has points."""
    listed = testset.findall("groups/group")
    described = {g.get("name", ""): g for g in listed}
    named = [t["group"] for t in tests if "group" in t]
    if any("points" in t for t in tests) or named:
        for test in tests:  # tests outside every group (often the samples): one of their own
            test.setdefault("group", "tests" if not named else "(no group)")
        named = [t["group"] for t in tests]
    by_group: dict[str, list[dict[str, Any]]] = {}
    for test in tests:
        if "group" in test:
            by_group.setdefault(test["group"], []).append(test)
    most = max(len(listed), len(set(named)))
    if most > MAX_GROUPS:
        raise InputError(f"{path}: the testset has {most} groups; a task has at most {MAX_GROUPS}")
    groups = {
        name: _group(name, described.get(name), by_group, described)
        for name in dict.fromkeys([*described, *named])
        if by_group.get(name)  # not a group Polygon lists with no test in this testset
    }
    if not groups or not sum(g["points"] for g in groups.values()) > 0:
        for test in tests:
            test.pop("group", None)
            test.pop("points", None)
        return []
    return [_without_empty(g) for g in _ordered(groups, path)]


def _group(
    name: str,
    element: ElementTree.Element | None,
    by_group: dict[str, list[dict[str, Any]]],
    described: dict[str, ElementTree.Element],
) -> dict[str, Any]:
    """One group as hazmat's, its tests' points kept only where they weigh (`each`)."""
    members = by_group[name]
    policy = element.get("points-policy", "complete-group") if element is not None else None
    each = policy == "each-test" or (policy is None and any("points" in t for t in members))
    weights = sum(t.get("points", 0.0) for t in members)
    given = element.get("points") if element is not None and not each else None
    points = weights if given is None else _float(given, f"group {name}'s points")
    if not each or not weights:
        for t in members:
            t.pop("points", None)
    needs = element.findall("dependencies/dependency") if element is not None else []
    # a dependency on a group with no test here is met; one on no group at all is refused
    after = [
        need
        for need in dict.fromkeys(d.get("group", "") for d in needs)
        if need in by_group or need not in described
    ]
    return {"name": name, "points": points, "scoring": "each" if each else "all", "after": after}


def _ordered(groups: dict[str, dict[str, Any]], path: Path) -> Iterable[dict[str, Any]]:
    """The groups in their order, each moved after those it needs (a cycle is refused): of
    the groups whose dependencies are placed, the first listed goes next. Kahn's sort, with
    a heap of the ready groups by their place in the list: O((groups + dependencies) log
    groups) (the scan it replaced took 83 s for 3,000 groups)."""
    place = {name: number for number, name in enumerate(groups)}
    waiting = {name: 0 for name in groups}
    needed_by: dict[str, list[str]] = {name: [] for name in groups}
    for name, group in groups.items():
        for need in group["after"]:
            if need not in groups:
                raise InputError(f"{path}: a group depends on {quoted(need)}, no group")
            waiting[name] += 1
            needed_by[need].append(name)
    ready = [place[name] for name, count in waiting.items() if count == 0]
    heapq.heapify(ready)
    names, placed = list(groups), []
    while ready:
        name = names[heapq.heappop(ready)]
        placed.append(name)
        for other in needed_by[name]:
            waiting[other] -= 1
            if waiting[other] == 0:
                heapq.heappush(ready, place[other])
    if len(placed) < len(groups):
        stuck = sorted(name for name, count in waiting.items() if count > 0)
        more = f" and {len(stuck) - 10} more" if len(stuck) > 10 else ""
        raise InputError(f"{path}: the groups {', '.join(stuck[:10])}{more} depend on each other")
    return [groups[name] for name in placed]


def _without_empty(group: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in group.items() if v != []}


def _program(
    package: Package, root: ElementTree.Element, role: str, path: Path
) -> dict[str, Any] | None:
    """The checker (a `testlib` comparator) or the interactor, from its source's path and type."""
    source = root.find(f"assets/{role}/source")
    if source is None or not source.get("path"):
        return None
    kind = source.get("type", "cpp.g++17")
    language = None if kind.startswith(_NOT_OURS) else _polygon_language(kind)
    if language is None:
        raise InputError(f"{path}: the {role} is {quoted(kind)}, a language hazmat has not")
    code = package.text(source.get("path", ""))
    named = {"name": "testlib"} if role == "checker" else {}
    return {**named, "language": language, "code": code}


def _polygon_language(kind: str) -> str | None:
    for lang in LANGUAGES.values():
        if kind.startswith(lang.names.get("polygon", ())):
            return lang.name
    return None


def _number(testset: ElementTree.Element, key: str, per: float) -> float | None:
    text = testset.findtext(key)
    return None if text is None else _float(text, key) / per


def _memory(testset: ElementTree.Element) -> int | None:
    text = testset.findtext("memory-limit")
    return None if text is None else max(1, math.ceil(_float(text, "memory-limit") / 2**20))


def _float(text: str | None, what: str) -> float:
    try:
        value = float(text or "")
    except ValueError:
        raise InputError(f"problem.xml: {what} {quoted(text)} is not a number") from None
    if not math.isfinite(value) or value < 0:
        raise InputError(f"problem.xml: {what} {quoted(text)} is not a number of 0 or more")
    return int(value) if value.is_integer() else value
