"""Grading throughput: a generated batch (mixed languages, 3-10 test cases each, some wrong,
some timing out) graded by `hazmat batch`'s machinery (and, on a sample, with `--fresh`),
against the engine's own rate of creating, starting and removing the same containers (the
ceiling), a hand-written loop over `Sandbox.run`, and a loop over `docker run`; all in one
run, with as many threads each.

    .venv/bin/python benchmarks/batch.py --tasks 500 --jobs 4 --write

The tasks are the example set's answers (examples/grading/tasks.jsonl) to "add two numbers":
each task takes a right or a wrong answer in its language, and a few a non-terminating one
with a one-second limit. The baselines grade a fixed share of the same tasks (`--sample`),
since they are slower; their rates are per test case, like hazmat's.
"""

from __future__ import annotations

import argparse
import json
import random
import secrets
import statistics
import subprocess
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from docs_section import write_section

import hazmat
from hazmat.backends.base import Spec
from hazmat.backends.container.engine import Engine
from hazmat.backends.docker.baseline import RawStarts, docker_run_command
from hazmat.grade.compare import difference
from hazmat.grade.grader import Grader
from hazmat.grade.many import grade_many
from hazmat.grade.tasks import Task, parse_task
from hazmat.languages import LANGUAGES
from hazmat.policy import Policy, Runtime

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "grading" / "tasks.jsonl"
HANG = {"python": "while True:\n    pass\n"}
COMMENT = {"python": "#", "bash": "#", "ruby": "#"}  # the others take //
CASES_TARGET = 55.0  # test cases/s: 5x the 11 single runs/s of docs/benchmarks.md (issue 32)


def generated(count: int, seed: int = 7) -> list[Task]:
    """`count` tasks: 80% right answers, 15% wrong ones, 5% that never end (1 s limit)."""
    rng = random.Random(seed)
    answers: dict[str, dict[str, tuple[str, float | None]]] = {}
    for line in EXAMPLES.read_text().splitlines():
        raw = json.loads(line)
        if raw["id"].startswith("sum-"):
            kind = "right" if raw["id"].endswith("-right") else "wrong"
            # with the example's own limit: a wrong answer that never ends (bash's) stops at
            # its 5 s, not at the level's 30 s on every test case
            answers.setdefault(raw["language"], {})[kind] = (raw["code"], raw.get("timeout"))
    tasks = []
    for i in range(count):
        language = rng.choice(sorted(answers))
        roll = rng.random()
        tests = []
        for _ in range(rng.randint(3, 10)):
            a, b = rng.randint(-(10**6), 10**6), rng.randint(-(10**6), 10**6)
            tests.append({"stdin": f"{a} {b}\n", "expected_stdout": f"{a + b}\n"})
        raw = {"id": f"t{i:05d}", "language": language, "tests": tests}
        if roll < 0.05:
            raw.update(language="python", code=HANG["python"], timeout=1)
        else:
            raw["code"], limit = answers[language]["wrong" if roll < 0.20 else "right"]
            if limit is not None:
                raw["timeout"] = limit
        # every submission its own text, as a real batch's are: nothing is assessed or built
        # once for two tasks
        raw["code"] = f"{COMMENT.get(raw['language'], '//')} submission {i}\n{raw['code']}"
        tasks.append(parse_task(raw))
    return tasks


def ceiling(engine: Engine, seconds: float, jobs: int) -> float:
    """The engine's own create+start+remove rate of hazmat's python containers (per second)."""
    limits = Policy().settings("unknown").limits
    raw = RawStarts(engine, Spec.of("python", LANGUAGES["python"].image, Runtime.RUNC, limits))
    done = 0
    lock = threading.Lock()
    deadline = time.monotonic() + seconds
    with raw.calls(remove=True) as once:

        def worker() -> None:
            nonlocal done
            while time.monotonic() < deadline:
                once()
                with lock:
                    done += 1

        threads = [threading.Thread(target=worker) for _ in range(jobs)]
        began = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    return done / (time.monotonic() - began)


def timed(each: Callable[[Task], int], tasks: list[Task], jobs: int) -> tuple[float, float]:
    """(tasks/s, test cases/s) of `each` (which returns the test cases it ran) over `tasks`."""
    began = time.monotonic()
    with ThreadPoolExecutor(jobs) as pool:
        cases = sum(pool.map(each, tasks))
    elapsed = time.monotonic() - began
    return len(tasks) / elapsed, cases / elapsed


def plain_loop(sandbox: hazmat.Sandbox) -> Callable[[Task], int]:
    """What a grader writes by hand today: a run per test case, then a comparison."""

    def each(task: Task) -> int:
        for case in task.tests:
            result = sandbox.run(
                task.code, task.language, stdin=case.stdin, timeout=task.timeout, trust="unknown"
            )
            difference(case.comparator, case.expected_stdout, result.stdout)
        return len(task.tests)

    return each


def docker_loop(task: Task) -> int:
    """A `docker run` per test case with hazmat's hardening flags (program and input on stdin),
    stopped at the same time limit as hazmat's run (the task's, else the level's 30 s)."""
    for case in task.tests:
        command = docker_run_command(task.language, "runc")
        script = command[-1]
        command[-1] = script.replace("cat > ", "head -c $BENCH_SIZE > ", 1)
        payload = task.code.encode() + case.stdin.encode()
        name = f"hazmat-bench-{secrets.token_hex(6)}"
        command[4:4] = [f"--env=BENCH_SIZE={len(task.code.encode())}", f"--name={name}"]
        try:
            done = subprocess.run(
                command, input=payload, capture_output=True, timeout=task.timeout or 30
            )
            output = done.stdout.decode("utf-8", "replace")
        except subprocess.TimeoutExpired:
            subprocess.run(["docker", "rm", "-f", name], capture_output=True)
            output = ""
        difference(case.comparator, case.expected_stdout, output)
    return len(task.tests)


