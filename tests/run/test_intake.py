"""A request is checked once (hazmat/run/intake.py): the check's answer travels with it, and no
later stage checks it or resolves its image again."""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import hazmat
from hazmat import InputError, Policy, Sandbox
from hazmat.audit.log import AuditLog
from hazmat.languages import get_language
from hazmat.models import ExecutionRequest
from hazmat.policy import TrustLevel
from hazmat.run import intake
from hazmat.run.image_choice import default_image
from hazmat.testing import RecordingBackend, audit_records


@pytest.fixture
def checks(monkeypatch: pytest.MonkeyPatch) -> list[ExecutionRequest]:
    """Every request the intake really checks (not answered from an earlier check)."""
    seen: list[ExecutionRequest] = []
    real = intake._check

    def counting(policy: Policy, request: ExecutionRequest) -> Any:
        seen.append(request)
        return real(policy, request)

    monkeypatch.setattr(intake, "_check", counting)
    return seen


@pytest.fixture
def sandbox(tmp_path: Path) -> Iterator[Sandbox]:
    with Sandbox(Policy(), backend=RecordingBackend(), audit=AuditLog(tmp_path)) as sandbox:
        yield sandbox


REASON = "a reviewer read this code and it is fine"


def test_a_run_is_checked_once(sandbox: Sandbox, checks: list[ExecutionRequest]) -> None:
    sandbox.run("print(1)", override_reason=REASON)
    assert len(checks) == 1


def test_request_then_execute_is_checked_once(
    sandbox: Sandbox, checks: list[ExecutionRequest]
) -> None:
    request = sandbox.request("print(1)", stdin=b"x")
    result = sandbox.execute(request)
    assert result.ok and len(checks) == 1


def test_a_session_call_is_checked_once(tmp_path: Path, checks: list[ExecutionRequest]) -> None:
    with (
        Sandbox(Policy(), backend=RecordingBackend(), audit=AuditLog(tmp_path)) as sandbox,
        sandbox.session("python") as session,
    ):
        assert session.run("x = 1").ok
    assert len(checks) == 1


def test_a_request_built_by_hand_is_checked_each_time_it_runs(
    sandbox: Sandbox, checks: list[ExecutionRequest]
) -> None:
    """Its maker holds its dicts and lists and may change them between runs: a file added
    after the first run, over the size limit, is refused at the second."""
    files: dict[str, bytes] = {}
    request = ExecutionRequest("print(1)", "python", TrustLevel.UNTRUSTED, files=files)
    assert sandbox.execute(request).ok
    files["big.bin"] = b"x" * (
        sandbox.policy.settings(TrustLevel.UNTRUSTED).limits.max_file_bytes + 1
    )
    with pytest.raises(InputError, match=re.escape("big.bin")):
        sandbox.execute(request)
    assert checks == [request, request]


def test_an_over_the_limit_request_built_by_hand_is_refused(
    sandbox: Sandbox, checks: list[ExecutionRequest]
) -> None:
    request = ExecutionRequest("print(1)", "python", TrustLevel.UNTRUSTED, timeout_s=3600)
    with pytest.raises(InputError, match="at most 15 s"):
        sandbox.execute(request)
    assert checks == [request]


def test_a_built_request_holds_no_container_of_its_makers(sandbox: Sandbox) -> None:
    """What `admit` keeps its check with cannot be changed by whoever passed the
    options: read-only mappings and tuples, copied."""
    files, env, args, network = {"a.txt": "x"}, {"A": "1"}, ["x"], []
    request = sandbox.request("print(1)", files=files, env=env, args=args, network=network)
    files["b.txt"] = "y"
    env["B"] = "2"
    args.append("y")
    network.append("h")
    assert dict(request.files) == {"a.txt": b"x"} and dict(request.env) == {"A": "1"}
    assert request.args == ("x",) and request.network == ()
    with pytest.raises(TypeError):
        request.files["c.txt"] = b"z"  # type: ignore[index]


def test_a_changed_request_is_checked_again(
    sandbox: Sandbox, checks: list[ExecutionRequest]
) -> None:
    """`dataclasses.replace` drops the check: a request changed after its check (a longer
    timeout) is refused, never run on the old answer."""
    request = sandbox.request("print(1)")
    longer = dataclasses.replace(request, timeout_s=3600)
    assert longer.checked is None
    with pytest.raises(InputError, match="at most 15 s"):
        sandbox.execute(longer)
    assert len(checks) == 2


def test_another_policy_checks_again(tmp_path: Path, checks: list[ExecutionRequest]) -> None:
    """A check holds for the very policy it was made against: another sandbox's policy, even
    an equal one, checks the request again."""
    backend = RecordingBackend()
    with Sandbox(Policy(), backend=backend, audit=AuditLog(tmp_path / "a")) as first:
        request = first.request("print(1)")
    with Sandbox(Policy(), backend=backend, audit=AuditLog(tmp_path / "b")) as second:
        assert second.execute(request).ok
    assert len(checks) == 2


def test_the_check_says_what_the_run_gets(sandbox: Sandbox) -> None:
    request = sandbox.request("print(1)", override_reason="  " + REASON + "  ", timeout=5)
    checked = intake.check_request(sandbox.policy, request)
    assert checked.override_reason == REASON
    assert checked.limits.timeout_s == 5
    level = TrustLevel.UNTRUSTED
    assert checked.image == default_image(sandbox.policy, level, get_language("python"))
    assert checked.runtime is sandbox.policy.settings(level).runtime
    assert checked.network == ()


@pytest.mark.parametrize(
    ("origin", "problem"),
    [
        ({"run": object()}, "must be str or int"),
        ({"attempt": True}, "must be str or int"),
        ({"run": "x" * 257}, "over 256 characters"),
        ({str(n): n for n in range(9)}, "at most 8"),
        ({"": "x"}, "short strings"),
    ],
)
def test_an_origin_is_a_few_short_names_and_values(
    sandbox: Sandbox, origin: dict[str, Any], problem: str
) -> None:
    with pytest.raises(InputError, match=problem):
        sandbox.request("print(1)", origin=origin)


def test_an_origin_is_recorded_with_the_run(sandbox: Sandbox) -> None:
    origin = {"run": "r1", "worker": "w1", "attempt": 2}
    sandbox.run("print(1)", origin=origin)
    started = [data for kind, data in audit_records(sandbox) if kind == "run.started"]
    assert started[-1]["origin"] == origin


def test_admission_needs_no_engine_and_names_what_is_wrong() -> None:
    """`hazmat.admit`: the policy alone checks a request (in a fresh interpreter: neither the
    engine's client nor the audit log is even imported)."""
    code = (
        "import sys, hazmat\n"
        "request = hazmat.admit(hazmat.Policy(), 'print(1)', 'python', output_bytes=4096)\n"
        "print(request.checked.limits.output_bytes, request.checked.image)\n"
        "print(sorted(m for m in ('docker', 'hazmat.audit.log') if m in sys.modules))\n"
    )
    answer = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    limit, image = answer.stdout.split("\n")[0].split()
    assert limit == "4096" and image
    assert answer.stdout.split("\n")[1] == "[]"
    with pytest.raises(InputError, match="unknown option 'timout'; did you mean 'timeout'"):
        hazmat.admit(hazmat.Policy(), "print(1)", timout=2)
