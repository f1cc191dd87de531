"""The risk picks the runtime (run/routing.py, `assess.runtime_for`): the pipeline's logic with
an in-memory backend. On the engine: tests/execution/test_routing_engine.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hazmat import Outcome, Policy, PolicyError, Runtime, Sandbox, parse_policy
from hazmat.backends.base import Job
from hazmat.testing import RecordingBackend, audit_records

HIGH = "import subprocess\nprint(1)"  # assessed HIGH: starts other programs
LOW = "print(1)"
MEDIUM = "import urllib.request\nprint(1)"  # assessed MEDIUM: the network's library
BLOCKED = "import ctypes\nprint(1)"  # assessed BLOCKED: foreign functions
MEDIUM_AND_ABOVE = {"trust": {"trusted": {"assess": {"runtime_for": {"medium": "runsc"}}}}}


@pytest.fixture(autouse=True)
def own_audit_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test's records alone (`audit_records` reads the whole log)."""
    monkeypatch.setenv("HAZMAT_AUDIT_DIR", str(tmp_path / "audit"))


def run(policy: Policy, code: str, **options: Any) -> tuple[Any, RecordingBackend, list[Any]]:
    backend = RecordingBackend()
    with Sandbox(policy, backend=backend) as sandbox:
        result = sandbox.run(code, "python", **options)
        return result, backend, audit_records(sandbox)


def started(records: list[Any]) -> dict[str, Any]:
    return next(data for kind, data in records if kind == "run.started")


def test_high_code_at_a_runc_level_runs_under_gvisor_and_says_why() -> None:
    result, backend, records = run(Policy(), HIGH, trust="trusted")
    assert Policy().settings("trusted").runtime is Runtime.RUNC  # the level asks runc
    assert [job.runtime for job in backend.jobs] == [Runtime.RUNSC]
    assert result.runtime is Runtime.RUNSC and result.assessment.level.value == "HIGH"
    why = "assessed HIGH: policy trust.trusted.assess.runtime_for.high asks runsc (asked: runc)"
    assert result.runtime_reason == why and why in result.notes
    assert result.to_dict()["runtime_reason"] == why
    record = started(records)
    assert record["runtime"] == "runsc" and record["runtime_reason"] == why


def test_low_code_keeps_the_levels_runc() -> None:
    result, backend, records = run(Policy(), LOW, trust="trusted")
    assert [job.runtime for job in backend.jobs] == [Runtime.RUNC]
    assert result.runtime is Runtime.RUNC and result.runtime_reason is None
    assert "runtime_reason" not in started(records)


def test_a_runtime_is_only_raised_never_lowered() -> None:
    asked = run(Policy(), LOW, trust="trusted", runtime="runsc")[0]  # the caller's runsc
    assert asked.runtime is Runtime.RUNSC and asked.runtime_reason is None
    level = run(Policy(), LOW, trust="untrusted")[0]  # the level's runsc
    assert level.runtime is Runtime.RUNSC and level.runtime_reason is None
    # a caller asking runc for HIGH code gets runsc all the same
    forced = run(Policy(), HIGH, trust="trusted", runtime="runc")[0]
    assert forced.runtime is Runtime.RUNSC and forced.runtime_reason is not None


def test_an_entry_covers_its_level_and_every_level_above() -> None:
    policy = parse_policy(MEDIUM_AND_ABOVE)
    high = run(policy, HIGH, trust="trusted")[0]
    assert high.runtime is Runtime.RUNSC
    assert "runtime_for.medium asks runsc" in (high.runtime_reason or "")
    low = run(policy, LOW, trust="trusted")[0]
    assert low.runtime is Runtime.RUNC  # below the entry: the level's own


def test_medium_code_is_routed_by_a_medium_entry() -> None:
    policy = parse_policy(MEDIUM_AND_ABOVE)
    result, backend, _ = run(policy, MEDIUM, trust="trusted")
    assert result.assessment.level.value == "MEDIUM"
    assert [job.runtime for job in backend.jobs] == [Runtime.RUNSC]
    assert run(Policy(), MEDIUM, trust="trusted")[0].runtime is Runtime.RUNC  # the default


def test_blocked_code_run_on_an_override_is_routed_like_high() -> None:
    result, backend, _ = run(
        Policy(),
        BLOCKED,
        trust="trusted",
        override_reason="the test of the routing of blocked code",
    )
    assert result.assessment.level.value == "BLOCKED" and result.decision == "override"
    assert [job.runtime for job in backend.jobs] == [Runtime.RUNSC]
    assert "runtime_for.high asks runsc" in (result.runtime_reason or "")


