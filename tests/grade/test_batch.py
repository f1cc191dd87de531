"""Many tasks at once on a scripted backend, and the results file a crash cannot corrupt.
(`hazmat batch` on the real engine, with kill -9 and --resume: tests/execution/test_grading.py.)"""

from __future__ import annotations

import json
import os
import resource
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from hazmat import InfraError, InputError, Sandbox
from hazmat.backends.base import Job, RunReport
from hazmat.cli import main
from hazmat.grade.grader import Grader
from hazmat.grade.many import ResultFile, grade_many
from hazmat.grade.tasks import parse_task
from hazmat.testing import Invoked, RecordingBackend, invoke, report


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


def test_a_second_batch_on_the_same_results_is_refused_while_the_first_writes(
    tmp_path: Path,
) -> None:
    out = tmp_path / "results.jsonl"
    with ResultFile(out) as first:
        first.write({"id": "t0", "verdict": "accepted"})
        for resume in (False, True):
            with pytest.raises(InputError, match="another batch is writing its results to"):
                ResultFile(out, resume=resume)
    with ResultFile(out, resume=True) as after:  # the lock goes with the first batch
        assert after.done == {"t0"}


def test_ctrl_c_says_how_many_were_graded_and_how_to_go_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import hazmat.cli.batch as batch_command

    def one_then_ctrl_c(*args: object) -> Iterator[dict[str, object]]:
        yield {"id": "one", "verdict": "accepted"}
        raise KeyboardInterrupt

    tasks = tmp_path / "tasks.jsonl"
    lines = [{"id": i, "language": "python", "code": "x = 1", "check": "1"} for i in "ab"]
    tasks.write_text("".join(json.dumps(line) + "\n" for line in lines))
    monkeypatch.setattr(batch_command, "_grading", one_then_ctrl_c)
    out = tmp_path / "out.jsonl"
    assert main(["batch", str(tasks), "-o", str(out), "--local", "--no-progress"]) == 130
    assert capsys.readouterr().err == (
        f"hazmat: stopped: 1 of 2 tasks graded and written to {out}; the same command with "
        "--resume grades the other 1\n"
    )
    assert out.read_text() == '{"id":"one","verdict":"accepted"}\n'


def test_resume_cuts_a_partial_last_line_and_knows_the_finished_ids(tmp_path: Path) -> None:
    out = tmp_path / "results.jsonl"
    out.write_text(
        '{"id": "t0", "verdict": "accepted"}\n{"id":"t1","verdict":"blocked"}\n{"id":"t2","ver'
    )
    with ResultFile(out, resume=True) as results:
        assert results.done == {"t0", "t1"}
        results.write({"id": "t2", "verdict": "accepted"})
    lines = out.read_text().splitlines()
    assert [json.loads(line)["id"] for line in lines] == ["t0", "t1", "t2"]


def test_resume_keeps_a_whole_last_line_whose_newline_is_missing(tmp_path: Path) -> None:
    out = tmp_path / "results.jsonl"
    out.write_text('{"id": "t0", "verdict": "accepted"}\n{"id": "t1", "verdict": "accepted"}')
    with ResultFile(out, resume=True) as results:
        assert results.done == {"t0", "t1"}
        results.write({"id": "t2", "verdict": "accepted"})
    lines = out.read_text().splitlines()
    assert [json.loads(line)["id"] for line in lines] == ["t0", "t1", "t2"]


@pytest.mark.parametrize(
    ("content", "line"),
    [
        ('{"id": "t0", "verdict": "accepted"}\nhello\n', 2),
        # not a result file, with a last line without its newline: nothing is cut
        ("# notes\nkeep this line", 1),
        ('{"id": "t0", "verdict": "accepted"}\nkeep this line', 2),
        ('{"id": "t0", "verdict": "accepted"}\n{"id":"t1","verdict":"accepted"}\n{"i', None),
        # a task file given as the output: its lines have ids, but no verdicts
        ('{"id": "a", "language": "python", "code": "1", "check": ""}', 1),
        ('{"id": "a", "language": "python", "code": "1", "check": ""}\n{"id":"b","lan', 1),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", 1),
        ("[" * 100_000 + "\n", 1),
    ],
)
def test_resume_refuses_a_file_that_is_not_results_and_changes_nothing(
    tmp_path: Path, content: str | bytes, line: int | None
) -> None:
    out = tmp_path / "results.jsonl"
    data = content.encode() if isinstance(content, str) else content
    out.write_bytes(data)
    if line is None:  # results with a torn last line: that line, and only it, is cut
        with ResultFile(out, resume=True) as results:
            assert results.done == {"t0", "t1"}
        assert out.read_bytes() == data[: data.rindex(b"\n") + 1]
        return
    with pytest.raises(InputError) as refused:
        ResultFile(out, resume=True)
    assert str(refused.value) == (
        f"{out}:{line} is not a result line (a JSON object with an id and a verdict): the file "
        "cannot be resumed, and was left as it is"
    )
    assert out.read_bytes() == data


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


