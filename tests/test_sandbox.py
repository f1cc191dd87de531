"""The pipeline's own logic, with an in-memory backend. Execution itself is tested on Docker."""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path

import pytest

from hazmat import (
    EngineUnavailable,
    InputError,
    InputTooLarge,
    Outcome,
    Policy,
    Runtime,
    Sandbox,
    UnknownLanguage,
    UnsafeFileName,
    parse_policy,
)
from hazmat.policy import HostResources
from hazmat.run.results import derive_outcome
from hazmat.testing import RecordingBackend, audit_records, report


@pytest.mark.parametrize(
    ("facts", "outcome"),
    [
        ({}, Outcome.OK),
        ({"exit_code": 1}, Outcome.ERROR),
        ({"exit_code": 137}, Outcome.ERROR),
        ({"exit_code": 137, "oom_killed": True}, Outcome.MEMORY_LIMIT),
        ({"exit_code": None, "oom_killed": True}, Outcome.MEMORY_LIMIT),
        ({"exit_code": 0, "oom_killed": True}, Outcome.OK),  # a child was killed, not it
        ({"exit_code": 1, "oom_killed": True}, Outcome.ERROR),
        ({"exit_code": 137, "timed_out": True, "oom_killed": True}, Outcome.TIMEOUT),
        ({"exit_code": 0, "output_exceeded": True}, Outcome.OUTPUT_LIMIT),
    ],
)
def test_outcome_is_derived_from_the_facts(facts: dict[str, object], outcome: Outcome) -> None:
    assert derive_outcome(report(**facts)) is outcome


def test_run_resolves_the_job_from_the_policy() -> None:
    policy = parse_policy(
        {
            "trust": {"trusted": {"runtime": "runsc", "memory_mb": 1024}},
            "images": {"python": "python:3.12-slim"},
        }
    )
    backend = RecordingBackend()
    with Sandbox(policy, backend=backend) as sandbox:
        result = sandbox.run(
            "print('hi')",
            "py",
            trust="trusted",
            stdin="in",
            files={"d.txt": "data"},
            output_files=["o.txt"],
        )
    job = backend.jobs[0]
    assert (job.image, job.runtime, job.limits.memory_mb) == (
        "python:3.12-slim",
        Runtime.RUNSC,
        1024,
    )
    assert dict(job.program.files) == {"main.py": b"print('hi')", "d.txt": b"data"}
    assert (job.program.stdin, list(job.program.want)) == (b"in", ["o.txt"])
    assert result.outcome is Outcome.OK and result.stdout == "hi\n"
    assert result.limits == job.limits and result.runtime is Runtime.RUNSC
    assert backend.closed


def test_caller_overrides_and_host_clamping_are_reported() -> None:
    backend = RecordingBackend(host=HostResources(cpus=1, memory_mb=1024))
    policy = parse_policy({"trust": {"trusted": {"memory_mb": 4096}}})
    result = Sandbox(policy, backend=backend).run(
        "x=1", trust="trusted", timeout=2.5, memory_mb=4096
    )
    assert result.limits.timeout_s == 2.5
    assert result.limits.memory_mb == 512  # half of the host's 1024 MB
    assert any("memory lowered from 4096 MB to 512 MB" in n for n in result.notes)


@pytest.mark.parametrize(
    ("trust", "options", "says"),
    [
        (
            "untrusted",
            {"timeout": 15.5},
            "timeout 15.5 s is over the limit of trust level "
            "'untrusted': at most 15 s (policy key trust.untrusted.timeout_s)",
        ),
        (
            "untrusted",
            {"memory_mb": 257},
            "memory_mb 257 MB is over the limit of trust level "
            "'untrusted': at most 256 MB (policy key trust.untrusted.memory_mb)",
        ),
        (
            "trusted",
            {"timeout": 60},
            "timeout 60 s is over the limit of trust level 'trusted': "
            "at most 30 s (policy key trust.trusted.timeout_s)",
        ),
    ],
)
def test_a_caller_cannot_raise_its_levels_limits(
    trust: str, options: dict[str, float], says: str
) -> None:
    backend = RecordingBackend()
    with Sandbox(Policy(), backend=backend) as sandbox:
        with pytest.raises(InputError) as refused:
            sandbox.run("x=1", trust=trust, **options)
        lower = sandbox.run("x=1", trust=trust, timeout=1, memory_mb=64)  # less is fine
    assert str(refused.value) == says
    assert backend.jobs and lower.limits.timeout_s == 1 and lower.limits.memory_mb == 64


