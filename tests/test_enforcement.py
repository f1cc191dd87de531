"""Every run is assessed, and the policy's decision is enforced. In-memory backend; the
assessor is real (its worker process)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hazmat import InputError, Outcome, Policy, RiskLevel, Sandbox, parse_policy
from hazmat.assess.semgrep import Semgrep
from hazmat.audit.log import AuditLog
from hazmat.testing import RecordingBackend, audit_records

ESCAPE = "().__class__.__base__.__subclasses__()"
REASON = "reviewed by hand: a test of the override path"


def test_blocked_code_never_reaches_the_backend(tmp_path: Path) -> None:
    backend = RecordingBackend()
    with Sandbox(Policy(), backend=backend, audit=AuditLog(tmp_path)) as sandbox:
        result = sandbox.run(ESCAPE)
    assert backend.jobs == []
    assert result.outcome is Outcome.BLOCKED and result.decision == "block"
    assert result.assessment is not None and result.assessment.level is RiskLevel.BLOCKED
    assert "__subclasses__" in (result.error or "") and "override" in (result.error or "")
    kinds = [kind for kind, _ in audit_records(sandbox)]
    assert "run.blocked" in kinds and "run.started" not in kinds
    data = next(d for kind, d in audit_records(sandbox) if kind == "run.blocked")
    assert data["assessment"]["level"] == "BLOCKED" and data["decision"] == "block"
    assert data["code"] == ESCAPE


def test_an_override_with_a_reason_runs_and_is_recorded(tmp_path: Path) -> None:
    backend = RecordingBackend()
    with Sandbox(Policy(), backend=backend, audit=AuditLog(tmp_path)) as sandbox:
        result = sandbox.run(ESCAPE, override_reason=f"  {REASON}  ")
    assert len(backend.jobs) == 1 and result.outcome is Outcome.OK
    assert result.decision == "override" and result.override_reason == REASON
    assert any("BLOCKED" in note for note in result.notes)
    started = next(d for kind, d in audit_records(sandbox) if kind == "run.started")
    assert started["override_reason"] == REASON
    assert started["decision"] == "override"


@pytest.mark.parametrize("reason", ["", "ok", "because      "])
def test_an_override_needs_a_written_reason(reason: str) -> None:
    backend = RecordingBackend()
    with (
        Sandbox(Policy(), backend=backend) as sandbox,
        pytest.raises(InputError, match="at least 20 characters"),
    ):
        sandbox.run(ESCAPE, override_reason=reason)
    assert backend.jobs == []


def test_the_policy_decides_per_trust_level() -> None:
    policy = parse_policy(
        {
            "trust": {
                "untrusted": {"assess": {"high": "block", "override_min_chars": 5}},
                "trusted": {"assess": {"medium": "warn"}},
            }
        }
    )
    backend = RecordingBackend()
    with Sandbox(policy, backend=backend) as sandbox:
        high = sandbox.run("import subprocess", trust="untrusted")
        assert high.outcome is Outcome.BLOCKED and high.assessment is not None
        assert high.assessment.level is RiskLevel.HIGH
        forced = sandbox.run("import subprocess", trust="untrusted", override_reason="tests")
        assert forced.decision == "override"
        warned = sandbox.run("import pickle", trust="trusted")
        assert warned.decision == "warn" and any("MEDIUM" in n for n in warned.notes)
        plain = sandbox.run("print(1)", trust="trusted")
        assert plain.decision == "run" and plain.notes == ()
    assert len(backend.jobs) == 3


def test_blocked_always_blocks_whatever_the_trust_level() -> None:
    backend = RecordingBackend()
    with Sandbox(Policy(), backend=backend) as sandbox:
        for trust in ("untrusted", "unknown", "trusted"):
            assert sandbox.run(ESCAPE, trust=trust).outcome is Outcome.BLOCKED
    assert backend.jobs == []


def test_every_result_carries_its_assessment() -> None:
    with Sandbox(Policy(), backend=RecordingBackend()) as sandbox:
        data = sandbox.run("import os\nos.system('id')").to_dict()
    assert data["assessment"]["level"] == "HIGH" and data["decision"] == "warn"
    assert {"rule", "source", "severity", "line", "message"} <= set(
        data["assessment"]["findings"][0]
    )


def test_semgrep_sync_is_part_of_the_verdict(tmp_path: Path) -> None:
    policy = parse_policy({"trust": {"untrusted": {"assess": {"semgrep": "sync"}}}})
    with Sandbox(policy, backend=RecordingBackend(), audit=AuditLog(tmp_path)) as sandbox:
        result = sandbox.run("import os\nos.system('id')\n")
    assert result.assessment is not None
    assert "semgrep" in result.assessment.analyzers
    assert any(f.source == "semgrep" for f in result.assessment.findings)


def test_semgrep_async_records_its_findings_after_the_run(tmp_path: Path) -> None:
    policy = parse_policy({"trust": {"untrusted": {"assess": {"semgrep": "async"}}}})
    semgrep = Semgrep(cache_dir=tmp_path / "cache")
    from hazmat.assess.assessor import Assessor

    with Assessor(semgrep=semgrep) as assessor:
        backend = RecordingBackend()
        sandbox = Sandbox(policy, backend=backend, audit=AuditLog(tmp_path), assessor=assessor)
        result = sandbox.run("import os\nos.system('id')\n")
        assert result.assessment is not None and "semgrep" not in result.assessment.analyzers
        sandbox.close()  # waits for the scan
    late = [d for kind, d in audit_records(sandbox) if kind == "assess.semgrep"]
    assert len(late) == 1
    data = late[0]
    assert data["problem"] is None
    assert data["level_before"] == "HIGH" and data["level_after"] == "HIGH"
    assert {f["rule"] for f in data["findings"]} == {"py-shell-command"}
    started = next(d for kind, d in audit_records(sandbox) if kind == "run.started")
    assert data["run"] == started["run"]


def test_a_broken_assessor_does_not_let_code_through_as_low(tmp_path: Path) -> None:
    from hazmat.assess.assessor import Assessor

    with Assessor(timeout_s=0.000_001) as assessor:
        sandbox = Sandbox(Policy(), backend=RecordingBackend(), assessor=assessor)
        result = sandbox.run("print(1)")
        sandbox.close()
    assert result.assessment is not None and not result.assessment.complete
    assert result.assessment.level is RiskLevel.HIGH and result.decision == "warn"


def test_execute_checks_the_reason_of_a_request_built_by_hand() -> None:
    import dataclasses

    backend = RecordingBackend()
    with Sandbox(Policy(), backend=backend) as sandbox:
        forged = dataclasses.replace(sandbox.request(ESCAPE), override_reason="x")
        with pytest.raises(InputError, match="at least 20 characters"):
            sandbox.execute(forged)
    assert backend.jobs == []
