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
line over `MAX_LINE_BYTES`.
"""

from __future__ import annotations

import json
import math
import posixpath
import zipfile
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

from hazmat._exceptions import InputError, UnknownLanguage, quoted
from hazmat.grade.tasks import MAX_LINE_BYTES, parse_task
from hazmat.languages import get_language, language_for_path

__all__ = ["Problem", "read_problem", "task_for"]

# Polygon's source types (cpp.g++17, java11, python.3, ...) by prefix: hazmat's language
_SOURCE_TYPES = (
    ("cpp.", "cpp"),
    ("c.", "c"),
    ("java", "java"),
    ("python.2", None),  # hazmat's Python is 3
    ("python.", "python"),
    ("go", "go"),
    ("rust", "rust"),
    ("ruby", "ruby"),
    ("js", "javascript"),
)
_MAX_XML = 4 * 1024 * 1024


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
    with _Package(path) as package:
        root = _parse(package.read("problem.xml", _MAX_XML), path)
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


class _Package:
    """A package's files, from a folder or a zip, by the paths problem.xml names."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.zip: zipfile.ZipFile | None = None
        try:
            if path.is_file():
                self.zip = zipfile.ZipFile(path)
                self.prefix = _zip_root(self.zip.namelist())
            elif not (path / "problem.xml").is_file():
                raise InputError(f"{path}: not a Polygon package (no problem.xml in it)")
        except (OSError, zipfile.BadZipFile) as exc:
            raise InputError(f"{path}: not a Polygon package folder or .zip ({exc})") from None

    def __enter__(self) -> _Package:
        return self

    def __exit__(self, *_: object) -> None:
        if self.zip is not None:
            self.zip.close()

    def read(self, name: str, most: int = MAX_LINE_BYTES) -> bytes:
        clean = posixpath.normpath(name.replace("\\", "/"))
        if clean.startswith(("/", "../")) or clean == "..":
            raise InputError(f"{self.path}: {quoted(name)} is outside the package")
        try:
            if self.zip is not None:
                info = self.zip.getinfo(self.prefix + clean)
                if info.file_size > most:
                    raise InputError(f"{self.path}: {clean} is over {most} bytes")
                return self.zip.read(info)
            file = self.path / clean
            if not file.resolve().is_relative_to(self.path.resolve()):
                raise InputError(f"{self.path}: {quoted(name)} is outside the package (a link)")
            if file.stat().st_size > most:
                raise InputError(f"{self.path}: {clean} is over {most} bytes")
            return file.read_bytes()
        except (zipfile.BadZipFile, zlib.error) as exc:
            raise InputError(f"{self.path}: {clean} cannot be unpacked: {exc}") from None
        except (KeyError, FileNotFoundError):
            raise InputError(
                f"{self.path}: {clean} is missing{_WHY_MISSING.get(clean, '')}"
            ) from None
        except OSError as exc:
            raise InputError(f"{self.path}: cannot read {clean}: {exc.strerror or exc}") from None

    def text(self, name: str) -> str:
        try:
            return self.read(name).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(f"{self.path}: {name} is not UTF-8 text (byte {exc.start})") from None


_WHY_MISSING = {"problem.xml": " (not a Polygon package)"}


def _zip_root(names: list[str]) -> str:
    """The folder inside a zip that holds problem.xml ("" at its top)."""
    found = sorted((n for n in names if posixpath.basename(n) == "problem.xml"), key=len)
    if not found:
        raise InputError("the .zip holds no problem.xml (not a Polygon package)")
    return found[0][: -len("problem.xml")]


def _parse(data: bytes, path: Path) -> ElementTree.Element:
    if b"<!DOCTYPE" in data or b"<!ENTITY" in data:
        raise InputError(f"{path}: problem.xml declares a DOCTYPE or entities; refused")
    try:
        return ElementTree.fromstring(data)
    except ElementTree.ParseError as exc:
        raise InputError(f"{path}: problem.xml is not XML: {exc}") from None


