"""Piston's API (server/protocols/piston.py) over the recording backend: what each field
becomes, versions asked once, each verdict's stage, the refusals in its shape, and overload as
a 429. Its client on the real engine: test_piston_clients.py."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from hazmat import Sandbox
from hazmat.backends.base import Job, RunReport
from hazmat.languages import LANGUAGES
from hazmat.policy import Clock, Policy, TrustLevel
from hazmat.server.http import create_app
from hazmat.service.tenant_keys import KeyStore, Quotas
from hazmat.testing import RecordingBackend

VERSION = "7.1.2"  # what the recording backend's every program prints


@dataclass
class Served:
    client: TestClient
    backend: RecordingBackend
    keys: dict[str, str]

    def execute(self, body: dict[str, Any], key: str = "acme", status: int = 200) -> Any:
        answer = self.client.post(
            "/piston/api/v2/execute", json=body, headers={"Authorization": self.keys[key]}
        )
        assert answer.status_code == status, answer.text
        return answer.json()

    def programs(self) -> list[Job]:
        """The jobs that were not a version's question."""
        asked = {lang.version for lang in LANGUAGES.values()}
        return [j for j in self.backend.jobs if j.program.files[j.language.source_name].decode()
                not in asked]


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    store = KeyStore(tmp_path / "keys.json")
    keys = {
        "acme": store.create("acme", "untrusted")[1],
        "tiny": store.create("tiny", "unknown", Quotas(concurrent=1, per_minute=2))[1],
    }
    backend = RecordingBackend(RunReport(0, f"v{VERSION}\n".encode(), b"", 5.0))
    with (
        Sandbox(backend=backend) as sandbox,
        TestClient(create_app(sandbox, store)) as client,
    ):
        yield Served(client, backend, keys)


def program(code: str = "print(1)", language: str = "python", **more: Any) -> dict[str, Any]:
    return {"language": language, "version": "*", "files": [{"content": code}], **more}


def test_a_run_takes_each_field_on_the_cpu_clock(served: Served) -> None:
    data = served.execute(
        program(
            stdin="7\n",
            args=["a", "b"],
            files=[
                {"name": "main.py", "content": "print(1)"},
                {"name": "in.bin", "content": base64.b64encode(b"\x00\x01").decode(),
                 "encoding": "base64"},
                {"name": "in.hex", "content": "ff00", "encoding": "hex"},
            ],
            run_cpu_time=1500,
            run_timeout=9000,
        )
    )
    assert data["language"] == "python" and data["version"] == VERSION
    assert data["run"]["code"] == 0 and data["run"]["status"] is None
    assert data["run"]["output"] == f"v{VERSION}\n" and "compile" not in data
    job = served.programs()[-1]
    assert job.clock is Clock.CPU and job.limits.timeout_s == 1.5  # run_cpu_time first
    assert job.program.stdin == b"7\n" and list(job.program.args) == ["a", "b"]
    assert job.program.files["in.bin"] == b"\x00\x01" and job.program.files["in.hex"] == b"\xff\x00"


def test_the_version_is_asked_once_per_language_and_level(served: Served) -> None:
    for _ in range(3):
        served.execute(program())
    assert len(served.backend.jobs) == 4  # one question, three programs
    listed = served.client.get(
        "/piston/api/v2/runtimes", headers={"Authorization": f"Bearer {served.keys['acme']}"}
    ).json()
    assert {r["language"] for r in listed} == {
        lang.names["piston"][0] for lang in LANGUAGES.values()
    }
    python = next(r for r in listed if r["language"] == "python")
    assert python == {"language": "python", "version": VERSION, "aliases": ["py", "py3", "python3"]}
    assert len(served.backend.jobs) == 3 + len(LANGUAGES)


@pytest.mark.parametrize(("selector", "status"), [("*", 200), ("7.x", 200), ("^7.0.1", 200),
                                                  ("7", 200), ("3.10.0", 400), (">=1", 200)])
def test_a_version_of_another_major_is_an_unknown_runtime(
    served: Served, selector: str, status: int
) -> None:
    data = served.execute({**program(), "version": selector}, status=status)
    if status == 400:
        assert data == {"message": f"python-{selector} runtime is unknown (hazmat has python "
                                   f"{VERSION})"}


def test_a_limit_above_the_level_runs_at_the_levels_and_the_message_says_so(
    served: Served,
) -> None:
    level = Policy().settings(TrustLevel.UNTRUSTED).limits
    data = served.execute(
        program(run_memory_limit=level.memory_mb * 4 * 1024 * 1024, compile_memory_limit=10**9)
    )
    assert served.programs()[-1].limits.memory_mb == level.memory_mb
    assert data["run"]["message"] == (
        f"run_memory_limit {level.memory_mb * 4} MB is over trust level 'untrusted''s limit: "
        f"ran with {level.memory_mb} MB (policy key trust.untrusted.memory_mb); "
        "compile_memory_limit is not applied: a build gets its level's compile_memory_mb "
        f"({level.compile_memory_mb} MB)"
    )


