"""A request is checked once (hazmat/run/intake.py): the check's answer travels with it, and no
later stage checks it or resolves its image again."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hazmat import InputError, Policy, Sandbox
from hazmat.audit.log import AuditLog
from hazmat.backends.base import Job, KeptBackend, RunReport, Spec
from hazmat.languages import get_language
from hazmat.models import ExecutionRequest
from hazmat.policy import TrustLevel
from hazmat.run import intake
from hazmat.run.image_choice import default_image
from hazmat.testing import RecordingBackend


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


class KeptRecorder(KeptBackend):
    """A session's kept container, recorded (the recording backend keeps none)."""

    def __init__(self) -> None:
        self.inner = RecordingBackend()

    @property
    def container_id(self) -> str | None:
        return "kept"

    def call(self, job: Job, mode: str) -> RunReport:
        return self.inner.execute(job)

    def execute(self, job: Job) -> RunReport:
        return self.call(job, "run")

    def end(self, why: str, now: bool = False) -> None:
        self.ended = self.ended or why


class Keeping(RecordingBackend):
    def keep(self, spec: Spec, lifetime_s: float) -> KeptBackend:
        return KeptRecorder()


def test_a_session_call_is_checked_once(tmp_path: Path, checks: list[ExecutionRequest]) -> None:
    with (
        Sandbox(Policy(), backend=Keeping(), audit=AuditLog(tmp_path)) as sandbox,
        sandbox.session("python") as session,
    ):
        assert session.run("x = 1").ok
    assert len(checks) == 1


def test_a_request_built_by_hand_is_checked_when_it_runs(
    sandbox: Sandbox, checks: list[ExecutionRequest]
) -> None:
    request = ExecutionRequest("print(1)", "python", TrustLevel.UNTRUSTED, timeout_s=3600)
    with pytest.raises(InputError, match="at most 15 s"):
        sandbox.execute(request)
    assert checks == [request]


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