def read_all(fd: int) -> bytes:
    """Everything from `fd` until its writer closes it."""
    got = b""
    while chunk := os.read(fd, 65536):
        got += chunk
    os.close(fd)
    return got


def test_a_fifo_nobody_reads_yet_is_waited_for_and_said_so(tmp_path: Path) -> None:
    fifo = tmp_path / "results.fifo"
    os.mkfifo(fifo)
    said: list[str] = []
    asked = threading.Event()
    got: list[bytes] = []

    def reader() -> None:
        asked.wait()  # the batch said it waits: only now is there a reader
        got.append(read_all(os.open(fifo, os.O_RDONLY)))

    thread = threading.Thread(target=reader)
    thread.start()
    with ResultFile(fifo, say=lambda line: (said.append(line), asked.set())) as results:
        for i in range(3):
            results.write({"id": f"t{i}", "verdict": "accepted"})
    thread.join()
    assert said == [f"waiting for a reader on {fifo} (a FIFO nobody reads yet)"]
    assert [json.loads(line)["id"] for line in got[0].splitlines()] == ["t0", "t1", "t2"]


def test_a_fifo_with_a_reader_takes_the_lines_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "results.fifo"
    os.mkfifo(fifo)
    read_end = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # the reader is there first
    os.set_blocking(read_end, True)
    with ResultFile(fifo, say=pytest.fail) as results:
        results.write({"id": "t0", "verdict": "accepted"})
    assert read_all(read_end) == b'{"id":"t0","verdict":"accepted"}\n'


def test_a_pipe_a_terminal_and_a_device_take_the_lines_unsynced() -> None:
    """`-o /dev/stdout` (a pipe, or a terminal) or `-o >(jq .)` (/dev/fd/N): fsync(2) would
    fail there (EINVAL), and there is nothing to sync."""
    read_end, write_end = os.pipe()
    controller, terminal = os.openpty()
    try:
        for path in (Path(f"/dev/fd/{write_end}"), Path(os.ttyname(terminal)), Path("/dev/null")):
            with ResultFile(path) as results:
                assert not results.regular
                results.write({"id": "t0", "verdict": "accepted"})
        assert os.read(controller, 4096) == b'{"id":"t0","verdict":"accepted"}\r\n'
        os.close(write_end)
        assert read_all(read_end) == b'{"id":"t0","verdict":"accepted"}\n'
    finally:
        os.close(controller)
        os.close(terminal)


def test_a_reader_gone_away_is_a_broken_pipe_as_for_head() -> None:
    """The CLI ends quietly on it (exit 141), as `hazmat batch ... -o /dev/stdout | head`."""
    read_end, write_end = os.pipe()
    try:
        with ResultFile(Path(f"/dev/fd/{write_end}")) as results:
            os.close(read_end)
            with pytest.raises(BrokenPipeError):
                results.write({"id": "t0", "verdict": "accepted"})
    finally:
        os.close(write_end)


@pytest.mark.parametrize("kind", ["fifo", "pipe", "terminal"])
def test_resume_is_refused_where_nothing_can_be_read_back(tmp_path: Path, kind: str) -> None:
    fifo = tmp_path / "results.fifo"
    os.mkfifo(fifo)
    read_end, write_end = os.pipe()
    controller, terminal = os.openpty()
    path = {
        "fifo": fifo,
        "pipe": Path(f"/dev/fd/{write_end}"),
        "terminal": Path(os.ttyname(terminal)),
    }
    try:
        with pytest.raises(InputError) as refused:
            ResultFile(path[kind], resume=True, say=pytest.fail)  # no wait for a reader
    finally:
        for fd in (read_end, write_end, controller, terminal):
            os.close(fd)
    what = "a terminal or a device" if kind == "terminal" else "a pipe"
    assert str(refused.value) == (
        f"--resume reads the finished tasks back from the output, and {path[kind]} is {what}, "
        "not a regular file: what it took cannot be read back"
    )


def test_a_socket_or_a_folder_is_refused_with_a_sentence(tmp_path: Path) -> None:
    with socket.socket(socket.AF_UNIX) as listening:
        listening.bind(str(tmp_path / "s"))
        with pytest.raises(InputError) as refused:
            ResultFile(tmp_path / "s", say=pytest.fail)
    assert str(refused.value) == (
        f"cannot write results to {tmp_path / 's'}: it is a socket (give a file, a FIFO or a pipe)"
    )
    with pytest.raises(InputError, match=f"cannot write results to {tmp_path}: Is a directory"):
        ResultFile(tmp_path)


