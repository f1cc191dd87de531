"""A batch's tasks: one JSON object per line (docs/batch.md, schema.py), read and checked.

A task is a submission (`id`, `language`, `code`) with either `tests` (test cases, each
judged by its stdout) or `check` (test code appended to the program, judged by the exit
status: the HumanEval style). Its tests may be grouped (`groups`: subtasks worth points, the
IOI style). Every line is checked against `TASK_SCHEMA` before anything runs, then for what a
schema cannot say (groups named, named once, their dependencies earlier ones), and a bad one is
an `InputError` naming its line and key; ids must be unique, since `--resume` finds finished
tasks by id.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError, best_match

from hazmat._exceptions import QUOTED_MOST, InputError, UnknownLanguage, quoted
from hazmat.grade.schema import PROGRAM_COMPARATORS, TASK_SCHEMA, count_values
from hazmat.grade.task_groups import Group, count_dependencies, parse_groups
from hazmat.json_input import loads
from hazmat.languages import get_language

__all__ = [
    "Comparator",
    "Group",
    "Interactor",
    "Task",
    "TestCase",
    "parse_entries",
    "parse_lines",
    "parse_task",
    "read_entries",
    "read_tasks",
]

MAX_LINE_BYTES = 64 * 1024 * 1024
_VALIDATOR = Draft202012Validator(TASK_SCHEMA)
_EMPTY: Mapping[str, str] = MappingProxyType({})


@dataclass(frozen=True)
class Comparator:
    """How a test's stdout is judged against `expected_stdout` (compare.py)."""

    name: str = "whitespace"
    abs_tol: float = 1e-6  # float: |a - b| <= abs_tol or <= rel_tol * max(|a|, |b|)
    rel_tol: float = 1e-6
    language: str | None = None  # checker, testlib: the checker program
    code: str | None = None

    @property
    def program(self) -> bool:
        """Judged by a program of its own (checkers.py), not by comparing texts."""
        return self.name in PROGRAM_COMPARATORS

    @classmethod
    def of(cls, raw: Any, default: Comparator | None = None) -> Comparator:
        if raw is None:
            return default or cls()
        if isinstance(raw, str):
            return cls(raw)
        if raw["name"] == "testlib":  # testlib.h is C++'s
            return cls(**{"language": "cpp", **raw})
        return cls(**raw)


@dataclass(frozen=True)
class TestCase:
    """One test case: the program's input, and the output it must give."""

    __test__ = False  # not a pytest class, whatever its name

    expected_stdout: str = ""  # an interactive task's: the interactor's answer file
    stdin: str = ""
    args: tuple[str, ...] = ()
    files: Mapping[str, str] = field(default_factory=lambda: _EMPTY)
    comparator: Comparator = field(default_factory=Comparator)
    timeout: float | None = None
    memory_mb: int | None = None
    group: str | None = None
    points: float | None = None  # its weight in an `each` group


@dataclass(frozen=True)
class Interactor:
    """An interactive task's interactor (grade/interaction.py)."""

    code: str
    language: str = "cpp"


@dataclass(frozen=True)
class Task:
    """One submission and how to judge it: `tests`, or `check` code (then `tests` is empty)."""

    id: str
    language: str
    code: str
    tests: tuple[TestCase, ...] = ()
    check: str | None = None
    files: Mapping[str, str] = field(default_factory=lambda: _EMPTY)
    timeout: float | None = None
    memory_mb: int | None = None
    clock: str = "cpu"  # what timeout measures (policy.Clock)
    cpus: float | None = None
    groups: tuple[Group, ...] = ()
    interactor: Interactor | None = None
    time_multiplier: float | None = None  # its language's entry of time_multipliers (or 1)
    build_flags: tuple[str, ...] = ()  # its language's entry of build_flags (build_flags.py)

    @property
    def total(self) -> int:
        """How many verdicts make its score: one per test case, or one for `check`."""
        return len(self.tests) or 1

    @functools.cached_property
    def members(self) -> Mapping[str, tuple[int, ...]]:
        """Each group's tests, by index in the task's order (scoring.py reads them often)."""
        found: dict[str, list[int]] = {g.name: [] for g in self.groups}
        for index, case in enumerate(self.tests):
            if case.group is not None:
                found.setdefault(case.group, []).append(index)
        return {name: tuple(indices) for name, indices in found.items()}

    @functools.cached_property
    def group_named(self) -> Mapping[str, Group]:
        return {g.name: g for g in self.groups}

    def group_of(self, index: int) -> Group:
        """The group of test `index` (of a task with groups)."""
        return self.group_named[self.tests[index].group or ""]


