"""`hazmat batch`: grade a JSON Lines file of tasks into a JSON Lines file of results.

Every task line is checked before anything runs. Results are written as tasks finish, one
complete line each (grade/many.py), so `--resume` carries on after Ctrl-C, kill -9 or a
crash with the tasks whose ids are not in the output yet. A live progress bar on a terminal
(done/total, rate, time left, verdicts so far); a summary line at the end in any case.

Like `hazmat run`, it grades through the user's local server (kept warm: its pool, its
assessor; cli/local_server.py) or the service `HAZMAT_URL` names (cli/batch_remote.py), and in
this process with `--local`, `--policy`, `--caller` or runc asked for where the level has runsc.
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from hazmat.cli.common import policy, weaker_runtime

__all__ = ["add"]


def add(sub: Any) -> None:
    batch = sub.add_parser(
        "batch",
        help="grade many submissions against their test cases (JSON Lines in and out)",
        description=(
            "Grade every task of TASKS (one JSON object per line: id, language, code, and "
            "tests or check; docs/batch.md) and write one result line per task to OUTPUT as "
            "each finishes. Exits 0 once every task has a result."
        ),
    )
    batch.add_argument("tasks", type=Path, metavar="TASKS", help="the tasks, JSON Lines")
    batch.add_argument(
        "-o",
        "--output",
        type=Path,
        required=True,
        help="where the results go, JSON Lines: a file, or a pipe, FIFO or terminal "
        "(/dev/stdout) that takes them as they come",
    )
    batch.add_argument("--jobs", type=int, default=4, help="tasks graded at once (default: 4)")
    batch.add_argument(
        "--resume",
        action="store_true",
        help="OUTPUT has results already: grade only the tasks whose ids are not in it",
    )
    batch.add_argument(
        "--trust",
        choices=["untrusted", "unknown", "trusted"],
        help="trust level of every run, which picks limits and runtime (default: the policy's)",
    )
    batch.add_argument("--policy", type=Path, metavar="FILE", help="YAML policy file")
    batch.add_argument(
        "--runtime", choices=["runc", "runsc"], help="container runtime (default: the policy's)"
    )
    batch.add_argument("--caller", help="who is asking (recorded in the audit log)")
    batch.add_argument(
        "--override-reason",
        metavar="TEXT",
        help="run submissions the policy blocks, for this written reason (recorded)",
    )
    batch.add_argument(
        "--fresh",
        action="store_true",
        help="run every test case in a fresh container, with a build of its own (slower; "
        "by default a submission is built once and each test is a fresh process)",
    )
    batch.add_argument(
        "--local",
        action="store_true",
        help="grade in this process, not through the local server or a service",
    )
    batch.add_argument("--no-progress", action="store_true", help="no progress bar")
    batch.set_defaults(handler=_batch)


def _batch(args: argparse.Namespace) -> int:
    from hazmat import InputError
    from hazmat.grade.many import ResultFile
    from hazmat.grade.tasks import read_entries

    if args.jobs < 1:
        raise InputError(f"--jobs must be at least 1, not {args.jobs}")
    entries = read_entries(args.tasks)
    chosen = policy(args)  # a bad policy file says so before the output is touched
    with ResultFile(args.output, resume=args.resume) as out:
        todo = [(task, raw) for task, raw in entries if task.id not in out.done]
        counts: Counter[str] = Counter()
        started = time.monotonic()
        stop = threading.Event()  # the first Ctrl-C: no task starts, the running ones end
        try:
            with contextlib.ExitStack() as stack:
                waiting: list[Callable[[], int]] = []
                results = _grading(args, chosen, todo, stack, waiting, stop) if todo else iter(())
                with _Bar(len(todo), args.no_progress, waiting[0] if waiting else None) as bar:
                    for line in results:
                        out.write(line)
                        counts[str(line.get("verdict"))] += 1
                        bar.advance(counts)
        except KeyboardInterrupt:  # a Ctrl-C the grading cannot drain, or the second one
            _stopped(out.regular, sum(counts.values()), len(todo), args.output)
            raise
        if stop.is_set() and sum(counts.values()) < len(todo):
            _stopped(out.regular, sum(counts.values()), len(todo), args.output)
            return 130
        _summary(len(entries) - len(todo), counts, time.monotonic() - started)
    return 0


@contextlib.contextmanager
def _draining_on_ctrl_c(stop: threading.Event) -> Iterator[None]:
    """While the block runs, the first Ctrl-C sets `stop` (no task starts; those running end
    within their limits and are written) and the next one interrupts at once. Only where
    Ctrl-C is Python's own (not ignored, as in a background job) and in the main thread."""
    if (
        threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    ):
        yield
        return

    def first(signum: int, frame: Any) -> None:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        stop.set()
        print(
            "\nhazmat: stopping: no task starts now; the running ones end within their "
            "limits and are written (Ctrl-C again stops at once, without them)",
            file=sys.stderr,
        )

    signal.signal(signal.SIGINT, first)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def _grading(
    args: argparse.Namespace,
    chosen: Any,
    todo: list[tuple[Any, Any]],
    stack: Any,
    waiting: list[Callable[[], int]],
    stop: threading.Event,
) -> Iterator[dict[str, Any]]:
    """The result lines of `todo`, every task checked first: graded by the service if there is
    one (the user's local server, kept warm), else in this process, where `waiting` gets how
    to count the programs waiting for a core and `stop`, once set, starts no more tasks.
    Nothing has run yet when this returns; `stack` ends the grading (a batch left early is
    cancelled)."""
    from hazmat import Sandbox
    from hazmat.cli import local_server
    from hazmat.cli.batch_remote import RemoteBatch
    from hazmat.grade.grader import Grader
    from hazmat.grade.many import grade_many

    options = {
        k: v
        for k, v in (
            ("trust", args.trust),
            ("runtime", args.runtime),
            ("caller", args.caller),
            ("override_reason", args.override_reason),
        )
        if v is not None
    }
    here = args.local or args.policy or args.caller
    service = None if here else local_server.for_cli(local_server.say)
    if service is not None and not service.own and weaker_runtime(args):
        service = None  # runc at a runsc level: the user's own choice, no service key's
    if service is not None:
        if "trust" not in options and service.default_trust is not None:
            options["trust"] = service.default_trust  # the policy's default, as here
        if args.fresh:
            options["fresh"] = True
        most = service.max_running
        if most is not None and args.jobs > most:
            local_server.say(f"the local server grades {most} tasks at once (--local: more)")
        _say_cores(min(args.jobs, len(todo)), None)
        raws = [raw for _, raw in todo]
        remote = stack.enter_context(RemoteBatch(service, raws, args.jobs, options))
        waiting.append(remote.waiting)
        return iter(remote)
    tasks = [task for task, _ in todo]
    _check_all(chosen, tasks, options)  # before the engine: a wrong task is exit 2, not 125
    sandbox = stack.enter_context(Sandbox(chosen))
    waiting.append(sandbox.backend.waiting_for_core)
    _say_cores(min(args.jobs, len(todo)), sandbox.backend.resources().cpus)
    grader = Grader(sandbox, fresh=args.fresh, **options)
    stack.enter_context(_draining_on_ctrl_c(stop))  # a service's batch is cancelled instead
    return (result.to_dict() for result in grade_many(grader, tasks, args.jobs, stop))