def _tests(
    package: _Package, testset: ElementTree.Element, input_file: str
) -> list[dict[str, Any]]:
    listed = testset.findall("tests/test")
    inputs = testset.findtext("input-path-pattern") or ""
    answers = testset.findtext("answer-path-pattern") or ""
    if not listed or "%" not in inputs or "%" not in answers:
        raise InputError(f"{package.path}: the testset has no tests or no path patterns")
    tests = []
    for number, test in enumerate(listed, 1):
        try:
            input_path, answer_path = inputs % number, answers % number
        except (TypeError, ValueError):
            raise InputError(
                f"{package.path}: the path patterns {quoted(inputs)} and {quoted(answers)} are "
                "not printf patterns of one number"
            ) from None
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


def _groups(
    testset: ElementTree.Element, tests: list[dict[str, Any]], path: Path
) -> list[dict[str, Any]]:
    """Polygon's groups as hazmat's (the module's words); none when nothing has points."""
    described = {g.get("name", ""): g for g in testset.findall("groups/group")}
    named = [t["group"] for t in tests if "group" in t]
    if any("points" in t for t in tests) or named:
        for test in tests:  # tests outside every group (often the samples): one of their own
            test.setdefault("group", "tests" if not named else "(no group)")
        named = [t["group"] for t in tests]
    groups: dict[str, dict[str, Any]] = {}
    for name in dict.fromkeys([*described, *named]):
        members = [t for t in tests if t.get("group") == name]
        if not members:
            continue  # a group Polygon lists with no test in this testset
        element = described.get(name)
        policy = element.get("points-policy", "complete-group") if element is not None else None
        each = policy == "each-test" or (policy is None and any("points" in t for t in members))
        weights = sum(t.get("points", 0.0) for t in members)
        if each:
            points = weights
            if not weights:
                for t in members:
                    t.pop("points", None)
        else:
            given = element.get("points") if element is not None else None
            points = _float(given, f"group {name}'s points") if given is not None else weights
            for t in members:
                t.pop("points", None)
        needs = element.findall("dependencies/dependency") if element is not None else []
        # a dependency on a group with no test here is met; one on no group at all is refused
        after = [
            d.get("group", "")
            for d in needs
            if d.get("group", "") in named or d.get("group", "") not in described
        ]
        groups[name] = {
            "name": name,
            "points": points,
            "scoring": "each" if each else "all",
            "after": after,
        }
    if not groups or not sum(g["points"] for g in groups.values()) > 0:
        for test in tests:
            test.pop("group", None)
            test.pop("points", None)
        return []
    return [_without_empty(g) for g in _ordered(groups, path)]


def _ordered(groups: dict[str, dict[str, Any]], path: Path) -> Iterable[dict[str, Any]]:
    """The groups in their order, each moved after those it needs (a cycle is refused)."""
    placed: list[str] = []
    while len(placed) < len(groups):
        ready = [
            name
            for name, g in groups.items()
            if name not in placed and all(d in placed for d in g["after"])
        ]
        if not ready:
            stuck = sorted(set(groups) - set(placed))
            unknown = [d for n in stuck for d in groups[n]["after"] if d not in groups]
            if unknown:
                raise InputError(f"{path}: a group depends on {quoted(unknown[0])}, no group")
            raise InputError(f"{path}: the groups {', '.join(stuck)} depend on each other")
        placed.append(ready[0])
    return [groups[name] for name in placed]


def _without_empty(group: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in group.items() if v != []}


def _program(
    package: _Package, root: ElementTree.Element, role: str, path: Path
) -> dict[str, Any] | None:
    """The checker (a `testlib` comparator) or the interactor, from its source's path and type."""
    source = root.find(f"assets/{role}/source")
    if source is None or not source.get("path"):
        return None
    kind = source.get("type", "cpp.g++17")
    language = next((lang for prefix, lang in _SOURCE_TYPES if kind.startswith(prefix)), None)
    if language is None:
        raise InputError(f"{path}: the {role} is {quoted(kind)}, a language hazmat has not")
    code = package.text(source.get("path", ""))
    named = {"name": "testlib"} if role == "checker" else {}
    return {**named, "language": language, "code": code}


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