def test_infrastructure_failure_is_a_result_not_an_exception() -> None:
    backend = RecordingBackend(error=EngineUnavailable("engine gone"))
    result = Sandbox(Policy(), backend=backend).run("print(1)")
    assert result.outcome is Outcome.INFRA_ERROR
    assert result.error == "engine gone" and result.exit_code is None


def test_invalid_output_is_decoded_with_replacement_but_kept_exactly() -> None:
    raw = b"ok \xff\xfe nul\x00 end"
    backend = RecordingBackend(report(stdout=raw))
    result = Sandbox(Policy(), backend=backend).run("print(1)")
    assert result.stdout == "ok \ufffd\ufffd nul\x00 end"
    assert result.stdout_bytes == raw


@pytest.mark.parametrize(
    ("kwargs", "error", "text"),
    [
        ({"code": ""}, InputError, "empty"),
        ({"code": b"\xff"}, InputError, "UTF-8"),
        ({"code": "x" * (128 * 1024 + 1)}, InputTooLarge, "trust.untrusted.max_code_bytes"),
        ({"language": "cobol"}, UnknownLanguage, "cobol"),
        ({"files": {"../x": "a"}}, UnsafeFileName, "directory reference"),
        ({"files": {"a\x00b": "a"}}, UnsafeFileName, "NUL"),
        ({"files": {"n" * 256: "a"}}, UnsafeFileName, "255 bytes"),
        ({"files": {"main.py": "a"}}, InputError, "taken by the program's source"),
        ({"files": {"big": b"x" * (1024 * 1024 + 1)}}, InputTooLarge, "file 'big'"),
        ({"files": {"big": b"x" * (1024 * 1024 + 1)}}, InputTooLarge, "key trust.untrusted.max"),
        ({"files": {f"f{i}": "" for i in range(17)}}, InputTooLarge, "limit is 16 .policy key"),
        ({"stdin": b"x" * (1024 * 1024 + 1)}, InputTooLarge, "stdin is 1,048,577 bytes"),
        ({"output_files": ["/etc/passwd"]}, UnsafeFileName, "absolute"),
        ({"timeout": 0}, InputError, "positive number of seconds"),
        ({"memory_mb": 1}, InputError, "memory_mb"),
        ({"runtime": "kata"}, InputError, "unknown runtime"),
        ({"trust": "root"}, InputError, "unknown trust level"),
    ],
)
def test_bad_requests_are_refused_before_anything_runs(
    kwargs: dict[str, object], error: type[Exception], text: str
) -> None:
    backend = RecordingBackend()
    call: dict[str, object] = {"code": "print(1)", "language": "python", **kwargs}
    with pytest.raises(error, match=text):
        Sandbox(Policy(), backend=backend).run(**call)  # type: ignore[arg-type]
    assert backend.jobs == []


def test_files_larger_than_the_working_directory_are_refused() -> None:
    policy = parse_policy({"trust": {"untrusted": {"tmpfs_mb": 1, "max_file_bytes": 900_000}}})
    files = {"a": b"x" * 600_000, "b": b"x" * 600_000}
    with pytest.raises(InputTooLarge, match="working directory"):
        Sandbox(policy, backend=RecordingBackend()).run("print(1)", files=files)


def test_arun_gives_the_same_result() -> None:
    backend = RecordingBackend()
    result = asyncio.run(Sandbox(Policy(), backend=backend).arun("print(1)", "python", stdin="x"))
    assert result.outcome is Outcome.OK
    assert backend.jobs[0].program.stdin == b"x"


def test_to_dict_is_json_ready() -> None:
    import json

    backend = RecordingBackend(report(files={"o.bin": b"\x00\x01"}))
    data = Sandbox(Policy(), backend=backend).run("print(1)").to_dict()
    assert json.loads(json.dumps(data))["files"] == {"o.bin": "AAE="}
    assert {
        "outcome",
        "exit_code",
        "stdout",
        "stderr",
        "truncated",
        "duration_ms",
        "limits",
        "runtime",
        "image",
        "container_id",
    } <= set(data)


