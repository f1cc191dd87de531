"""The one codec for runs on the wire (hazmat/service/wire.py): what the client sends, the
service and a cluster worker read, and the result every front-end answers with, decoded back
exactly."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from hazmat import InfraError, InputError, Policy, Sandbox
from hazmat.audit.log import AuditLog
from hazmat.languages import get_language
from hazmat.models import (
    Assessment,
    ExecutionRequest,
    ExecutionResult,
    Finding,
    Outcome,
    ProgramException,
    RiskLevel,
    Severity,
)
from hazmat.policy import Runtime, TrustLevel
from hazmat.service.wire import (
    options_from_wire,
    options_to_wire,
    request_from_wire,
    request_to_wire,
    result_from_wire,
    result_to_wire,
)
from hazmat.testing import RecordingBackend


def through_json(data: dict[str, Any]) -> dict[str, Any]:
    decoded: dict[str, Any] = json.loads(json.dumps(data))
    return decoded


def test_a_request_survives_the_queue_byte_for_byte() -> None:
    request = ExecutionRequest(
        "print(1)",
        "python",
        TrustLevel.UNKNOWN,
        stdin=b"\xff\x00",
        files={"data/in.bin": b"\x01\x02"},
        output_files=("out.txt",),
        timeout_s=3.5,
        memory_mb=128,
        runtime=Runtime.RUNSC,
        env={"A": "é"},
        args=("--x", "y z"),
        caller="tenant:acme key:1",
        script="s",
        network=("files.example.org",),
        origin={"run": "r1", "worker": "w1", "attempt": 2},
    )
    code, language, options = request_from_wire(through_json(request_to_wire(request)))
    assert (code, language) == ("print(1)", "python")
    assert options == {
        "trust": "unknown",
        "stdin": b"\xff\x00",
        "files": {"data/in.bin": b"\x01\x02"},
        "output_files": ["out.txt"],
        "timeout": 3.5,
        "memory_mb": 128,
        "runtime": "runsc",
        "env": {"A": "é"},
        "args": ["--x", "y z"],
        "caller": "tenant:acme key:1",
        "script": "s",
        "network": ["files.example.org"],
        "origin": {"run": "r1", "worker": "w1", "attempt": 2},
    }


def test_no_hosts_at_all_is_not_the_levels_hosts() -> None:
    request = ExecutionRequest("print(1)", "python", TrustLevel.UNTRUSTED, network=())
    assert request_from_wire(request_to_wire(request))[2]["network"] == []
    unset = ExecutionRequest("print(1)", "python", TrustLevel.UNTRUSTED)
    assert "network" not in request_from_wire(request_to_wire(unset))[2]


def test_a_rebuilt_request_is_the_request(tmp_path: Path) -> None:
    with Sandbox(Policy(), backend=RecordingBackend(), audit=AuditLog(tmp_path)) as sandbox:
        original = sandbox.request(
            "print(1)", "python", stdin=b"\x00\xff", files={"a.bin": b"\x01"}, args=["x"]
        )
        code, language, options = request_from_wire(through_json(request_to_wire(original)))
        assert sandbox.request(code, language, **options) == original


def test_the_client_body_is_what_the_service_reads() -> None:
    options = {"stdin": b"\xff", "files": {"t.txt": "é", "b.bin": b"\x00"}, "timeout": 2.0}
    body = options_to_wire(b"print(1)", "python", {**options, "env": {}, "args": None})
    assert "stdin" not in body and "env" not in body and "args" not in body
    code, language, decoded = options_from_wire(through_json(body))
    assert (code, language) == ("print(1)", "python")
    assert decoded == {
        "stdin": b"\xff",
        "files": {"t.txt": b"\xc3\xa9", "b.bin": b"\x00"},
        "timeout": 2.0,
    }


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"code": "x", "stdin_base64": "not base64!"}, "stdin_base64"),
        ({"code": "x", "stdin_base64": 3}, "stdin_base64"),
        ({"code": "x", "files_base64": "x"}, "files_base64"),
        ({"code": "x", "files_base64": {"a": "%%"}}, "files_base64.a"),
        ({"code": "x", "files": 3, "files_base64": {}}, "files"),
        ({"code": "x", "stdin": "a", "stdin_base64": "YQ=="}, "stdin"),
        ({"code": "x", "language": 3}, "language"),
        ({"language": "python"}, "code"),
        ({"code": "x", "caller": "me"}, "caller"),  # only hazmat's own processes say who asked
        ({"code": "x", "origin": {}}, "origin"),
    ],
)
def test_a_malformed_body_is_an_input_error_naming_the_field(
    body: dict[str, Any], field: str
) -> None:
    with pytest.raises(InputError, match=f"'{field}'"):
        options_from_wire(body)


@pytest.mark.parametrize(
    "change", [{"trust": "root"}, {"runtime": "kvm"}, {"env": 3}, {"origin": "x"}]
)
def test_a_malformed_message_is_refused_by_the_intake(
    change: dict[str, Any], tmp_path: Path
) -> None:
    wire = request_to_wire(ExecutionRequest("print(1)", "python", TrustLevel.UNTRUSTED))
    code, language, options = request_from_wire({**wire, **change})
    with (
        Sandbox(Policy(), backend=RecordingBackend(), audit=AuditLog(tmp_path)) as sandbox,
        pytest.raises(InputError),
    ):
        sandbox.request(code, language, **options)


def full_result() -> ExecutionResult:
    finding = Finding("eval", "python-ast", Severity.HIGH, "eval()", line=2, column=4, cwe=95)
    assessment = Assessment(
        RiskLevel.HIGH, 40, True, (finding,), 1.5, "python", analyzers=("python-ast",)
    )
    return ExecutionResult(
        outcome=Outcome.ERROR,
        exit_code=3,
        stdout="a\ufffd",
        stderr="boom\n",
        truncated=False,
        duration_ms=12.345,
        limits=Policy().settings(TrustLevel.UNTRUSTED).limits,
        runtime=Runtime.RUNSC,
        image=get_language("python").image,  # any image name: no engine here
        language="python",
        trust=TrustLevel.UNTRUSTED,
        container_id="c1",
        files={"out.bin": b"\x00\xff"},
        error="the program exited with status 3",
        notes=("a note",),
        stdout_bytes=b"a\xff",
        stderr_bytes=b"boom\n",
        assessment=assessment,
        decision="warn",
        override_reason=None,
        peak_memory_bytes=1024,
        cpu_time_ms=3.25,
        pooled=True,
        settings_mismatch=("x",),
        compile_ms=None,
        connections=({"host": "h", "port": 443, "allowed": False},),
        displays=(
            {"image/png": b"\x89PNG\r\n\x1a\n\x00", "text/plain": "<Figure>"},
            {"text/html": "<table/>"},
        ),
        exception=ProgramException("ValueError", "bad", 'Traceback ...\n  File "/work/main.py"'),
    )


def test_a_result_comes_back_exactly() -> None:
    result = full_result()
    assert result_from_wire(through_json(result_to_wire(result, exact=True))) == result


def test_without_exact_the_bytes_are_the_texts() -> None:
    result = full_result()
    back = result_from_wire(through_json(result_to_wire(result)))
    assert back.stdout_bytes == "a\ufffd".encode() and back.stdout == result.stdout
    assert back == dataclasses.replace(result, stdout_bytes="a\ufffd".encode())
    assert back.exit_status == result.exit_status == 3


def test_a_result_with_a_display_it_cannot_read_is_an_infra_error() -> None:
    body = result_to_wire(full_result())
    body["displays"] = [{"image/png": "%% not base64"}]
    with pytest.raises(InfraError, match=r"malformed result: .*displays\[0\]"):
        result_from_wire(body)


def test_a_result_with_an_exception_it_cannot_read_is_an_infra_error() -> None:
    body = result_to_wire(full_result())
    body["exception"] = "ValueError"
    with pytest.raises(InfraError, match=r"malformed result: .*exception"):
        result_from_wire(body)


@pytest.mark.parametrize("drop", ["outcome", "limits", "stdout"])
def test_a_malformed_result_is_an_infra_error(drop: str) -> None:
    """The other side (a service, a worker) answered what this hazmat cannot read."""
    body = result_to_wire(full_result())
    del body[drop]
    with pytest.raises(InfraError, match="malformed result"):
        result_from_wire(body)


def test_a_result_with_limits_this_version_does_not_know_is_read() -> None:
    body = result_to_wire(full_result(), exact=True)
    body["limits"] = {**body["limits"], "gpus": 1}
    body["new_field"] = "from a newer hazmat"
    assert result_from_wire(body) == full_result()


def test_limits_out_of_bounds_are_an_infra_error_not_a_policy_error() -> None:
    body = result_to_wire(full_result())
    body["limits"] = {**body["limits"], "memory_mb": -1}
    with pytest.raises(InfraError, match="malformed result"):
        result_from_wire(body)


@pytest.mark.parametrize("version", [None, 0, 2, "1"])
def test_a_message_of_another_wire_version_is_refused(version: object) -> None:
    wire = request_to_wire(ExecutionRequest("print(1)", "python", TrustLevel.UNTRUSTED))
    wire["wire"] = version
    if version is None:
        del wire["wire"]
    with pytest.raises(InputError, match="run the same hazmat version"):
        request_from_wire(wire)