def parse_task(raw: Any, where: str = "task") -> Task:
    """A task from its decoded JSON, checked against the schema; `InputError` names `where`
    and the key that is wrong."""
    count_values(raw, where)  # before the schema, whose time grows with them
    count_dependencies(raw, where)
    error = best_match(_VALIDATOR.iter_errors(raw))
    if error is not None:
        raise InputError(f"{where}{_key_path(error)}: {_said(error)}")
    _finite(raw, where)
    _known_languages(raw, where)
    _interactive(raw, where)
    groups = parse_groups(raw, where)
    default = Comparator.of(raw.get("comparator"))
    tests = tuple(
        TestCase(
            expected_stdout=t.get("expected_stdout", ""),
            stdin=t.get("stdin", ""),
            args=tuple(t.get("args", ())),
            files=MappingProxyType(dict(t.get("files", {}))),
            comparator=Comparator.of(t.get("comparator"), default),
            timeout=t.get("timeout"),
            memory_mb=t.get("memory_mb"),
            group=t.get("group"),
            points=t.get("points"),
        )
        for t in raw.get("tests", ())
    )
    return Task(
        id=raw["id"],
        language=raw["language"],
        code=raw["code"],
        tests=tests,
        check=raw.get("check"),
        files=MappingProxyType(dict(raw.get("files", {}))),
        timeout=raw.get("timeout"),
        memory_mb=raw.get("memory_mb"),
        clock=raw.get("clock", "cpu"),
        cpus=raw.get("cpus"),
        groups=groups,
        interactor=Interactor(**raw["interactor"]) if "interactor" in raw else None,
        time_multiplier=_multiplier(raw, where),
        build_flags=_build_flags(raw, where),
    )


def _multiplier(raw: dict[str, Any], where: str) -> float | None:
    """The factor `time_multipliers` gives the task's language (1 if it names others; None
    without the map); each key a language, and a timeout there to multiply."""
    if raw.get("time_multipliers") is None:
        return None
    found: float = _own_entry(raw, "time_multipliers", where, 1.0)
    timed = raw.get("timeout") is not None or all(
        t.get("timeout") is not None for t in raw.get("tests", [{}])
    )
    if found != 1 and not timed:
        raise InputError(
            f"{where}.time_multipliers: there is no timeout to multiply (give the task one)"
        )
    return found


def _build_flags(raw: dict[str, Any], where: str) -> tuple[str, ...]:
    """The compiler flags `build_flags` gives the task's language (an alias names it too);
    the policy's allowlist is the run's to check (run/intake.py)."""
    return tuple(_own_entry(raw, "build_flags", where, ()))


def _own_entry(raw: dict[str, Any], field: str, where: str, default: Any) -> Any:
    """The entry of the language -> value map `field` for the task's own language (an alias
    names it too; `default` when none does); a key that is no language is named."""
    own = get_language(raw["language"]).name
    found = default
    for name, value in (raw.get(field) or {}).items():
        try:
            language = get_language(name).name
        except UnknownLanguage as exc:
            raise InputError(f"{where}.{field}[{quoted(name)}]: {exc}") from None
        if language == own:
            found = value
    return found


def _interactive(raw: dict[str, Any], where: str) -> None:
    """An interactor judges its task's tests (a checker may judge its output file after it),
    and needs test cases to judge."""
    if "interactor" not in raw:
        return
    if "check" in raw:
        raise InputError(f"{where}.interactor: a task with check has no test cases to interact")
    judged = [("comparator", raw.get("comparator"))] + [
        (f"tests[{i}].comparator", t.get("comparator")) for i, t in enumerate(raw["tests"])
    ]
    for key, given in judged:
        if given is not None and not (
            isinstance(given, dict) and given["name"] in PROGRAM_COMPARATORS
        ):
            raise InputError(
                f"{where}.{key}: an interactive task is judged by its interactor, and by a "
                "checker of the interactor's output file after it; there is no output to compare"
            )


def _finite(value: Any, where: str) -> None:
    """No number of the task is NaN or infinite (JSON has neither, but Python's json reads
    them, and every bound the schema sets holds for NaN): `InputError` naming the key."""
    if isinstance(value, float) and not math.isfinite(value):
        said = "NaN" if math.isnan(value) else "infinity"
        raise InputError(f"{where}: {said} is not a number (JSON has no NaN or infinity)")
    if isinstance(value, dict):
        for key, item in value.items():
            _finite(item, f"{where}{_key(key)}")
    elif isinstance(value, list):
        for number, item in enumerate(value):
            _finite(item, f"{where}[{number}]")


