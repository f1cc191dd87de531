"""Known bypasses: programs the static assessment rates below HIGH although they do harm or
try to. Each test first proves the miss (so docs/assessment.md stays true: if a rule starts
catching one, the test says so), then proves the container holds, under runc and runsc.

Former bypasses the assessment now catches (issue 13: endless allocation loops, host secrets by
path) stay here on a written override: what they prove is that the container holds as well.
"""

from __future__ import annotations

import secrets
import textwrap
from pathlib import Path

import pytest
from probes import uids_of

from hazmat import ExecutionResult, Outcome, RiskLevel, Sandbox

pytestmark = [pytest.mark.docker, pytest.mark.oci, pytest.mark.matrix]


def run_missed(sandbox: Sandbox, runtime: str, code: str, language: str) -> ExecutionResult:
    result = sandbox.run(textwrap.dedent(code), language, runtime=runtime)
    assert result.assessment is not None
    assert result.assessment.level.rank < RiskLevel.HIGH.rank, (
        "the assessment now catches this bypass: move it out of docs/assessment.md's list",
        result.assessment.findings,
    )
    assert result.decision in ("run", "warn")
    return result


def run_caught(sandbox: Sandbox, runtime: str, code: str, language: str) -> ExecutionResult:
    reason = "a former bypass, now caught: the container must hold it as well"
    result = sandbox.run(textwrap.dedent(code), language, runtime=runtime, override_reason=reason)
    assert result.assessment is not None
    assert result.assessment.level.rank >= RiskLevel.HIGH.rank, result.assessment.findings
    return result


def test_reading_a_host_file_by_path(sandbox: Sandbox, runtime: str, tmp_path: Path) -> None:
    marker = Path("/tmp") / f"hazmat-bypass-{secrets.token_hex(6)}"
    marker.write_text("host secret")
    try:
        code = f"""
            try:
                print(open({str(marker)!r}).read())
            except OSError as e:
                print("ERR", type(e).__name__)
        """
        result = run_missed(sandbox, runtime, code, "python")
    finally:
        marker.unlink()
    assert result.stdout == "ERR FileNotFoundError\n"


def test_allocating_until_memory_runs_out(sandbox: Sandbox, runtime: str) -> None:
    code = """
        chunks = []
        while True:
            chunks.append(bytearray(10**7))
    """
    assert run_caught(sandbox, runtime, code, "python").outcome is Outcome.MEMORY_LIMIT


def test_a_typescript_allocation_loop(sandbox: Sandbox, runtime: str) -> None:
    code = "const hog: number[][] = [];\nfor (;;) hog.push(new Array(1e6).fill(1));\n"
    result = run_caught(sandbox, runtime, code, "typescript")
    assert result.outcome in (Outcome.MEMORY_LIMIT, Outcome.ERROR), result
    assert result.outcome is not Outcome.OK


def test_a_thread_bomb(sandbox: Sandbox, runtime: str) -> None:
    code = """
        import threading, time
        threads = []
        try:
            while True:
                t = threading.Thread(target=time.sleep, args=(30,), daemon=True)
                t.start()
                threads.append(t)
        except RuntimeError:
            print("STOPPED AT", len(threads))
    """
    result = run_caught(sandbox, runtime, code, "python")
    if runtime == "runc":
        # the pids limit (32 in the strict preset) stops it inside the program
        assert result.stdout.startswith("STOPPED AT"), result
        assert int(result.stdout.split()[-1]) < 32
    else:
        # under gVisor the sandbox itself is stopped (see docs/security.md)
        assert result.outcome is not Outcome.OK or result.stdout.startswith("STOPPED AT")


def test_http_to_an_outside_address(sandbox: Sandbox, runtime: str) -> None:
    code = """
        import http.client
        conn = http.client.HTTPConnection("192.0.2.1", 80, timeout=3)
        try:
            conn.request("GET", "/")
            print("CONNECTED", conn.getresponse().status)
        except OSError as e:
            print("ERR", e.errno)
    """
    result = run_missed(sandbox, runtime, code, "python")
    assert result.stdout.startswith("ERR"), result.stdout  # no route: the container has no network


def test_child_process_through_the_module_loader(sandbox: Sandbox, runtime: str) -> None:
    code = """
        const tool = module.constructor._load("child" + "_process");
        const probe = "id -u; grep CapEff /proc/self/status; "
            + "test -e /run/docker.sock || echo NOSOCK";
        console.log(tool.execSync(probe).toString());
    """
    result = run_missed(sandbox, runtime, code, "javascript")
    lines = result.stdout.split()
    # the shell runs, but as the run's own uid, with no capabilities, and with no engine
    # socket in reach
    assert int(lines[0]) in uids_of(sandbox), result
    assert "0000000000000000" in lines
    assert lines[-1] == "NOSOCK"


def test_go_reads_the_engine_socket_path(sandbox: Sandbox, runtime: str) -> None:
    code = """
        package main

        import (
            "fmt"
            "os"
        )

        func main() {
            _, err := os.ReadFile("/var/run/docker.sock")
            fmt.Println(os.IsNotExist(err))
        }
    """
    assert run_caught(sandbox, runtime, code, "go").stdout == "true\n"