def batch(
    sandbox: hazmat.Sandbox, tasks: Iterable[Task], jobs: int, fresh: bool = False
) -> dict[str, Any]:
    began = time.monotonic()
    verdicts: dict[str, int] = {}
    cases = 0
    grader = Grader(sandbox, fresh=fresh, trust="unknown", runtime="runc")
    builds: list[float] = []
    runs: list[float] = []
    for result in grade_many(grader, tasks, jobs):
        verdicts[result.verdict] = verdicts.get(result.verdict, 0) + 1
        cases += len(result.tests)
        builds += [result.compile_ms] if result.compile_ms is not None else []
        runs += [t.time_ms for t in result.tests if t.time_ms is not None]
    elapsed = time.monotonic() - began
    done = sum(verdicts.values())
    return {
        "tasks_s": done / elapsed,
        "cases_s": cases / elapsed,
        "verdicts": verdicts,
        "build_ms": statistics.median(builds) if builds else 0.0,
        "builds_s": sum(builds) / 1000,
        "case_ms": statistics.median(runs) if runs else 0.0,
        "thread_s": elapsed * jobs,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--tasks", type=int, default=500)
    parser.add_argument("--jobs", type=int, default=4)
    parser.add_argument("--sample", type=int, default=40, help="tasks for each baseline loop")
    parser.add_argument("--ceiling-seconds", type=float, default=30.0)
    parser.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    args = parser.parse_args()
    tasks = generated(args.tasks)
    sample = tasks[: args.sample]
    engine = Engine()
    print(f"engine ceiling: create+start+remove for {args.ceiling_seconds:.0f} s ...", flush=True)
    rate = ceiling(engine, args.ceiling_seconds, args.jobs)
    with hazmat.Sandbox() as sandbox:
        for language in sorted({t.language for t in tasks}):
            sandbox.warm(language, trust="unknown", runtime="runc")
        print(f"ceiling {rate:.2f} containers/s; hazmat batch: {len(tasks)} tasks ...", flush=True)
        graded = batch(sandbox, tasks, args.jobs)
        print(f"{graded}; hazmat batch --fresh: {len(sample)} tasks ...", flush=True)
        fresh = batch(sandbox, sample, args.jobs, fresh=True)
        print(f"{fresh}; plain loop over Sandbox.run: {len(sample)} tasks ...", flush=True)
        loop = timed(plain_loop(sandbox), sample, args.jobs)
    print(f"{loop}; loop over docker run: {len(sample)} tasks ...", flush=True)
    docker = timed(docker_loop, sample, args.jobs)
    cases = sum(len(t.tests) for t in tasks)
    rows = [
        "| method | tasks/s | test cases/s |",
        "|---|---:|---:|",
        f"| engine ceiling: create+start+remove, no program | {rate:.2f} (as containers/s) | |",
        f"| `hazmat batch` ({len(tasks)} tasks, {cases} test cases) | {graded['tasks_s']:.2f} "
        f"| {graded['cases_s']:.2f} |",
        f"| `hazmat batch --fresh`: a container and build per test case ({len(sample)} tasks) "
        f"| {fresh['tasks_s']:.2f} | {fresh['cases_s']:.2f} |",
        f"| plain loop over `Sandbox.run` ({len(sample)} tasks) | {loop[0]:.2f} | {loop[1]:.2f} |",
        f"| loop over `docker run` ({len(sample)} tasks) | {docker[0]:.2f} | {docker[1]:.2f} |",
    ]
    verdicts = ", ".join(f"{k} {v}" for k, v in sorted(graded["verdicts"].items()))
    share = graded["tasks_s"] / rate
    text = "\n".join(
        [
            f"Measured {datetime.now(UTC):%Y-%m-%d} on this machine (2 cores), {args.jobs} "
            f"threads each, runc, trust `unknown` (0.5 CPU per run); verdicts: {verdicts}. "
            f"A submission is built once and each test case is a fresh process in its "
            f"container (`--fresh`: a container and a build per test case). Targets (issue "
            f"32): test cases/s at least {CASES_TARGET:g} (5x the single runs/s of "
            f"docs/benchmarks.md): {graded['cases_s']:.1f}, "
            f"{'met' if graded['cases_s'] >= CASES_TARGET else 'missed'}; tasks/s at least "
            f"0.9 of the ceiling's containers/s: {share:.2f}, "
            f"{'met' if share >= 0.9 else 'missed'}. Where the time goes: a build's median "
            f"is {graded['build_ms']:.0f} ms, a test case's run {graded['case_ms']:.0f} ms "
            f"(the program, from its job's arrival to its end); builds took "
            f"{graded['builds_s'] / graded['thread_s']:.0%} of the threads' time.",
            "",
            *rows,
        ]
    )
    print(text)
    if args.write:
        write_section("batch", "Grading throughput (benchmarks/batch.py)", text)


if __name__ == "__main__":
    main()