def _key_path(error: ValidationError) -> str:
    """Where in the task the error is: `.tests[0].files['a.txt']` (long keys cut short)."""
    return "".join(f"[{p}]" if isinstance(p, int) else _key(p) for p in error.absolute_path)


def _key(name: str) -> str:
    return f".{name}" if name.isidentifier() and len(name) <= QUOTED_MOST else f"[{quoted(name)}]"


def _said(error: ValidationError) -> str:
    """jsonschema's message with the user's value in it cut short (it quotes the whole value:
    a 10,000-character id made a 10,083-character error), and never longer than a few
    lines whatever else it quotes (a key, a list of keys)."""
    message = str(error.message).replace(repr(error.instance), quoted(error.instance))
    if len(message) <= _MESSAGE_MOST:
        return message
    return f"{message[:_MESSAGE_MOST]}... ({len(message)} characters)"


_MESSAGE_MOST = 240


def _known_languages(raw: dict[str, Any], where: str) -> None:
    """The task's language, and its checkers', exist (an unknown one names the keys)."""
    comparators = [("comparator", raw.get("comparator"))] + [
        (f"tests[{i}].comparator", t.get("comparator")) for i, t in enumerate(raw.get("tests", ()))
    ]
    named = [("language", raw["language"])]
    if "language" in raw.get("interactor", {}):
        named.append(("interactor.language", raw["interactor"]["language"]))
    named += [
        (f"{key}.language", c["language"])
        for key, c in comparators
        if isinstance(c, dict) and c.get("name") in PROGRAM_COMPARATORS and "language" in c
    ]
    for key, name in named:
        try:
            get_language(name)
        except UnknownLanguage as exc:
            raise InputError(f"{where}.{key}: {exc}") from None


def read_tasks(path: Path) -> list[Task]:
    """Every task of a JSON Lines file (blank lines skipped), all checked before any runs:
    `InputError` lists the first few bad lines."""
    return [task for task, _ in read_entries(path)]


def read_entries(path: Path) -> list[tuple[Task, Any]]:
    """The same, each task with its decoded JSON (what a service is sent)."""
    try:
        with open(path, "rb") as f:
            entries = ((f"{path}:{number}", line) for number, line in _numbered(f))
            return parse_entries(entries, str(path))
    except OSError as exc:
        raise InputError(f"cannot read tasks {path}: {exc.strerror or exc}") from None


def parse_lines(lines: Iterable[bytes], name: str) -> list[Task]:
    """The tasks of JSON Lines (blank lines skipped), named `name:LINE` in errors."""
    entries = ((f"{name}:{number}", line) for number, line in _numbered(lines))
    return [task for task, _ in parse_entries(entries, name)]


def parse_entries(entries: Iterable[tuple[str, bytes | Any]], name: str) -> list[tuple[Task, Any]]:
    """Tasks with their decoded JSON, from (where, line or decoded object) pairs, all checked:
    `InputError` lists the first few bad ones (each named by `where`), and ids used twice."""
    tasks, problems, seen = [], [], set[str]()
    for where, entry in entries:
        try:
            raw = _decode(entry) if isinstance(entry, bytes) else entry
            task = parse_task(raw, where)
        except InputError as exc:
            said = str(exc)
            problems.append(said if said.startswith(where) else f"{where}: {said}")
            continue
        if task.id in seen:
            problems.append(f"{where}: id {quoted(task.id)} is used twice")
        seen.add(task.id)
        tasks.append((task, raw))
    if problems:
        more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
        raise InputError("bad tasks: " + "; ".join(problems[:5]) + more)
    if not tasks:
        raise InputError(f"{name}: no tasks")
    return tasks


def _numbered(lines: Iterable[bytes]) -> Iterator[tuple[int, bytes]]:
    for number, line in enumerate(lines, 1):
        if line.strip():
            yield number, line


def _decode(line: bytes) -> Any:
    """A task line, decoded as the service decodes a body (json_input.py: its depth, numbers
    and text bounded, a lone surrogate refused naming its field)."""
    if len(line) > MAX_LINE_BYTES:
        raise InputError(f"a line of {len(line)} bytes, over {MAX_LINE_BYTES}")
    return loads(line, "the line")
