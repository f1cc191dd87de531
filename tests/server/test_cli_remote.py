"""`hazmat run` through a running service (HAZMAT_URL + HAZMAT_API_KEY): same output, same exit
status, the run recorded by the server under the key's tenant; clear errors otherwise."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from hazmat.testing import Invoked, invoke
from server_helpers import LiveServer, finished_record

pytestmark = pytest.mark.docker


def hazmat(
    server: LiveServer | None, *args: str, key: str = "untrusted", url: str | None = None
) -> Invoked:
    env = {
        "HAZMAT_URL": url or (server.url if server else ""),
        "HAZMAT_API_KEY": server.keys[key] if server else "hzm_x",
    }
    return invoke(args, env=env)


def _sessions(server: LiveServer) -> list[str]:
    started = [r for r in server.audit_records() if r["kind"] == "run.started"]
    return [str(r["data"].get("caller")) for r in started]


def test_a_run_goes_through_the_server(live_server: LiveServer, tmp_path: Path) -> None:
    before = len(_sessions(live_server))
    done = hazmat(live_server, "run", "-c", "import sys; print('hi'); sys.exit(3)")
    assert (done.stdout, done.exit_code) == ("hi\n", 3), done.stderr
    callers = _sessions(live_server)
    assert len(callers) == before + 1 and callers[-1].startswith("tenant:acme key:")


def test_json_and_output_files_through_the_server(live_server: LiveServer, tmp_path: Path) -> None:
    program = tmp_path / "make.py"
    program.write_text("open('out.txt', 'w').write(input() * 2)\n")
    stdin = tmp_path / "in.txt"
    stdin.write_text("ab\n")
    out = tmp_path / "out"
    done = hazmat(
        live_server,
        "run",
        str(program),
        "--stdin",
        str(stdin),
        "--output-file",
        "out.txt",
        "--output-dir",
        str(out),
        "--json",
    )
    assert done.exit_code == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["outcome"] == "ok" and "stdout_base64" not in result
    assert (out / "out.txt").read_text() == "abab"


def test_local_runs_in_process(live_server: LiveServer) -> None:
    before = len(_sessions(live_server))
    done = hazmat(live_server, "run", "--local", "-c", "print(2)")
    assert (done.stdout, done.exit_code) == ("2\n", 0), done.stderr
    assert len(_sessions(live_server)) == before


def test_a_wrong_key_is_refused(live_server: LiveServer) -> None:
    live_server.keys["bogus"] = "hzm_000000000000_" + "A" * 43
    done = hazmat(live_server, "run", "-c", "print(1)", key="bogus")
    assert done.exit_code == 77
    assert "valid API key" in done.stderr and live_server.url in done.stderr


def test_a_service_that_does_not_answer(tmp_path: Path) -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    done = hazmat(None, "run", "-c", "print(1)", url=f"http://127.0.0.1:{port}")
    assert done.exit_code == 125
    assert "does not answer" in done.stderr and "Traceback" not in done.stderr
    done = hazmat(None, "run", "-c", "print(1)", url="ftp://x")
    assert done.exit_code == 2 and "HAZMAT_URL" in done.stderr


TICKS = "import time\nwhile True:\n    print('tick', flush=True)\n    time.sleep(0.05)\n"


@pytest.mark.parametrize("where", ["in-process", "through the server"])
def test_plain_output_comes_as_it_is_written_and_a_reader_leaving_cancels_the_run(
    live_server: LiveServer, tmp_path: Path, where: str
) -> None:
    """`hazmat run | head -1`: the first line comes while the program runs (it never ends by
    itself within its 15 s), the reader leaves, and the run is recorded as cancelled."""
    program = tmp_path / "ticks.py"
    program.write_text(TICKS)
    local = where == "in-process"
    env = {**os.environ, "HAZMAT_API_KEY": live_server.keys["untrusted"]}
    env["HAZMAT_URL"] = "" if local else live_server.url
    if local:
        env["HAZMAT_AUDIT_DIR"] = str(tmp_path / "audit")
    args = ["run", str(program), "--timeout", "15", *(["--local"] if local else [])]
    process = subprocess.Popen(
        [sys.executable, "-m", "hazmat", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert process.stdout is not None and process.stderr is not None
    assert process.stdout.readline() == b"tick\n"
    process.stdout.close()  # as `head -1` does
    assert process.wait(timeout=120) == 141  # quietly, as a tool killed by SIGPIPE
    assert b"Traceback" not in process.stderr.read()
    process.stderr.close()
    audit = tmp_path / "audit" if local else live_server.audit_dir
    assert finished_record(audit, str(program))["data"]["outcome"] == "cancelled"


def test_a_batch_goes_through_the_server(live_server: LiveServer, tmp_path: Path) -> None:
    examples = Path(__file__).resolve().parents[2] / "examples" / "grading" / "tasks.jsonl"
    lines = [line for line in examples.read_text().splitlines() if '"id": "sum-python' in line]
    tasks, out = tmp_path / "tasks.jsonl", tmp_path / "out.jsonl"
    tasks.write_text("\n".join(lines) + "\n")
    done = hazmat(live_server, "batch", str(tasks), "-o", str(out), "--no-progress")
    assert done.exit_code == 0, done.stderr
    results = [json.loads(line) for line in out.read_text().splitlines()]
    assert {r["id"]: r["verdict"] for r in results} == {
        "sum-python-right": "accepted",
        "sum-python-wrong-wrong_answer": "wrong_answer",
    }
    records = {r["seq"]: r for r in live_server.audit_records()}
    for result in results:  # graded and recorded by the server, as its key's tenant
        receipt = records[result["receipt"]]
        assert (receipt["kind"], receipt["data"]["task"]) == ("grade.verdict", result["id"])
    refused = hazmat(
        live_server, "batch", str(tasks), "-o", str(tmp_path / "no.jsonl"), "--trust", "trusted"
    )
    assert refused.exit_code == 77 and "trust" in refused.stderr, refused.stderr
    assert not (tmp_path / "no.jsonl").exists() or not (tmp_path / "no.jsonl").read_text()