def _say_cores(jobs: int, cores: int | None) -> None:
    """Say, once, that --jobs above the cores does not mean more programs measured at once."""
    from hazmat.backends.base import local_resources

    cores = cores or local_resources().cpus
    if jobs > cores:
        print(
            f"hazmat: {jobs} tasks at once, but at most {cores} programs are measured at once "
            "(one per core, on the CPU clock); the others wait for a core",
            file=sys.stderr,
        )


def _check_all(chosen: Any, tasks: list[Any], options: dict[str, Any]) -> None:
    """Every run of every task is a valid request under the policy, before the first one runs
    and before the engine is reached."""
    from hazmat import admit
    from hazmat._exceptions import InputError
    from hazmat.grade.task_runs import check_task

    def request(code: str, language: str, **run_options: Any) -> Any:
        return admit(chosen, code, language, **run_options)

    problems = []
    for task in tasks:
        try:
            check_task(task, request, options)
        except InputError as exc:
            problems.append(str(exc))
    if problems:
        more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
        raise InputError("tasks that cannot run: " + "; ".join(problems[:5]) + more)


def _stopped(resumable: bool, done: int, todo: int, output: Any) -> None:
    """What a batch stopped by Ctrl-C did, and how to go on."""
    said = f"hazmat: stopped: {done} of {todo} tasks graded and written to {output}"
    if resumable:
        said += f"; the same command with --resume grades the other {todo - done}"
    print(said, file=sys.stderr)


def _summary(skipped: int, counts: Counter[str], seconds: float) -> None:
    done = sum(counts.values())
    rate = done / seconds if seconds > 0 else 0.0
    verdicts = ", ".join(f"{v} {n}" for v, n in counts.most_common()) or "nothing to do"
    already = f" ({skipped} done before)" if skipped else ""
    print(
        f"hazmat: graded {done} tasks{already} in {seconds:.1f} s ({rate:.2f} tasks/s): {verdicts}",
        file=sys.stderr,
    )


class _Bar:
    """rich's progress bar on stderr when it is a terminal; nothing otherwise."""

    def __init__(self, total: int, off: bool, waiting: Callable[[], int] | None = None) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            ProgressColumn,
            TaskProgressColumn,
            TextColumn,
            TimeRemainingColumn,
        )
        from rich.text import Text

        class Waiting(ProgressColumn):
            """How many programs wait for a core, at each refresh."""

            def render(self, task: Any) -> Text:
                count = waiting() if waiting is not None else 0
                return Text(f"{count} waiting for a core" if count else "")

        console = Console(stderr=True)
        self.progress = Progress(
            TextColumn("grading"),
            BarColumn(),
            MofNCompleteColumn(),
            TaskProgressColumn(),
            TextColumn("{task.fields[rate]}"),
            TimeRemainingColumn(),
            TextColumn("{task.fields[verdicts]}"),
            Waiting(),
            console=console,
            disable=off or not console.is_terminal,
        )
        self.task = self.progress.add_task("grading", total=total, rate="", verdicts="")
        self.started = time.monotonic()
        self.done = 0

    def advance(self, counts: Counter[str]) -> None:
        self.done += 1
        elapsed = time.monotonic() - self.started
        rate = f"{self.done / elapsed:.2f} tasks/s" if elapsed > 0 else ""
        verdicts = " ".join(f"{v}:{n}" for v, n in counts.most_common())
        self.progress.update(self.task, advance=1, rate=rate, verdicts=verdicts)

    def __enter__(self) -> _Bar:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()