def test_an_empty_runtime_for_turns_the_routing_off() -> None:
    policy = parse_policy({"trust": {"trusted": {"assess": {"runtime_for": {}}}}})
    result, backend, _ = run(policy, HIGH, trust="trusted")
    assert [job.runtime for job in backend.jobs] == [Runtime.RUNC]
    assert result.runtime_reason is None
    other = run(policy, HIGH, trust="unknown")[0]  # another level keeps the default
    assert other.runtime is Runtime.RUNSC


def test_what_was_prepared_under_the_weaker_runtime_is_not_used() -> None:
    """A cold backend starts the job's container while the code is assessed (`prepare`); a
    routed run is a new job, so that container (under runc) never gets the program."""

    class Preparing(RecordingBackend):
        def __init__(self) -> None:
            super().__init__()
            self.prepared: list[Job] = []

        def prepare(self, job: Job) -> None:
            self.prepared.append(job)

    backend = Preparing()
    with Sandbox(Policy(), backend=backend) as sandbox:
        sandbox.run(HIGH, "python", trust="trusted")
    [prepared], [ran] = backend.prepared, backend.jobs
    assert prepared.runtime is Runtime.RUNC and ran.runtime is Runtime.RUNSC
    assert ran.program.nonce != prepared.program.nonce  # prepare's container is keyed by it


def test_a_session_at_runc_refuses_a_call_that_needs_gvisor() -> None:
    backend = RecordingBackend()
    with Sandbox(Policy(), backend=backend) as sandbox:
        with sandbox.session("python", trust="trusted") as session:
            fine = session.run(LOW)
            refused = session.run(HIGH)
            after = session.run("print(2)")
        records = audit_records(sandbox)
    [kept] = backend.kept
    assert kept.spec.runtime is Runtime.RUNC
    assert fine.outcome is Outcome.OK and after.outcome is Outcome.OK  # the session goes on
    assert refused.outcome is Outcome.BLOCKED and refused.runtime is Runtime.RUNC
    assert refused.error is not None
    assert "this session's container runs under runc" in refused.error
    assert "Open the session with runtime 'runsc'" in refused.error
    assert refused.runtime_reason is not None and "asks runsc" in refused.runtime_reason
    assert [job.program.files["main.py"] for _, job in kept.calls] == [b"print(1)", b"print(2)"]
    blocked = [data for kind, data in records if kind == "run.blocked"]
    assert len(blocked) == 1 and blocked[0]["runtime_reason"] == refused.runtime_reason
    assert blocked[0]["decision"] == "block"


def test_a_session_under_gvisor_runs_high_code() -> None:
    backend = RecordingBackend()
    with (
        Sandbox(Policy(), backend=backend) as sandbox,
        sandbox.session("python", trust="trusted", runtime="runsc") as session,
    ):
        result = session.run(HIGH)
    assert result.outcome is Outcome.OK and result.runtime_reason is None


@pytest.mark.parametrize(
    ("assess", "message"),
    [
        (
            {"runtime_for": {"blocked": "runsc"}},
            "trust.trusted.assess.runtime_for.blocked: unknown key",
        ),
        (
            {"runtime_for": {"high": "kata"}},
            "trust.trusted.assess.runtime_for.high: unknown runtime 'kata'",
        ),
        (
            {"runtime_for": ["runsc"]},
            "trust.trusted.assess.runtime_for: expected a mapping, got list",
        ),
        ({"runtime_for": {"high": True}}, "trust.trusted.assess.runtime_for.high: unknown runtime"),
    ],
)
def test_a_wrong_runtime_for_names_its_key(assess: dict[str, Any], message: str) -> None:
    with pytest.raises(PolicyError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_policy({"trust": {"trusted": {"assess": assess}}}, source="p.yaml")


def test_a_null_runtime_for_is_an_empty_one() -> None:
    policy = parse_policy({"trust": {"trusted": {"assess": {"runtime_for": None}}}})
    assert dict(policy.settings("trusted").assess.runtime_for) == {}


def test_doctor_says_when_risky_code_is_routed_to_a_runtime_the_engine_lacks() -> None:
    from hazmat.cli.doctor import _policy_runtimes

    runc_only = frozenset({"runc"})
    all_runc = parse_policy({"trust": {"untrusted": {"runtime": "runc"}}})
    check = _policy_runtimes(all_runc, runc_only)
    assert not check.ok
    assert "routed to a runtime the engine lacks at trusted (high code), unknown (high code)" in (
        check.detail
    )
    assert "runtime_for: {}" in check.fix
    off = {
        level: {"runtime": "runc", "assess": {"runtime_for": {}}}
        for level in ("untrusted", "unknown", "trusted")
    }
    assert _policy_runtimes(parse_policy({"trust": off}), runc_only).ok
    assert _policy_runtimes(all_runc, frozenset({"runc", "runsc"})).ok