# --- every run is audited ----------------------------------------------------------------


def test_every_run_is_recorded_started_then_finished(tmp_path: Path) -> None:
    from hazmat.audit.log import AuditLog
    from hazmat.audit.verify import verify_log

    backend = RecordingBackend(report(stdout=b"out", exit_code=3))
    with Sandbox(Policy(), backend=backend, audit=AuditLog(tmp_path)) as sandbox:
        sandbox.run("print(1)", caller="alice", script="s1", stdin="in", files={"d": "x"})
        sandbox.run("print(2)\n", caller="alice", script="s1")  # diffed: the same caller
        runs = [r for r in audit_records(sandbox) if r[0].startswith("run.")]
        sandbox.audit.close()
    assert [kind for kind, _ in runs] == ["run.started", "run.finished"] * 2
    first, done, second = runs[0][1], runs[1][1], runs[2][1]
    assert first["caller"] == "alice" and first["code"] == "print(1)"
    assert first["diff"] is None and "-print(1)" in str(second["diff"])
    assert done["outcome"] == "error" and done["exit_code"] == 3
    assert done["stdout"] == {"bytes": 3, "sha256": hashlib.sha256(b"out").hexdigest()}
    assert first["run"] == done["run"] != second["run"]
    assert verify_log(tmp_path).ok


def test_infrastructure_failures_are_recorded_too(tmp_path: Path) -> None:
    from hazmat.audit.log import AuditLog

    backend = RecordingBackend(error=EngineUnavailable("engine gone"))
    with Sandbox(Policy(), backend=backend, audit=AuditLog(tmp_path)) as sandbox:
        sandbox.run("print(1)")
        kinds = [(k, d.get("outcome")) for k, d in audit_records(sandbox) if k.startswith("run.")]
    assert kinds == [("run.started", None), ("run.finished", "infra_error")]


def test_a_backend_bug_is_a_recorded_result_not_an_exception(tmp_path: Path) -> None:
    """Whatever breaks inside the backend (a parser meeting forged bytes, say), the caller gets
    an infra_error result and the log gets its run.finished."""
    from hazmat.audit.log import AuditLog

    backend = RecordingBackend(error=ValueError("invalid literal for int(): '²'"))
    with Sandbox(Policy(), backend=backend, audit=AuditLog(tmp_path)) as sandbox:
        result = sandbox.run("print(1)")
        kinds = [(k, d.get("outcome")) for k, d in audit_records(sandbox) if k.startswith("run.")]
    assert result.outcome.value == "infra_error" and "ValueError" in (result.error or "")
    assert kinds == [("run.started", None), ("run.finished", "infra_error")]


def test_nothing_runs_when_the_audit_log_cannot_record(tmp_path: Path) -> None:
    from hazmat import AuditError
    from hazmat.audit.log import AuditLog

    log = AuditLog(tmp_path)
    log.close()  # a closed log refuses appends, like a full or read-only disk
    backend = RecordingBackend()
    with pytest.raises(AuditError):
        Sandbox(Policy(), backend=backend, audit=log).run("print(1)")
    assert backend.jobs == []


def test_code_over_the_cap_is_stored_truncated_with_its_full_hash(tmp_path: Path) -> None:
    from hazmat.audit.log import AuditLog

    policy = parse_policy({"audit": {"code_cap": 10}})
    code = "print('a long program')"
    with Sandbox(policy, backend=RecordingBackend(), audit=AuditLog(tmp_path)) as sandbox:
        sandbox.run(code)
        started = next(d for k, d in audit_records(sandbox) if k == "run.started")
    assert started["code"] == code[:10] and started["code_truncated"] is True
    assert started["code_sha256"] == hashlib.sha256(code.encode()).hexdigest()


def test_the_old_name_of_a_kept_build_still_works_and_says_it_is_deprecated() -> None:
    with Sandbox(Policy(), backend=RecordingBackend()) as sandbox:
        with pytest.deprecated_call(match="Sandbox.kept_build"):
            old = sandbox.bench("python", [1.0, None], build_files=["data.txt"])
        new = sandbox.kept_build("python", [1.0, None], build_files=["data.txt"])
    assert (old.lifetime_s, old.build_files) == (new.lifetime_s, new.build_files)
