"""Many tasks at once on a scripted backend, and the results file a crash cannot corrupt.
(`hazmat batch` on the real engine, with kill -9 and --resume: tests/execution/test_grading.py.)"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from hazmat import InputError, Sandbox
from hazmat.backends.base import Job, RunReport
from hazmat.grade.batch import ResultFile, grade_many
from hazmat.grade.grader import Grader
from hazmat.grade.tasks import parse_task
from hazmat.testing import RecordingBackend, report


def tasks(n: int) -> list:
    return [
        parse_task(
            {
                "id": f"t{i}",
                "language": "python",
                "code": "print(input())",
                "tests": [{"stdin": str(i), "expected_stdout": str(i)}],
            }
        )
        for i in range(n)
    ]


def echo(job: Job) -> RunReport:
    return report(stdout=job.program.stdin + b"\n")


def test_every_task_gets_one_result_whatever_order_they_finish_in() -> None:
    backend = RecordingBackend(answer=echo)
    with Sandbox(backend=backend) as sandbox:
        results = list(grade_many(Grader(sandbox), tasks(25), jobs=3))
    assert sorted(r.id for r in results) == sorted(f"t{i}" for i in range(25))
    assert {r.verdict for r in results} == {"accepted"}


def test_stopping_early_runs_no_more_than_the_tasks_already_handed_out() -> None:
    backend = RecordingBackend(answer=echo)
    with Sandbox(backend=backend) as sandbox:
        results = grade_many(Grader(sandbox), tasks(100), jobs=2)
        next(results)
        results.close()
    assert len(backend.jobs) <= 4  # two running, two waiting: never the whole batch


def test_jobs_must_be_positive() -> None:
    with Sandbox(backend=RecordingBackend()) as sandbox, pytest.raises(InputError, match="jobs"):
        next(grade_many(Grader(sandbox), tasks(1), jobs=0))


def test_a_results_file_is_never_overwritten_without_resume(tmp_path: Path) -> None:
    out = tmp_path / "results.jsonl"
    out.write_text('{"id": "t0"}\n')
    with pytest.raises(InputError, match="--resume"):
        ResultFile(out)
    assert out.read_text() == '{"id": "t0"}\n'


def test_resume_cuts_a_partial_last_line_and_knows_the_finished_ids(tmp_path: Path) -> None:
    out = tmp_path / "results.jsonl"
    out.write_text('{"id": "t0", "verdict": "accepted"}\n{"id": "t1"}\n{"id": "t2", "ver')
    with ResultFile(out, resume=True) as results:
        assert results.done == {"t0", "t1"}
        results.write({"id": "t2", "verdict": "accepted"})
    lines = out.read_text().splitlines()
    assert [json.loads(line)["id"] for line in lines] == ["t0", "t1", "t2"]


def test_a_results_file_that_is_not_ours_is_not_resumed(tmp_path: Path) -> None:
    out = tmp_path / "results.jsonl"
    out.write_text('{"id": "t0"}\nhello\n')
    with pytest.raises(InputError, match=r"results.jsonl:2 is not a result line"):
        ResultFile(out, resume=True)


def test_lines_written_from_many_threads_stay_whole(tmp_path: Path) -> None:
    out = tmp_path / "results.jsonl"
    with ResultFile(out) as results:
        big = "x" * 100_000

        def write(k: int) -> None:
            for i in range(20):
                results.write({"id": f"{k}-{i}", "pad": big})

        threads = [threading.Thread(target=write, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    lines = out.read_text().splitlines()
    assert len(lines) == 80 and all(json.loads(line)["pad"] == big for line in lines)


def hazmat_batch(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hazmat", "batch", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_command_refuses_bad_input_before_anything_runs(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text('{"id": "a", "language": "cobol", "code": "", "check": ""}\n{"id": 3}\n')
    out = tmp_path / "out.jsonl"
    bad = hazmat_batch(str(tasks), "-o", str(out))
    assert bad.returncode == 2
    assert f"{tasks}:1.language: unknown language 'cobol'" in bad.stderr
    assert f"{tasks}:2: 'language' is a required property" in bad.stderr
    assert not out.exists()  # nothing written, nothing run
    missing = hazmat_batch(str(tmp_path / "nope.jsonl"), "-o", str(out))
    assert missing.returncode == 2 and "cannot read tasks" in missing.stderr
    tasks.write_text('{"id": "a", "language": "python", "code": "", "check": ""}\n')
    empty = hazmat_batch(str(tasks), "-o", str(out))
    assert empty.returncode == 2 and "task 'a', run 1: code is empty" in empty.stderr
    unwritable = hazmat_batch(str(tasks), "-o", str(tmp_path / "no" / "dir" / "out.jsonl"))
    assert unwritable.returncode == 2 and "cannot write results" in unwritable.stderr
    jobs = hazmat_batch(str(tasks), "-o", str(out), "--jobs", "0")
    assert jobs.returncode == 2 and "--jobs must be at least 1, not 0" in jobs.stderr
