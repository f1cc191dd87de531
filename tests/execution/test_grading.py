"""`hazmat batch` on the real engine: the bundled example set graded right in every language
(under runc: gVisor's kept builds, their cleanup between tests included, are
test_kept_build.py's, the languages under both runtimes test_languages.py's), and a batch
killed (kill -9, Ctrl-C) then resumed with nothing lost and nothing graded twice."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from hazmat import Sandbox
from hazmat.backends.container.engine import Engine
from hazmat.grade.schema import RESULT_SCHEMA
from hazmat.testing import as_asked
from server_helpers import owned_by

pytestmark = pytest.mark.docker

HAZMAT = [sys.executable, "-m", "hazmat"]
EXAMPLES = Path(__file__).parents[2] / "examples" / "grading" / "tasks.jsonl"
RESULT = Draft202012Validator(RESULT_SCHEMA)


def batch(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*HAZMAT, "batch", *args], capture_output=True, text=True, timeout=900)


def results(path: Path) -> dict[str, dict[str, object]]:
    """The result lines by id; every line complete and valid, and no id twice."""
    lines = path.read_text().splitlines()
    found = {}
    for line in lines:
        record = json.loads(line)
        assert not list(RESULT.iter_errors(record)), record
        assert record["id"] not in found, f"{record['id']} graded twice"
        found[record["id"]] = record
    return found


def test_the_example_set_is_graded_right_in_every_language(tmp_path: Path) -> None:
    # each id says what its submission deserves: ...-right, or ...-wrong-<verdict>
    out = tmp_path / "results.jsonl"
    done = batch(str(EXAMPLES), "-o", str(out), "--trust", "unknown", "--runtime", "runc")
    assert done.returncode == 0, done.stderr
    graded = results(out)
    want = {json.loads(line)["id"] for line in EXAMPLES.read_text().splitlines() if line.strip()}
    assert set(graded) == want
    languages = {str(r["id"]).split("-")[1] for r in graded.values()}
    assert len(languages) == 10  # every language has a right and a wrong answer
    for task_id, record in graded.items():
        expected = "accepted" if task_id.endswith("-right") else task_id.rsplit("-", 1)[1]
        assert record["verdict"] == expected, record
        assert record["score"] == (1.0 if expected == "accepted" else record["score"])
    assert "hazmat: graded 24 tasks" in done.stderr
    # a student's receipt: their verdict, checked with the log's public key alone
    mine = graded["sum-go-wrong-wrong_answer"]
    receipt = subprocess.run(
        [*HAZMAT, "audit", "receipt", str(mine["receipt"])], capture_output=True, text=True
    )
    assert receipt.returncode == 0, receipt.stderr
    (tmp_path / "receipt.json").write_text(receipt.stdout)
    pubkey = subprocess.run([*HAZMAT, "audit", "pubkey"], capture_output=True, text=True)
    (tmp_path / "hazmat.pub").write_text(pubkey.stdout)
    checked = subprocess.run(
        [
            *HAZMAT,
            "audit",
            "check-receipt",
            str(tmp_path / "receipt.json"),
            "--pubkey",
            str(tmp_path / "hazmat.pub"),
        ],
        capture_output=True,
        text=True,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    data = json.loads(checked.stdout)["record"]["data"]
    assert (data["task"], data["verdict"], data["passed"]) == (mine["id"], "wrong_answer", 2)


SLOW = [
    {
        "id": f"slow-{i}",
        "language": "python",
        "code": "import time\ntime.sleep(2)\nprint(input())\n",
        "tests": [{"stdin": str(i), "expected_stdout": str(i)}],
    }
    for i in range(12)
]


# `hazmat` with SIGINT at its default, as a terminal starts it: a suite started in the
# background (CI) ignores SIGINT, a child inherits that, and Python then never raises
# KeyboardInterrupt. The wrapper resets it and execs, keeping its pid.
AS_FROM_A_TERMINAL = [
    sys.executable,
    "-c",
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
    "os.execv(sys.executable, [sys.executable, '-m', 'hazmat', *sys.argv[1:]])",
]


def lines_in(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


@pytest.mark.parametrize("stop", [signal.SIGKILL, signal.SIGINT])
def test_a_stopped_batch_resumes_without_losing_or_repeating_a_task(
    tmp_path: Path, stop: signal.Signals
) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(t) + "\n" for t in SLOW))
    out = tmp_path / "results.jsonl"
    args = [str(tasks), "-o", str(out), "--trust", "unknown", "--runtime", "runc", "--jobs", "2"]
    first = subprocess.Popen(
        [*AS_FROM_A_TERMINAL, "batch", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 300
        while lines_in(out) < 2:  # a state, not a delay: two tasks are done
            assert first.poll() is None, first.communicate()
            assert time.monotonic() < deadline, "no result in 300 s"
            time.sleep(0.05)
        at_signal = lines_in(out)
        first.send_signal(stop)
        _, stderr = first.communicate(timeout=120)
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    assert first.returncode == (-signal.SIGKILL if stop is signal.SIGKILL else 130), stderr
    before = results(out)  # complete lines only, each id once
    assert 2 <= len(before) < len(SLOW)
    if stop is signal.SIGINT:  # no task starts, and those running end and are written
        assert "hazmat: stopping: no task starts now" in stderr
        assert len(before) > at_signal, stderr
        assert f"stopped: {len(before)} of {len(SLOW)} tasks graded and written" in stderr
    refused = batch(*args)  # without --resume the results are never overwritten
    assert refused.returncode == 2 and "--resume" in refused.stderr
    again = batch(*args, "--resume")
    assert again.returncode == 0, again.stderr
    after = results(out)
    assert set(after) == {t["id"] for t in SLOW}
    assert all(r["verdict"] == "accepted" for r in after.values())
    assert f"({len(before)} done before)" in again.stderr
    # the stopped process's containers: removed when it ended (Ctrl-C), or by the next one
    assert owned_by(first.pid) == []


def test_sandbox_map_and_amap_yield_each_result_as_it_finishes(engine: Engine) -> None:
    import asyncio

    from hazmat import Sandbox, TaskResult
    from hazmat.backends.docker.driver import DockerBackend

    tasks = [
        {
            "id": f"double-{n}",
            "language": "ruby" if n % 2 else "bash",
            "code": "puts gets.to_i * 2" if n % 2 else "read -r n; echo $((n * 2 + (n == 2)))",
            "tests": [{"stdin": str(n), "expected_stdout": str(2 * n)}],
        }
        for n in range(4)
    ]
    with Sandbox(as_asked(), backend=DockerBackend(engine)) as sandbox:
        mapped = {r.id: r for r in sandbox.map(tasks, jobs=2, trust="unknown", runtime="runc")}

        async def collect() -> list[TaskResult]:
            return [r async for r in sandbox.amap(tasks[:2], trust="unknown", runtime="runc")]

        amapped = asyncio.run(collect())
    assert {k: r.verdict for k, r in mapped.items()} == {
        "double-0": "accepted",
        "double-1": "accepted",
        "double-2": "wrong_answer",  # the bash one is off by one for 2
        "double-3": "accepted",
    }
    assert mapped["double-2"].message == "test 1 of 1, wrong_answer: line 1: expected '4', got '5'"
    assert sorted(r.id for r in amapped) == ["double-0", "double-1"]


def test_cpu_time_verdicts_do_not_depend_on_jobs(sandbox: Sandbox, runtime: str) -> None:
    """A grader's verdicts on the CPU clock are the same at `--jobs 1` and `--jobs 4`: four
    sandboxes at once on a machine with fewer cores make each one's wall time longer, never
    its CPU time, so a program that spins is `time_limit` at its CPU-time limit and one that
    does its work is `accepted` either way (the cgroup v2 lab runs it on v2: scripts/lab)."""
    spin = "while True:\n    pass\n"
    work = "import sys\nn = int(sys.stdin.read())\nprint(sum(range(n)))\n"
    tests = [{"stdin": "100000", "expected_stdout": f"{sum(range(100000))}\n"}]
    tasks = [
        {"id": f"{name}-{n}", "language": "python", "code": code, "tests": tests,
         "timeout": timeout}
        for n in range(2)
        for name, code, timeout in (("spin", spin, 1), ("work", work, 2))
    ]  # fmt: skip
    verdicts = {}
    for jobs in (1, 4):
        graded = sandbox.map(tasks, jobs=jobs, trust="unknown", runtime=runtime)
        verdicts[jobs] = {r.id: r.verdict for r in graded}
        for result in graded:
            if result.id.startswith("spin"):
                [test] = result.tests
                assert test.time_ms is not None and test.time_ms >= 1000, (jobs, test)
                assert test.message is not None and "of CPU time" in test.message, (jobs, test)
    assert verdicts[1] == verdicts[4] == {
        "spin-0": "time_limit", "work-0": "accepted", "spin-1": "time_limit",
        "work-1": "accepted",
    }  # fmt: skip
