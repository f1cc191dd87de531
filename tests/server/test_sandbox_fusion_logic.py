"""SandboxFusion's protocol (server/protocols/sandbox_fusion.py) over the recording backend:
what each field becomes, each verdict's answer, the refusals in its own shape, the key in the
path that nothing records, and overload as a 504. The real client on the real engine is
test_sandbox_fusion_clients.py."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import anyio
import pytest
from starlette.testclient import TestClient

from hazmat import Sandbox
from hazmat.audit.log import AuditLog
from hazmat.backends.base import RunReport
from hazmat.languages import get_language
from hazmat.policy import Clock, Policy, TrustLevel
from hazmat.server.http import create_app
from hazmat.server.protocols import Overloaded, Turns, whole_mib, within_level
from hazmat.server.protocols.sandbox_fusion import wait_for_turn
from hazmat.service.tenant_keys import KeyStore, Quotas
from hazmat.testing import RecordingBackend


@dataclass
class Served:
    client: TestClient
    backend: RecordingBackend
    keys: dict[str, str]
    audit_dir: Path

    def run_code(self, body: object, key: str = "acme", **kwargs: object) -> dict[str, object]:
        answer = self.client.post(f"/sandbox-fusion/{self.keys[key]}/run_code", json=body)
        assert answer.status_code == kwargs.get("status", 200), answer.text
        data: dict[str, object] = answer.json()
        return data


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    store = KeyStore(tmp_path / "keys.json")
    keys = {
        "acme": store.create("acme", "untrusted")[1],
        "tiny": store.create("tiny", "unknown", Quotas(concurrent=1, per_minute=1))[1],
    }
    backend = RecordingBackend()
    audit = AuditLog(tmp_path / "audit")
    with (
        Sandbox(backend=backend, audit=audit) as sandbox,
        TestClient(create_app(sandbox, store)) as client,
    ):
        yield Served(client, backend, keys, tmp_path / "audit")
    audit.close()


def test_a_run_takes_each_field_and_runs_on_the_cpu_clock(served: Served) -> None:
    data = served.run_code(
        {
            "code": "print(open('in.txt').read())",
            "language": "python",
            "stdin": "7\n",
            "files": {"in.txt": base64.b64encode(b"hello").decode()},
            "fetch_files": ["out.txt"],
            "run_timeout": 2.5,
        }
    )
    assert data["status"] == "Success" and data["message"] == ""
    job = served.backend.jobs[-1]
    assert job.clock is Clock.CPU and job.limits.timeout_s == 2.5
    assert job.program.stdin == b"7\n" and job.program.files["in.txt"] == b"hello"
    assert list(job.program.want) == ["out.txt"]
    assert data["compile_result"] is None  # Python has no build step
    assert data["run_result"] == {
        "status": "Finished",
        "execution_time": 0.005,
        "return_code": 0,
        "stdout": "hi\n",
        "stderr": "",
        "cpu_time": None,
    }


def test_a_limit_above_the_level_runs_at_the_levels_and_the_message_says_so(
    served: Served,
) -> None:
    # verl sends memory_limit_MB 1024 on every request; the key's level (untrusted) has less
    level = Policy().settings(TrustLevel.UNTRUSTED).limits
    asked_mb, asked_s = level.memory_mb * 4, level.timeout_s * 4
    data = served.run_code(
        {
            "code": "print(1)",
            "language": "python",
            "memory_limit_MB": asked_mb,
            "run_timeout": asked_s,
        }
    )
    assert data["status"] == "Success"
    limits = served.backend.jobs[-1].limits
    assert limits.memory_mb == level.memory_mb and limits.timeout_s == level.timeout_s
    assert data["message"] == (
        f"run_timeout {asked_s:g} s is over trust level 'untrusted''s limit: ran with "
        f"{level.timeout_s:g} s (policy key trust.untrusted.timeout_s); memory_limit_MB "
        f"{asked_mb} MB is over trust level 'untrusted''s limit: ran with {level.memory_mb} MB "
        "(policy key trust.untrusted.memory_mb)"
    )


def test_a_memory_field_in_its_unit_is_whole_mebibytes_rounded_up() -> None:
    """The three protocols' memory fields (SandboxFusion's MB, Judge0's KB, Piston's bytes)
    through one conversion; each protocol words the refusal itself."""
    assert whole_mib(1024, 1024 * 1024, level=(-1,)) == 1024
    assert whole_mib(-1, 1024 * 1024, level=(-1,)) is None
    assert whole_mib(262144, 1024) == 256 and whole_mib(262145, 1024) == 257
    assert whole_mib(1, 1) == 1 and whole_mib(0, 1, level=(-1, 0)) is None
    assert whole_mib(None, 1) is None
    for bad in (0, -5, True, "256", 2.5j):
        with pytest.raises(ValueError):
            whole_mib(bad, 1024)


def test_within_level_lowers_only_what_is_over() -> None:
    level = Policy().settings(TrustLevel.UNTRUSTED).limits
    options: dict[str, object] = {
        "memory_mb": level.memory_mb - 1,
        "timeout": level.timeout_s + 1,
        "compile_timeout": 1,
    }
    said = within_level(options, {"timeout": "t"}, TrustLevel.UNTRUSTED, Policy())
    assert options == {
        "memory_mb": level.memory_mb - 1,
        "timeout": level.timeout_s,
        "compile_timeout": 1,
    }
    assert len(said) == 1 and said[0].startswith(f"t {level.timeout_s + 1:g} s is over")


def _answering(served: Served, report: RunReport) -> None:
    served.backend.answer = lambda job: report


@pytest.mark.parametrize(
    ("report", "language", "status", "run", "built"),
    [
        (RunReport(3, b"", b"boom\n", 5.0), "python", "Failed", ("Finished", 3), None),
        (
            RunReport(None, b"", b"", 5.0, timed_out=True, stopped_by="cpu"),
            "python",
            "Failed",
            ("TimeLimitExceeded", None),
            None,
        ),
        (
            RunReport(None, b"", b"", 5.0, oom_killed=True),
            "python",
            "Failed",
            ("Finished", 137),
            None,
        ),
        (
            RunReport(1, b"", b"main.cpp:1: error\n", 5.0, build_status=1, build_ms=300.0),
            "cpp",
            "Failed",
            None,
            ("Finished", 1),
        ),
        (
            RunReport(None, b"", b"", 5.0, compile_timed_out=True, build_ms=10000.0),
            "cpp",
            "Failed",
            None,
            ("TimeLimitExceeded", None),
        ),
        (
            RunReport(0, b"1\n", b"", 5.0, build_status=0, build_ms=300.0, program_ms=4.0),
            "cpp",
            "Success",
            ("Finished", 0),
            ("Finished", 0),
        ),
    ],
    ids=["exit-3", "time-limit", "memory-limit", "compile-error", "compile-timeout", "built"],
)
def test_each_verdict_in_its_fields(
    served: Served,
    report: RunReport,
    language: str,
    status: str,
    run: tuple[str, int | None] | None,
    built: tuple[str, int | None] | None,
) -> None:
    _answering(served, report)
    sf_name = {"cpp": "cpp", "python": "python"}[language]
    data = served.run_code({"code": "x = 1\n", "language": sf_name})
    assert data["status"] == status
    ran, compiled = data["run_result"], data["compile_result"]
    if run is None:
        assert ran is None
    else:
        assert isinstance(ran, dict) and (ran["status"], ran["return_code"]) == run
    if built is None:
        assert compiled is None
    else:
        assert isinstance(compiled, dict) and (compiled["status"], compiled["return_code"]) == built
    if status == "Failed" and run != ("Finished", 3):
        assert data["message"]  # hazmat's sentence on what stopped it


def test_code_the_policy_blocks_is_a_failed_run_not_a_sandbox_error(served: Served) -> None:
    data = served.run_code({"code": "import ctypes\n", "language": "python"})
    assert data["status"] == "Failed"
    ran = data["run_result"]
    assert isinstance(ran, dict) and ran["status"] == "Error" and ran["return_code"] == 126
    assert "blocked" in str(data["message"]) and served.backend.jobs == []


def test_an_engine_failure_is_a_sandbox_error(served: Served) -> None:
    from hazmat._exceptions import InfraError

    served.backend.error = InfraError("the engine is not answering")
    data = served.run_code({"code": "print(1)", "language": "python"})
    assert data["status"] == "SandboxError" and "engine" in str(data["message"])


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        (b"nope", 400, "the request body is not JSON"),
        (b"[1]", 400, "the request body must be a JSON object, not list"),
        (b'{"language": "python"}', 400, "field 'code' must be a string, not missing"),
        (
            b'{"code": "x", "language": "php"}',
            400,
            "unknown language 'php' for SandboxFusion's run_code (hazmat runs: R, bash, cpp, go, "
            "java, nodejs, python, ruby, rust, typescript)",
        ),
        (
            b'{"code": "x", "language": "python", "files": {"a.txt": "!!"}}',
            400,
            "file 'a.txt' is not base64",
        ),
        (
            b'{"code": "x", "language": "python", "run_timeout": -1}',
            400,
            "field 'run_timeout' must be a positive number of seconds, not -1",
        ),
        (
            b'{"code": "x", "language": "python", "memory_limit_MB": "lots"}',
            400,
            "field 'memory_limit_MB' must be a positive whole number (or -1), not 'lots'",
        ),
        (
            b'{"code": "x", "language": "python", "files": {"../up": "eA=="}}',
            400,
            "'../up'",
        ),
        (b'{"code": "' + b"x" * (9 * 1024 * 1024) + b'"}', 413, "the request body is"),
    ],
    ids=["not-json", "not-object", "no-code", "language", "base64", "timeout", "memory", "path",
         "oversized"],
)
def test_bad_input_is_refused_in_its_own_shape(
    served: Served, body: bytes, status: int, message: str
) -> None:
    answer = served.client.post(f"/sandbox-fusion/{served.keys['acme']}/run_code", content=body)
    assert answer.status_code == status
    data = answer.json()
    assert data["status"] == "SandboxError" and message in data["message"], data
    assert served.backend.jobs == []


@pytest.mark.parametrize("path", ["/sandbox-fusion/run_code", "/sandbox-fusion/hzm_nope/run_code"])
def test_no_key_nothing_runs(served: Served, path: str) -> None:
    answer = served.client.post(path, json={"code": "print(1)", "language": "python"})
    assert answer.status_code == 401
    assert "point the client at /sandbox-fusion/<key>" in answer.json()["message"]
    assert served.backend.jobs == []


def test_the_key_may_come_as_a_bearer_token_too(served: Served) -> None:
    answer = served.client.post(
        "/sandbox-fusion/run_code",
        json={"code": "print(1)", "language": "python"},
        headers={"Authorization": f"Bearer {served.keys['acme']}"},
    )
    assert answer.status_code == 200 and answer.json()["status"] == "Success"


def test_the_key_in_the_path_is_recorded_nowhere(served: Served) -> None:
    answer = served.client.post(
        f"/sandbox-fusion/{served.keys['acme']}/run_code",
        json={"code": "print(1)", "language": "python"},
    )
    run = answer.headers["x-hazmat-run"]
    secret = served.keys["acme"].rpartition("_")[2]
    written = b"".join(p.read_bytes() for p in served.audit_dir.rglob("*") if p.is_file())
    assert run.encode() in written  # the run is in the log, as its tenant's
    assert secret.encode() not in written and b"acme" in written
    bearer = {"Authorization": f"Bearer {served.keys['acme']}"}
    metrics = served.client.get("/metrics", headers=bearer)
    assert 'endpoint="sandbox_fusion",status="200"' in metrics.text
    assert secret not in metrics.text


def test_past_the_keys_per_minute_quota_is_a_504_never_a_429(served: Served) -> None:
    first = served.run_code({"code": "print(1)", "language": "python"}, key="tiny")
    assert first["status"] == "Success"
    answer = served.client.post(
        f"/sandbox-fusion/{served.keys['tiny']}/run_code",
        json={"code": "print(1)", "language": "python"},
    )
    assert answer.status_code == 504  # verl retries a 504; any other failure scores -1
    assert "per-minute quota" in answer.json()["message"]


def test_ping(served: Served) -> None:
    assert served.client.get("/sandbox-fusion/v1/ping").json() == "pong"


def test_a_turn_waits_in_order_and_gives_up_at_its_bound(tmp_path: Path) -> None:
    key = KeyStore(tmp_path / "keys.json").create("t", "unknown", Quotas(concurrent=1))[0]
    order: list[str] = []

    async def main() -> None:
        turns = Turns()
        held, waiting = anyio.Event(), anyio.Event()

        async def second() -> None:
            waiting.set()
            async with turns.turn(key, 30.0):
                order.append("second")

        async with anyio.create_task_group() as group, turns.turn(key, 1.0):
            order.append("first")
            with pytest.raises(Overloaded, match="no place for this run came within"):
                async with turns.turn(key, 0.01):
                    pass
            group.start_soon(second)
            await waiting.wait()
            held.set()
        assert held.is_set() and turns.waiting == 0

    anyio.run(main)
    assert order == ["first", "second"]


def test_too_many_waiting_is_overloaded_at_once(tmp_path: Path) -> None:
    key = KeyStore(tmp_path / "keys.json").create("t", "unknown")[0]
    turns = Turns(most_waiting=0)

    async def main() -> None:
        async with turns.turn(key, 30.0):
            pass

    with pytest.raises(Overloaded, match="waiting for their turn already"):
        anyio.run(main)
    assert turns.waiting == 0


def test_the_wait_for_a_turn_fits_the_clients_deadline() -> None:
    python, cpp = get_language("python"), get_language("cpp")
    # verl's defaults: 10 s each, its deadline 30 s; the run's worst case is 20 s of idleness
    # backstop + 2 s: 8 s to wait
    assert wait_for_turn(20.0, 10.0, 10.0, python) == 8.0
    # a build's budget counts too: never less than 2 s
    assert wait_for_turn(20.0, 10.0, 10.0, cpp) == 2.0
    assert wait_for_turn(1000.0, 10.0, 10.0, python) == 60.0


def test_a_notebooks_cells_are_calls_of_one_session_closed_at_the_end(served: Served) -> None:
    answer = served.client.post(
        f"/sandbox-fusion/{served.keys['acme']}/run_jupyter",
        json={"cells": ["a = 1", "a", "print(a)"], "cell_timeout": 2, "fetch_files": ["gone"]},
    )
    assert answer.status_code == 200, answer.text
    data = answer.json()
    assert data["status"] == "Success" and data["driver"]["status"] == "Finished"
    assert [c["stdout"] for c in data["cells"]] == ["hi\n"] * 3
    (kept,) = served.backend.kept
    runs = [job for mode, job in kept.calls if mode == "run"]
    assert [mode for mode, _ in kept.calls] == ["run", "run", "run", "files"]  # then fetched
    assert [job.program.files[job.language.source_name] for job in runs] == [
        b"a = 1", b"a", b"print(a)"
    ]
    assert all(job.limits.timeout_s == 2 for job in runs)
    assert kept.ended  # closed
    assert data["message"].startswith("fetch_files: ") and "gone" in data["message"]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"cells": "print(1)"}, "field 'cells' must be a list of code strings"),
        ({"cells": ["1"], "kernel": "ir"}, "unknown kernel 'ir' (hazmat has python3)"),
        ({"cells": ["1"], "total_timeout": 0}, "field 'total_timeout' must be a positive"),
    ],
)
def test_a_bad_notebook_is_refused(served: Served, body: dict[str, object], message: str) -> None:
    answer = served.client.post(f"/sandbox-fusion/{served.keys['acme']}/run_jupyter", json=body)
    assert answer.status_code == 400 and message in answer.json()["message"]
    assert served.backend.kept == []
