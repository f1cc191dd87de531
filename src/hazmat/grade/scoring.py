"""Subtasks: the order a grouped task's tests run in, which are skipped, and what each group
earns.

A task with `groups` runs them in their order (each group's tests in the task's order), so a
group's dependencies (`after`, earlier groups only) are judged before it. A test is skipped,
not run, when a group it depends on has not earned all its points (one worth no points, as
samples often are: when a test of it was not accepted), or when its group skips the rest
(`skip_rest`, the default for `all`) and an earlier test of the group failed; the same rule
decides whether a group's points count (`met`). A group
scoring `all` earns its points when every test of it is accepted; `each` earns its points
times the mean of its tests' scores (1 accepted, 0 not, a testlib checker's share between),
weighed by the tests' own `points` where they have them (Polygon's each-test points);
a group whose dependency is short earns nothing. The task's score is the points earned over
the points there are. A task without groups is one group of all its tests worth one point per
test, scored `each`: its score is the mean of its tests' scores.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from hazmat.grade.tasks import Group, Task

__all__ = [
    "NOT_FAILED",
    "GroupResult",
    "Scored",
    "met",
    "order",
    "scored",
    "skipped_because",
]

NOT_FAILED = ("accepted", "skipped")  # a test's verdicts that are no failure


class Scored(Protocol):
    """What scoring reads of a test's result (grader.TestResult)."""

    @property
    def verdict(self) -> str: ...

    @property
    def score(self) -> float: ...

    @property
    def message(self) -> str | None: ...


@dataclass(frozen=True)
class GroupResult:
    """What one group earned, of how many points."""

    name: str
    verdict: str
    points: float
    max_points: float
    passed: int
    total: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "verdict": self.verdict,
            "points": round(self.points, 6),
            "max_points": self.max_points,
            "passed": self.passed,
            "total": self.total,
        }


def order(task: Task) -> list[int]:
    """The tests' indices in the order they run: group by group for a grouped task."""
    if not task.groups:
        return list(range(len(task.tests)))
    return [index for group in task.groups for index in task.members[group.name]]


def skipped_because(task: Task, index: int, done: Mapping[int, Scored]) -> str | None:
    """Why test `index` is not to run, given the results so far (`done`, by index); None to
    run it. A group's tests run in order, so the test before it in its group answers for
    the group (its dependencies, a failure before it): constant time but for a group's first
    test, whose dependencies' results are read once."""
    if not task.groups:
        return None
    group = task.group_of(index)
    members = task.members[group.name]
    place = bisect.bisect_left(members, index)
    before = done.get(members[place - 1]) if place > 0 else None
    if before is not None:
        if before.verdict == "skipped":
            return before.message
        if group.skip_rest and before.verdict != "accepted":
            return f"test {members[place - 1] + 1} of group {group.name!r} failed"
        return None
    for name in group.after:
        if not met(_group_result(task, task.group_named[name], done)):
            return f"group {name!r}, which group {group.name!r} needs, did not earn all its points"
    if group.skip_rest:
        for i in members[:place]:
            if i in done and done[i].verdict != "accepted":
                return f"test {i + 1} of group {group.name!r} failed"
    return None


def met(result: GroupResult) -> bool:
    """A group others may depend on: it earned all its points; one worth none, all its tests
    accepted."""
    if result.max_points > 0:
        return result.points >= result.max_points
    return result.passed == result.total


def scored(task: Task, tests: Sequence[Scored]) -> tuple[float, float, list[GroupResult]]:
    """The points earned, the points there are, and each group's result (none without groups);
    `tests` in the task's order (a test not among them earned nothing)."""
    if not task.groups:
        return sum(t.score for t in tests), float(task.total), []
    done = dict(enumerate(tests))
    results = [_group_result(task, g, done) for g in task.groups]
    earned = {r.name: r for r in results}
    for number, group in enumerate(task.groups):
        if not all(met(earned[name]) for name in group.after):
            results[number] = _nothing(results[number])
            earned[group.name] = results[number]
    return sum(r.points for r in results), sum(g.points for g in task.groups), results


def _group_result(task: Task, group: Group, done: Mapping[int, Scored]) -> GroupResult:
    members = task.members[group.name]
    got = [done[i] for i in members if i in done]
    passed = sum(t.verdict == "accepted" for t in got)
    failed = next((t.verdict for t in got if t.verdict not in NOT_FAILED), None)
    if group.scoring == "all":
        points = group.points if passed == len(members) else 0.0
    else:
        weights = [task.tests[i].points for i in members]
        weighed = [1.0 if w is None else w for w in weights]
        earned = sum(w * done[i].score for w, i in zip(weighed, members, strict=True) if i in done)
        points = group.points * (earned / sum(weighed))  # exactly all of them when all pass
    verdict = "accepted" if passed == len(members) else failed or "skipped"
    return GroupResult(group.name, verdict, points, group.points, passed, len(members))


def _nothing(result: GroupResult) -> GroupResult:
    return GroupResult(
        result.name, result.verdict, 0.0, result.max_points, result.passed, result.total
    )
