"""Judge0 CE's API (server/protocols/judge0.py) over the recording backend: what its SDK reads
first (checked against the SDK's own models), a submission's life, each verdict's status id,
base64, batches, tenancy, the refusals and the queue's bound. Its SDK on the real engine:
test_judge0_clients.py."""

from __future__ import annotations

import base64
import io
import threading
import time
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from judge0 import LanguageAlias, Status
from judge0 import Submission as SdkSubmission
from judge0.base_types import Config
from judge0.data import LANGUAGE_TO_LANGUAGE_ID
from judge0.submission import SKIP_FIELDS
from starlette.testclient import TestClient

from hazmat import Sandbox
from hazmat.backends.base import Job, RunReport
from hazmat.languages import LANGUAGES
from hazmat.policy import Clock, Policy, TrustLevel
from hazmat.server.http import create_app
from hazmat.server.protocols import judge0
from hazmat.service.tenant_keys import KeyStore, Quotas
from hazmat.testing import RecordingBackend


@dataclass
class Served:
    client: TestClient
    backend: RecordingBackend
    keys: dict[str, str]

    def headers(self, key: str = "acme") -> dict[str, str]:
        return {"X-Auth-Token": self.keys[key]}

    def submit(self, body: dict[str, Any], key: str = "acme", query: str = "?wait=true") -> Any:
        answer = self.client.post(f"/judge0/submissions{query}", json=body,
                                  headers=self.headers(key))
        assert answer.status_code == 201, answer.text
        return answer.json()

    def finished(self, token: str, key: str = "acme", query: str = "fields=*") -> Any:
        """The submission once it is done (a bounded wait on its status)."""
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            got = self.client.get(f"/judge0/submissions/{token}?{query}",
                                  headers=self.headers(key)).json()
            if got["status"]["id"] > 2:
                return got
            time.sleep(0.01)
        raise AssertionError(f"{token} not done within 30 s")


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    store = KeyStore(tmp_path / "keys.json")
    keys = {
        "acme": store.create("acme", "untrusted")[1],
        "other": store.create("other", "untrusted")[1],
        "one": store.create("one", "unknown", Quotas(concurrent=1))[1],
    }
    backend = RecordingBackend()
    with Sandbox(backend=backend) as sandbox, TestClient(create_app(sandbox, store)) as client:
        yield Served(client, backend, keys)


def python(code: str = "print(1)", **more: Any) -> dict[str, Any]:
    return {"source_code": code, "language_id": 71, **more}


def test_what_the_sdk_reads_first_is_what_it_models(served: Served) -> None:
    about = served.client.get("/judge0/about").json()
    assert about["version"] in LANGUAGE_TO_LANGUAGE_ID  # the SDK maps its aliases by it
    config = served.client.get("/judge0/config_info", headers=served.headers()).json()
    assert set(config) == set(Config.model_fields)  # all 39, and no other
    Config(**config)
    level = Policy().settings(TrustLevel.UNTRUSTED).limits
    assert config["max_cpu_time_limit"] == level.timeout_s
    assert config["max_memory_limit"] == level.memory_mb * 1024
    statuses = served.client.get("/judge0/statuses").json()
    assert [s["id"] for s in statuses] == [s.value for s in Status]


def test_every_language_is_listed_under_its_ids_and_the_sdks_aliases(served: Served) -> None:
    listed = {lang["id"]: lang["name"] for lang in served.client.get("/judge0/languages").json()}
    for lang in LANGUAGES.values():
        for i in lang.names["judge0"]:
            assert listed[int(i)] == lang.title
    sdk = LANGUAGE_TO_LANGUAGE_ID[judge0.API_VERSION]
    for alias in ("PYTHON", "JAVASCRIPT", "TYPESCRIPT", "GO", "BASH", "C", "CPP", "JAVA",
                  "RUST", "RUBY", "R"):
        assert sdk[LanguageAlias[alias]] in listed, alias
    one = served.client.get("/judge0/languages/54").json()
    assert one["name"] == "C++" and one["source_file"] == "main.cpp"
    assert served.client.get("/judge0/languages/1").status_code == 404


def test_a_submissions_fields_are_the_sdks_and_read_as_it_reads_them(served: Served) -> None:
    token = served.submit(python(stdin="7\n"), query="")["token"]
    got = served.finished(token, query="fields=*&base64_encoded=true")  # as the SDK asks
    assert set(got) <= set(SdkSubmission.model_fields) | SKIP_FIELDS
    assert set(got) == set(judge0.ALL_FIELDS)
    sdk = SdkSubmission()
    sdk.set_attributes(got)  # the SDK's own reading: strict timestamps, a UUID4 token
    assert sdk.status == Status.ACCEPTED and sdk.stdout == "hi\n"
    assert isinstance(sdk.created_at, datetime) and isinstance(sdk.finished_at, datetime)
    job = served.backend.jobs[-1]
    assert job.clock is Clock.CPU and job.program.stdin == b"7\n"
    assert job.limits.timeout_s == judge0.DEFAULT_CPU_S == got["cpu_time_limit"]


