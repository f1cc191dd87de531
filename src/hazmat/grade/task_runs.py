"""What each of a task's runs is asked with: a test case's run, an interactive test's two, a
`check` task's one (the HumanEval style), and `check_task`, which has every run a task would
make checked by the policy before anything runs (grader.py runs them)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from hazmat._exceptions import InputError, quoted
from hazmat.grade.checkers import judges_options
from hazmat.grade.tasks import Task, TestCase
from hazmat.models import ExecutionRequest

__all__ = [
    "check_task",
    "interactive_options",
    "interactor_options",
    "stretched",
    "test_options",
    "with_check",
    "with_check_options",
]


def check_task(
    task: Task, request: Callable[..., ExecutionRequest], options: Mapping[str, Any]
) -> None:
    """Every run `task` would make is a request `request` (`Sandbox.request`, or
    `hazmat.admit` over a policy) accepts: `Grader.check`. It needs no engine, so a command
    can check every task before it reaches one."""
    if task.check is not None:
        runs = [(with_check(task), task.language, with_check_options(task, options))]
    elif task.interactor is not None:
        runs = [
            run
            for case in task.tests
            for run in (
                (task.code, task.language, interactive_options(task, case, options)),
                (
                    task.interactor.code,
                    task.interactor.language,
                    interactor_options(case, options),
                ),
            )
        ]
    else:
        runs = [
            (task.code, task.language, test_options(task, case, options)) for case in task.tests
        ]
    for number, (code, language, run_options) in enumerate(runs, 1):
        try:
            request(code, language, **run_options)
        except InputError as exc:
            raise InputError(f"task {quoted(task.id)}, run {number}: {exc}") from None


def test_options(task: Task, case: TestCase, options: Mapping[str, Any]) -> dict[str, Any]:
    timeout = stretched(task, case.timeout if case.timeout is not None else task.timeout)
    return {
        "stdin": case.stdin,
        "args": list(case.args),
        "files": {**task.files, **case.files} or None,
        "timeout": timeout,
        "memory_mb": case.memory_mb if case.memory_mb is not None else task.memory_mb,
        "clock": task.clock,
        "cpus": task.cpus,
        "build_flags": list(task.build_flags) or None,
        **options,
    }


def interactive_options(task: Task, case: TestCase, options: Mapping[str, Any]) -> dict[str, Any]:
    """The submission's run in an interactive test: the test's input is the interactor's."""
    return {**test_options(task, case, options), "stdin": "", "args": []}


def interactor_options(case: TestCase, options: Mapping[str, Any]) -> dict[str, Any]:
    """The interactor's run: testlib's files and arguments, the wall clock (it waits on the
    submission, and must never wait on a core it holds); interaction.run_interactor sets its
    limit past the submission's (grade/harness.py)."""
    return {
        **judges_options(options),
        "files": {"input": case.stdin, "answer": case.expected_stdout},
        "args": ["input", "output", "answer"],
        "output_files": ["output"],  # testlib's tout, for a checker after the interactor
        "clock": "wall",
    }


def with_check_options(task: Task, options: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "files": dict(task.files) or None,
        "timeout": stretched(task, task.timeout),
        "memory_mb": task.memory_mb,
        "clock": task.clock,
        "cpus": task.cpus,
        "build_flags": list(task.build_flags) or None,
        **options,
    }


def with_check(task: Task) -> str:
    """The program with its test code appended (the HumanEval style)."""
    return task.code.rstrip("\n") + "\n\n" + (task.check or "")


def stretched(task: Task, timeout: float | None) -> float | None:
    """`timeout` times the task's language's `time_multipliers` entry."""
    if timeout is None or task.time_multiplier is None:
        return timeout
    return timeout * task.time_multiplier