@pytest.mark.parametrize(
    ("report", "language", "stage"),
    [
        (RunReport(3, b"", b"boom\n", 5.0), "python", (3, None, "RE")),
        (RunReport(None, b"", b"", 5.0, timed_out=True, stopped_by="cpu"), "python",
         (None, "SIGKILL", "TO")),
        (RunReport(None, b"", b"", 5.0, oom_killed=True), "python", (None, "SIGKILL", "SG")),
        (RunReport(None, b"x" * 10, b"", 5.0, output_exceeded=True), "python",
         (None, "SIGKILL", "OL")),
        (RunReport(1, b"", b"main.c:1: error\n", 5.0, build_status=1, build_ms=30.0), "c",
         (1, None, "RE")),
        (RunReport(None, b"", b"", 5.0, compile_timed_out=True, build_ms=9.0), "c",
         (None, "SIGKILL", "TO")),
    ],
    ids=["exit-3", "time-limit", "memory-limit", "output-limit", "compile-error",
         "compile-timeout"],
)
def test_each_verdict_in_its_stage(
    served: Served, report: RunReport, language: str, stage: tuple[Any, ...]
) -> None:
    served.execute(program(language=language))  # its version, asked with the usual report
    served.backend.answer = lambda job: report
    data = served.execute(program(language=language))
    run = data["run"]
    assert (run["code"], run["signal"], run["status"]) == stage
    if language == "c":
        assert data["compile"] == run  # a failed build: run repeats it, as Piston's does
    if stage[2] != "RE" or language == "c":
        assert run["message"]  # hazmat's sentence


def test_a_built_language_has_its_compile_stage(served: Served) -> None:
    served.backend.answer = lambda job: RunReport(
        0, f"{VERSION}\n".encode(), b"", 5.0, build_status=0, build_ms=40.0
    )
    data = served.execute(program("int main(void) { return 0; }", "c"))
    assert data["compile"]["code"] == 0 and data["compile"]["wall_time"] == 40
    assert data["run"]["code"] == 0


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        (b"x", 400, "the request body is not JSON"),
        (b'{"version": "*", "files": []}', 400, "language is required as a string"),
        (b'{"language": "cobol", "version": "*", "files": []}', 400,
         "cobol runtime is unknown (hazmat runs: bash, c, c++, go, java, javascript, python, r, "
         "ruby, rust, typescript)"),
        (b'{"language": "py", "files": []}', 400, "version is required as a string"),
        (b'{"language": "py", "version": "*"}', 400, "files is required as an array"),
        (b'{"language": "py", "version": "*", "files": [{"content": 1}]}', 400,
         "files[0].content is required as a string"),
        (b'{"language": "py", "version": "*", "files": [{"content": "A", "encoding": "base64"}]}',
         400, "files must include at least one utf8 encoded file"),
        (b'{"language": "py", "version": "*", "files": [{"content": "x"}, {"content": "!",'
         b' "name": "a", "encoding": "base64"}]}', 400, "files[1].content is not base64"),
        (b'{"language": "py", "version": "*", "files": [{"content": "x"}, {"content": "a",'
         b' "name": "a", "encoding": "rot13"}]}', 400,
         "files[1].encoding must be utf8, base64 or hex, not 'rot13'"),
        (b'{"language": "py", "version": "*", "files": [{"content": "x"}, {"content": "a"}]}',
         400, "files[1].name is required for a file beside the program"),
        (b'{"language": "py", "version": "*", "files": [{"content": "x"}], "run_timeout": "1"}',
         400, "If specified, run_timeout must be a number"),
        (b'{"language": "py", "version": "*", "files": [{"content": "x"}], "run_timeout": -5}',
         400, "run_timeout must be non-negative"),
        (b'{"language": "py", "version": "*", "files": [{"content": "x"}], "args": [1]}',
         400, "args must be an array of strings"),
        (b'{"language": "py", "version": "*", "files": [{"content": "' + b"x" * (9 << 20)
         + b'"}]}', 413, "the request body is"),
    ],
    ids=["not-json", "no-language", "unknown-language", "no-version", "no-files",
         "content", "no-utf8", "base64", "encoding", "name", "timeout-type", "timeout-sign",
         "args", "oversized"],
)
def test_bad_input_is_refused_in_its_shape(
    served: Served, body: bytes, status: int, message: str
) -> None:
    answer = served.client.post(
        "/piston/api/v2/execute",
        content=body,
        headers={"Authorization": served.keys["acme"], "Content-Type": "application/json"},
    )
    assert answer.status_code == status
    assert set(answer.json()) == {"message"} and message in answer.json()["message"]
    assert served.backend.jobs == []


def test_a_body_that_is_not_json_by_its_type_is_a_415(served: Served) -> None:
    answer = served.client.post(
        "/piston/api/v2/execute", content=b"{}", headers={"Content-Type": "text/plain"}
    )
    assert answer.status_code == 415
    assert answer.json() == {"message": "requests must be of type application/json"}


@pytest.mark.parametrize("how", ["none", "wrong", "path", "bearer"])
def test_the_key(served: Served, how: str) -> None:
    key = served.keys["acme"]
    path = f"/piston/{key}/api/v2/execute" if how == "path" else "/piston/api/v2/execute"
    headers = {"bearer": {"Authorization": f"Bearer {key}"}, "wrong": {"Authorization": "hzm_x"}}
    answer = served.client.post(path, json=program(), headers=headers.get(how, {}))
    if how in ("none", "wrong"):
        assert answer.status_code == 401 and "send it as Authorization" in answer.json()["message"]
        assert served.backend.jobs == []
    else:
        assert answer.status_code == 200


def test_past_the_keys_quota_is_a_429_in_its_shape(served: Served) -> None:
    served.execute(program(), key="tiny")  # the version's question and the program: 2 runs
    data = served.execute(program(), key="tiny", status=429)
    assert set(data) == {"message"} and "per-minute quota" in data["message"]
