"""The CLI behaves like a good Unix tool: no traceback for any input or pipe, JSON errors under
`--json`, help for every option, a checked output directory that never follows symlinks."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest

from hazmat.cli import _parser, main, output_dir


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    ("argv", "exit_code", "kind", "text"),
    [
        (["run", "-c", "print(1)", "--lang", "cobol", "--json"], 2, "UnknownLanguage", "cobol"),
        (["run", "-c", "print(1)", "--timeout", "abc", "--json"], 2, "UsageError", "--timeout"),
        (["run", "--json"], 2, "UsageError", "one of the arguments FILE -c is required"),
        (["run", "-c", "1", "--env", "NOEQUALS", "--json"], 2, "InputError", "NAME=VALUE"),
        (["run", "-c", "1", "--policy", "/no/such.yaml", "--json"], 78, "PolicyError", "policy"),
        (["assess", "/no/such/file.py", "--json"], 2, "InputError", "cannot read program"),
        (["audit", "verify", "--log", "/no/such/dir", "--json"], 2, "InputError", "audit log"),
    ],
)
def test_errors_under_json_are_one_json_object_on_stdout(
    capsys: pytest.CaptureFixture[str], argv: list[str], exit_code: int, kind: str, text: str
) -> None:
    code, out, err = run_cli(capsys, *argv)
    assert code == exit_code
    error = json.loads(out)["error"]
    assert error["type"] == kind and error["exit_code"] == exit_code
    assert text in error["message"]
    assert err.startswith("hazmat: error: ") and "Traceback" not in err


def test_usage_errors_without_json_are_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run_cli(capsys, "run", "-c", "1", "--runtime", "kata")
    assert (code, out) == (2, "")
    assert err.startswith("hazmat: error: argument --runtime: invalid choice") and err[-1] == "\n"


def test_an_unexpected_failure_is_a_message_not_a_traceback(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    log = tmp_path / "log"
    (log / "segments").mkdir(parents=True)
    (log / "origin").write_text("x")
    (log / "segments" / "000001.jsonl").mkdir()  # a folder where a segment should be
    code, _, err = run_cli(capsys, "audit", "show", "--log", str(log))
    assert code == 74 and "cannot read" in err and "Traceback" not in err


def _options(parser: argparse.ArgumentParser, path: str = "hazmat") -> list[str]:
    missing = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                missing += _options(sub, f"{path} {name}")
        elif not isinstance(action, argparse._HelpAction) and not action.help:
            missing.append(f"{path} {'/'.join(action.option_strings) or action.dest}")
    return missing


def test_every_option_has_help_text() -> None:
    assert _options(_parser()) == []


def test_run_help_has_the_exit_code_table(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "run", "--help")
    assert code == 0
    for line in ("124   timeout", "137   memory_limit", "126   blocked", "125   infra_error"):
        assert line in out


def _closed_pipe(*argv: str) -> subprocess.CompletedProcess[bytes]:
    """Run the CLI with stdout a pipe whose reader is already gone."""
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run(
            [sys.executable, "-m", "hazmat", *argv],
            stdout=write,
            stderr=subprocess.PIPE,
            timeout=120,
            check=False,
        )
    finally:
        os.close(write)


def test_a_reader_that_goes_away_ends_the_command_quietly() -> None:
    result = _closed_pipe("assess", "-c", "print(1)", "--json")
    assert result.returncode == 141
    assert b"Traceback" not in result.stderr and b"BrokenPipe" not in result.stderr


def test_output_dir_that_is_a_file_is_refused_before_anything_runs(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    occupied = tmp_path / "file"
    occupied.write_text("x")
    code, out, err = run_cli(
        capsys, "run", "-c", "print(1)", "--output-file", "o", "--output-dir", str(occupied)
    )
    assert code == 2 and out == "" and "exists and is not a directory" in err


def test_output_files_never_follow_symlinks(tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.write_text("precious")
    out = tmp_path / "out"
    out.mkdir()
    (out / "report.txt").symlink_to(target)
    (out / "sub").symlink_to(tmp_path)
    problems = output_dir.save(
        out, {"report.txt": b"evil", "sub/target": b"evil", "ok/x.txt": b"fine"}
    )
    assert target.read_text() == "precious"
    assert len(problems) == 2 and all("symbolic link" in p for p in problems)
    assert (out / "ok" / "x.txt").read_bytes() == b"fine"


def test_output_files_are_never_written_into_a_fifo(tmp_path: Path) -> None:
    """A FIFO in the way, read or not: refused at once, never a silent wait for a reader."""
    out = tmp_path / "out"
    out.mkdir()
    for name in ("unread", "read"):
        os.mkfifo(out / name)
    reader = os.open(out / "read", os.O_RDONLY | os.O_NONBLOCK)
    try:
        problems = output_dir.save(out, {"unread": b"x", "read": b"x", "ok.txt": b"fine"})
    finally:
        os.close(reader)
    said = "a FIFO, a device or a socket is in the way (hazmat writes only regular files there)"
    assert problems == [
        f"output file 'unread' not written: {said}",
        f"output file 'read' not written: {said}",
    ]
    assert (out / "ok.txt").read_bytes() == b"fine"


def test_output_dir_is_created_when_missing(tmp_path: Path) -> None:
    fresh = tmp_path / "a" / "b"
    output_dir.prepare(fresh)
    assert fresh.is_dir()
    broken = tmp_path / "broken"
    broken.symlink_to(tmp_path / "nowhere")
    with pytest.raises(Exception, match="broken symbolic link"):
        output_dir.prepare(broken)


def test_json_errors_carry_no_raw_control_characters(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "run", "-c", "1", "--lang", "co\x85bol\x1b[2J", "--json")
    assert code == 2 and all(ch == "\n" or 0x20 <= ord(ch) < 0x7F for ch in out)
    assert "unknown language" in json.loads(out)["error"]["message"]


def test_server_status_reports_a_server_whose_metrics_do_not_answer(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A local server that listens but answers /metrics with 503 (starting, stopping): said
    so, never a KeyError (it was marked running before its metrics answered)."""
    runtime = Path(tempfile.mkdtemp(prefix="hz-", dir="/tmp"))  # a socket path is short
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    folder = runtime / "hazmat" / "local" / "0123456789abcdef"
    folder.mkdir(parents=True)
    for made in (folder.parent, folder):
        made.chmod(0o700)
    key = folder / "key"
    key.write_text("hzm_000000000000_" + "a" * 43)
    key.chmod(0o600)
    (folder / "server.json").write_text(json.dumps({"pid": 4242, "started": 0}))
    listening = socket.socket(socket.AF_UNIX)
    listening.bind(str(folder / "server.sock"))
    listening.listen()

    def serve() -> None:
        """The status's two connections: its probe (closed at once), then GET /metrics."""
        for _ in range(2):
            connection, _ = listening.accept()
            with connection:
                if connection.recv(4096):
                    connection.sendall(
                        b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n"
                    )

    server = threading.Thread(target=serve)
    server.start()
    try:
        code, out, err = run_cli(capsys, "server", "status")
    finally:
        server.join()
        listening.close()
        shutil.rmtree(runtime)
    assert (code, err) == (0, "")
    assert out == (
        "hazmat: local server running (pid 4242) (another setup: engine, audit log or hazmat), "
        f"not answering yet: unix:{folder / 'server.sock'}/metrics answered 503; {folder}\n"
    )