def test_base64_both_ways(served: Served) -> None:
    b64 = lambda text: base64.b64encode(text.encode()).decode()  # noqa: E731
    got = served.submit(
        {"source_code": b64("print(1)"), "language_id": 71, "stdin": b64("x")},
        query="?base64_encoded=true&wait=true",
    )
    assert base64.b64decode(got["stdout"]) == b"hi\n"
    assert served.backend.jobs[-1].program.stdin == b"x"
    bad = served.client.post("/judge0/submissions?base64_encoded=true",
                             json={"source_code": "!!", "language_id": 71},
                             headers=served.headers())
    assert bad.status_code == 422 and "source_code" in bad.json()


def test_output_that_is_not_utf8_needs_base64(served: Served) -> None:
    served.backend.answer = lambda job: RunReport(0, b"\xff\xfe", b"", 5.0)
    token = served.submit(python(), query="")["token"]
    served.finished(token, query="base64_encoded=true")
    plain = served.client.get(f"/judge0/submissions/{token}", headers=served.headers())
    assert plain.status_code == 400 and "use base64_encoded=true" in plain.json()["error"]
    encoded = served.client.get(f"/judge0/submissions/{token}?base64_encoded=true",
                                headers=served.headers()).json()
    assert base64.b64decode(encoded["stdout"]) == b"\xff\xfe"


def _answering(report: RunReport) -> Any:
    return lambda job: report


@pytest.mark.parametrize(
    ("report", "language_id", "more", "status"),
    [
        (RunReport(0, b"42\n", b"", 5.0), 71, {"expected_output": "42"}, 3),
        (RunReport(0, b"42  \n\n", b"", 5.0), 71, {"expected_output": "42\n"}, 3),
        (RunReport(0, b"41\n", b"", 5.0), 71, {"expected_output": "42"}, 4),
        (RunReport(None, b"", b"", 5.0, timed_out=True, stopped_by="cpu"), 71, {}, 5),
        (RunReport(1, b"", b"main.c: error\n", 5.0, build_status=1), 50, {}, 6),
        (RunReport(139, b"", b"", 5.0), 50, {}, 7),
        (RunReport(None, b"x" * 8, b"", 5.0, output_exceeded=True), 71, {}, 8),
        (RunReport(136, b"", b"", 5.0), 50, {}, 9),
        (RunReport(134, b"", b"", 5.0), 50, {}, 10),
        (RunReport(3, b"", b"", 5.0), 71, {}, 11),
        (RunReport(None, b"", b"", 5.0, oom_killed=True), 71, {}, 12),
    ],
    ids=["accepted", "accepted-trailing-blanks", "wrong-answer", "time-limit", "compile-error",
         "sigsegv", "output-limit", "sigfpe", "sigabrt", "nzec", "memory-limit"],
)
def test_each_verdict_is_its_status_id(
    served: Served, report: RunReport, language_id: int, more: dict[str, Any], status: int
) -> None:
    served.backend.answer = _answering(report)
    got = served.submit({"source_code": "x", "language_id": language_id, **more},
                        query="?wait=true&fields=*")
    assert got["status"] == {"id": status, "description": judge0.STATUSES[status]}
    if status == 6:
        assert got["compile_output"] == "main.c: error\n" and got["stdout"] is None
    if status in (7, 9, 10):
        assert got["exit_signal"] == {7: 11, 9: 8, 10: 6}[status] and got["exit_code"] is None
    if status in (5, 8, 11, 12):
        assert got["message"]  # hazmat's sentence on what stopped it


def test_code_the_policy_blocks_is_a_runtime_error_and_nothing_runs(served: Served) -> None:
    got = served.submit(python("import ctypes\n"), query="?wait=true&fields=*")
    assert got["status"]["id"] == 12 and "blocked" in got["message"]
    assert served.backend.jobs == []


def test_a_limit_above_the_level_runs_at_the_levels_and_says_so(served: Served) -> None:
    level = Policy().settings(TrustLevel.UNTRUSTED).limits
    got = served.submit(python(cpu_time_limit=level.timeout_s * 2,
                               memory_limit=level.memory_mb * 4 * 1024),
                        query="?wait=true&fields=*")
    job = served.backend.jobs[-1]
    assert job.limits.timeout_s == level.timeout_s and job.limits.memory_mb == level.memory_mb
    assert got["cpu_time_limit"] == level.timeout_s
    assert got["memory_limit"] == level.memory_mb * 1024
    assert "cpu_time_limit" in got["message"] and "memory_limit" in got["message"]


def test_files_arguments_and_compiler_options(served: Served) -> None:
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("data/in.txt", "hello")
    served.submit({
        "source_code": "int main(void) { return 0; }",
        "language_id": 50,
        "additional_files": base64.b64encode(archive.getvalue()).decode(),
        "command_line_arguments": "a 'b c'",
        "compiler_options": "-O2",
    })
    job = served.backend.jobs[-1]
    assert job.program.files["data/in.txt"] == b"hello"
    assert list(job.program.args) == ["a", "b c"] and "-O2" in job.build_flags


