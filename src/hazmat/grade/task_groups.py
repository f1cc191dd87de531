"""A task's groups (subtasks worth points, docs/batch.md), read from its task line and checked
for what its schema cannot say (tasks.py reads the rest; scoring.py runs and scores them).

Names are used once, every test is in a group and every group has a test, dependencies
(`after`) name earlier groups only, so there is no cycle and a group's dependencies are judged
before it runs; a test's own points are given for every test of an `each` group or for none;
the points add up to more than 0; and the names in all `after` lists together are at most
`MAX_DEPENDENCIES`, counted before the schema reads the line (its time grows with them). Each
check is one pass over the groups and the tests.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hazmat._exceptions import InputError, quoted

__all__ = ["MAX_DEPENDENCIES", "Group", "count_dependencies", "parse_groups"]

MAX_DEPENDENCIES = 10_000  # names in all of a task's `after` lists


@dataclass(frozen=True)
class Group:
    """A subtask: test cases worth `points` together. `all`: the points only when every one of
    them is accepted (the IOI rule); `each`: the points times the share they earn. A group
    `after` others scores only once they have all their points (else its tests are skipped);
    with `skip_rest`, the group's other tests are skipped once one fails."""

    name: str
    points: float
    scoring: str = "all"
    after: tuple[str, ...] = ()
    skip_rest: bool = True


def parse_groups(raw: dict[str, Any], where: str) -> tuple[Group, ...]:
    """The task's groups, checked for what the schema cannot say: names used once, every test
    in a group and every group with a test, dependencies on earlier groups only (so there is
    no cycle, and a group's dependencies are judged before it runs), and some points."""
    listed, tests = raw.get("groups", ()), raw.get("tests", ())
    if not listed:
        for number, test in enumerate(tests):
            for key in ("group", "points"):
                if key in test:
                    raise InputError(f"{where}.tests[{number}].{key}: the task has no groups")
        return ()
    if "check" in raw:
        raise InputError(f"{where}.groups: a task with check has no test cases to group")
    groups: list[Group] = []
    named: set[str] = set()
    for number, entry in enumerate(listed):
        here = f"{where}.groups[{number}]"
        if entry["name"] in named:
            raise InputError(f"{here}.name: {quoted(entry['name'])} is used twice")
        for name in entry.get("after", ()):
            if name not in named:
                raise InputError(f"{here}.after: {quoted(name)} is not an earlier group")
        named.add(entry["name"])
        scoring = entry.get("scoring", "all")
        groups.append(
            Group(
                name=entry["name"],
                points=entry["points"],
                scoring=scoring,
                after=tuple(entry.get("after", ())),
                skip_rest=entry.get("skip_rest", scoring == "all"),
            )
        )
    members: dict[str, list[int]] = {name: [] for name in named}
    for number, test in enumerate(tests):
        if test.get("group") not in named:
            said = f"{quoted(test['group'])} is not a group" if "group" in test else "missing"
            raise InputError(f"{where}.tests[{number}].group: {said} (the task has groups)")
        members[test["group"]].append(number)
    for number, group in enumerate(groups):
        _check_weights(group, [(i, tests[i]) for i in members[group.name]], number, where)
    if not sum(g.points for g in groups) > 0:
        raise InputError(f"{where}.groups: their points add up to 0")
    return tuple(groups)


def _check_weights(
    group: Group, members: list[tuple[int, dict[str, Any]]], number: int, where: str
) -> None:
    """A group has a test, and its tests' own points are all given or none, only in an
    `each` group, and add up to more than 0."""
    if not members:
        raise InputError(f"{where}.groups[{number}]: no test case is in it")
    weighed = [i for i, t in members if "points" in t]
    if weighed and group.scoring != "each":
        raise InputError(
            f"{where}.tests[{weighed[0]}].points: a test's points count only in a group "
            f"scoring each, and {quoted(group.name)} scores all"
        )
    if weighed and len(weighed) < len(members):
        unweighed = next(i for i, t in members if "points" not in t)
        raise InputError(
            f"{where}.tests[{unweighed}].points: missing, as other tests of group "
            f"{quoted(group.name)} have points"
        )
    if weighed and not sum(t["points"] for _, t in members) > 0:
        raise InputError(f"{where}.groups[{number}]: its tests' points add up to 0")


def count_dependencies(raw: Any, where: str) -> None:
    """At most `MAX_DEPENDENCIES` names in all the groups' `after` lists (each group may name
    1,000, and the schema took 8 s to check 1,000 groups naming every earlier one)."""
    groups = raw.get("groups") if isinstance(raw, dict) else None
    if not isinstance(groups, list):
        return
    named = sum(
        len(g["after"]) for g in groups if isinstance(g, dict) and isinstance(g.get("after"), list)
    )
    if named > MAX_DEPENDENCIES:
        raise InputError(
            f"{where}.groups: {named} dependencies in all; at most {MAX_DEPENDENCIES} (a group "
            "needs only the groups it depends on directly)"
        )