def test_a_write_that_fails_is_a_clear_error_and_leaves_no_partial_line(tmp_path: Path) -> None:
    """/dev/full fails every write (ENOSPC, as a full disk does); a file size limit lets a
    line's first part in, then fails the rest (EFBIG): that part is taken back."""
    with ResultFile(Path("/dev/full")) as results:
        with pytest.raises(InfraError, match="cannot write results to /dev/full: No space left"):
            results.write({"id": "t0", "verdict": "accepted"})
        assert results.done == set()
    out = tmp_path / "results.jsonl"
    limits = resource.getrlimit(resource.RLIMIT_FSIZE)
    ignored = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    try:
        with ResultFile(out) as results:
            results.write({"id": "t0", "verdict": "accepted"})
            kept = out.read_bytes()
            resource.setrlimit(resource.RLIMIT_FSIZE, (len(kept) + 10, limits[1]))
            with pytest.raises(InfraError, match="File too large"):
                results.write({"id": "t1", "verdict": "accepted"})
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, limits)
        signal.signal(signal.SIGXFSZ, ignored)
    assert out.read_bytes() == kept


def hazmat_batch(*args: str) -> Invoked:
    return invoke(["batch", *args])


def test_the_command_refuses_bad_input_before_anything_runs(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text('{"id": "a", "language": "cobol", "code": "", "check": ""}\n{"id": 3}\n')
    out = tmp_path / "out.jsonl"
    bad = hazmat_batch(str(tasks), "-o", str(out))
    assert bad.exit_code == 2
    assert f"{tasks}:1.language: unknown language 'cobol'" in bad.stderr
    assert f"{tasks}:2: 'language' is a required property" in bad.stderr
    assert not out.exists()  # nothing written, nothing run
    missing = hazmat_batch(str(tmp_path / "nope.jsonl"), "-o", str(out))
    assert missing.exit_code == 2 and "cannot read tasks" in missing.stderr
    tasks.write_text('{"id": "a", "language": "python", "code": "", "check": ""}\n')
    empty = hazmat_batch(str(tasks), "-o", str(out))
    assert empty.exit_code == 2 and "task 'a', run 1: code is empty" in empty.stderr
    unwritable = hazmat_batch(str(tasks), "-o", str(tmp_path / "no" / "dir" / "out.jsonl"))
    assert unwritable.exit_code == 2 and "cannot write results" in unwritable.stderr
    jobs = hazmat_batch(str(tasks), "-o", str(out), "--jobs", "0")
    assert jobs.exit_code == 2 and "--jobs must be at least 1, not 0" in jobs.stderr


def one_task(tmp_path: Path, task_id: str = "one") -> Path:
    tasks = tmp_path / "tasks.jsonl"
    task = {"id": task_id, "language": "python", "code": "x = 1", "check": "assert x == 1"}
    tasks.write_text(json.dumps(task) + "\n")
    return tasks


def test_the_command_refuses_resume_into_a_fifo_before_waiting_for_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fifo = tmp_path / "results.fifo"
    os.mkfifo(fifo)
    code = main(["batch", str(one_task(tmp_path)), "-o", str(fifo), "--resume", "--local"])
    assert code == 2
    assert capsys.readouterr().err == (
        f"hazmat: error: --resume reads the finished tasks back from the output, and {fifo} is "
        "a pipe, not a regular file: what it took cannot be read back\n"
    )


def test_the_command_answers_a_long_id_with_a_short_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks = one_task(tmp_path, "x" * 10_000)
    assert main(["batch", str(tasks), "-o", str(tmp_path / "out.jsonl"), "--local"]) == 2
    assert capsys.readouterr().err == (
        f"hazmat: error: bad tasks: {tasks}:1.id: '{'x' * 80}'... (10000 characters) is too "
        "long\n"
    )
    assert not (tmp_path / "out.jsonl").exists()


@pytest.mark.docker
def test_the_command_streams_its_lines_to_stdout(tmp_path: Path) -> None:
    """`-o /dev/stdout` into a pipe: the line, exit 0 (fsync on the pipe was an internal
    error, exit 70)."""
    tasks = str(one_task(tmp_path))
    done = subprocess.run(  # a real process: /dev/stdout is its own standard output
        [sys.executable, "-m", "hazmat", "batch", tasks, "-o", "/dev/stdout", "--local"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    [line] = done.stdout.splitlines()
    assert json.loads(line)["verdict"] == "accepted"
    assert "hazmat: graded 1 tasks" in done.stderr


def test_the_first_ctrl_c_lets_the_running_tasks_end_and_the_second_stops_at_once(
    capsys: pytest.CaptureFixture[str],
) -> None:
    import os
    import signal
    import threading

    from hazmat.cli.batch import _draining_on_ctrl_c

    stop = threading.Event()
    before = signal.signal(signal.SIGINT, signal.default_int_handler)  # as from a terminal
    try:
        with pytest.raises(KeyboardInterrupt), _draining_on_ctrl_c(stop):
            os.kill(os.getpid(), signal.SIGINT)  # the first: said, and the grading drains
            assert stop.is_set() and "no task starts now" in capsys.readouterr().err
            os.kill(os.getpid(), signal.SIGINT)  # the second: at once
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a background job's: left as it is
        with _draining_on_ctrl_c(threading.Event()):
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, before)