def test_another_tenants_token_is_the_same_404_as_none(served: Served) -> None:
    token = served.submit(python())["token"]
    theirs = served.client.get(f"/judge0/submissions/{token}", headers=served.headers("other"))
    nobody = served.client.get("/judge0/submissions/0b8a1d3c-36c5-4b8e-9a86-4a1f0b3a8d21",
                               headers=served.headers("other"))
    assert theirs.status_code == nobody.status_code == 404
    assert theirs.json() == nobody.json()
    batch = served.client.get(f"/judge0/submissions/batch?tokens={token}",
                              headers=served.headers("other")).json()
    assert batch == {"submissions": [None]}


def test_a_batch(served: Served) -> None:
    made = served.client.post(
        "/judge0/submissions/batch",
        json={"submissions": [python(), {"source_code": "x", "language_id": 999}, python()]},
        headers=served.headers(),
    )
    assert made.status_code == 201
    first, refused, last = made.json()
    assert refused == {"language_id": ["language with id 999 doesn't exist"]}
    for token in (first["token"], last["token"]):
        served.finished(token)
    shown = served.client.get(
        f"/judge0/submissions/batch?tokens={first['token']},{last['token']}&fields=status,stdout",
        headers=served.headers(),
    ).json()["submissions"]
    assert [s["status"]["id"] for s in shown] == [3, 3] and set(shown[0]) == {"status", "stdout"}
    over = served.client.post("/judge0/submissions/batch",
                              json={"submissions": [python()] * (judge0.MAX_BATCH + 1)},
                              headers=served.headers())
    assert over.status_code == 400 and "less than or equal to 20" in over.json()["error"]


@pytest.mark.parametrize(
    ("body", "status", "answer"),
    [
        (python(callback_url="http://x"), 422, {"callback_url": ["callbacks are not enabled"]}),
        (python(enable_network=True), 422,
         {"enable_network": ["enabling network is not allowed"]}),
        (python(number_of_runs=3), 422, {"number_of_runs": ["only one run is supported"]}),
        ({"language_id": 71}, 422, {"source_code": ["can't be blank"]}),
        (python(cpu_time_limit="lots"), 422,
         {"cpu_time_limit": ["must be a positive number of seconds"]}),
        (python(additional_files="nope"), 422, None),
        (python(command_line_arguments="'unclosed"), 422, None),
        ({"source_code": "x", "language_id": 50, "compiler_options": "-fplugin=x.so"}, 400,
         None),
    ],
    ids=["callback", "network", "runs", "no-code", "cpu-type", "zip", "args", "flag"],
)
def test_bad_input_is_refused_and_nothing_runs(
    served: Served, body: dict[str, Any], status: int, answer: dict[str, Any] | None
) -> None:
    got = served.client.post("/judge0/submissions", json=body, headers=served.headers())
    assert got.status_code == status, got.text
    if answer is not None:
        assert got.json() == answer
    assert served.backend.jobs == []


@pytest.mark.parametrize("headers", [{}, {"X-Auth-Token": "hzm_nope"}])
def test_no_key_nothing_runs(served: Served, headers: dict[str, str]) -> None:
    got = served.client.post("/judge0/submissions", json=python(), headers=headers)
    assert got.status_code == 401 and "X-Auth-Token" in got.json()["error"]
    assert served.backend.jobs == []


def test_queued_in_order_at_most_the_keys_places_and_bounded(
    served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    release, started = threading.Event(), threading.Event()

    def held(job: Job) -> RunReport:
        started.set()
        release.wait(30)
        return RunReport(0, b"done\n", b"", 5.0)

    served.backend.answer = held
    monkeypatch.setattr(judge0, "TENANT_QUEUE", 2)
    first = served.submit(python(), key="one", query="")["token"]
    assert started.wait(30)
    second = served.submit(python(), key="one", query="")["token"]
    shown = lambda t: served.client.get(f"/judge0/submissions/{t}?fields=status",  # noqa: E731
                                        headers=served.headers("one")).json()["status"]["id"]
    assert (shown(first), shown(second)) == (2, 1)  # one place: Processing, In Queue
    full = served.client.post("/judge0/submissions", json=python(), headers=served.headers("one"))
    assert full.status_code == 503 and "queued" in full.json()["error"]
    release.set()
    assert served.finished(first, key="one")["stdout"] == "done\n"
    assert served.finished(second, key="one")["stdout"] == "done\n"


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("?wait=maybe", "wait must be true or false"),
        ("?fields=stdout,nope", "invalid fields: nope"),
    ],
)
def test_a_bad_query_is_refused_before_anything_is_queued(
    served: Served, query: str, message: str
) -> None:
    got = served.client.post(f"/judge0/submissions{query}", json=python(),
                             headers=served.headers())
    assert got.status_code == 400 and got.json() == {"error": message}
    assert served.backend.jobs == []
