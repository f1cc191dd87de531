"""No input is a 5xx: what a client sends that the JSON decoder, int() or a receipt's reader
would take but nothing after could (a lone surrogate, a 4,301-digit number, a receipt with a
number for its checkpoint or a record 100,000 brackets deep) is a 400 (or a 404, or a fragment
saying the receipt does not verify) naming what is wrong. The real app in process, on a backend
that runs nothing; the console's fragments fuzzed with Hypothesis (they are not in the OpenAPI
document that test_openapi_fuzz.py gives Schemathesis)."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from hazmat import Sandbox
from hazmat.audit.log import AuditLog
from hazmat.server.http import create_app
from hazmat.service.tenant_keys import KeyStore
from hazmat.testing import RecordingBackend
from server_helpers import STARTED, LiveServer, TracebackWatch

LONE = "\udc80"  # valid JSON as "\udc80"; no text: it cannot be encoded
HUGE = "9" * 4301  # valid JSON; int() of it is an error in Python 3.11+
Served = tuple[TestClient, dict[str, str], str]  # the app, a key's headers, an open session


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    store = KeyStore(tmp_path / "keys.json")
    headers = {"Authorization": f"Bearer {store.create('acme', 'trusted')[1]}"}
    audit = AuditLog(tmp_path / "audit")
    with (
        Sandbox(backend=RecordingBackend(), audit=audit) as sandbox,
        TestClient(create_app(sandbox, store)) as client,
    ):
        opened = client.post("/v1/sessions", json={"language": "python"}, headers=headers)
        assert opened.status_code == 201, opened.text
        yield client, headers, opened.json()["id"]
    audit.close()


def send(served: Served, method: str, path: str, body: Any, lines: bool = False) -> Any:
    client, headers, session = served
    # ensure_ascii: a lone surrogate goes as \udc80; bytes go as they are
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    kind = "application/x-ndjson" if lines else "application/json"
    path = path.replace("{s}", session)
    return client.request(method, path, content=content, headers={**headers, "Content-Type": kind})


RUN = "/v1/runs"
SURROGATES = [
    ("POST", RUN, {"code": LONE}, "field 'code'"),
    ("POST", RUN, {"code": "1", "stdin": "a" + LONE}, "field 'stdin'"),
    ("POST", RUN, {"code": "1", "args": ["a", LONE]}, "field 'args'[1]"),
    ("POST", RUN, {"code": "1", "env": {"A": LONE}}, "field 'env'['A']"),
    ("POST", RUN, {"code": "1", "files": {"a.txt": LONE}}, "field 'files'['a.txt']"),
    ("POST", RUN, {"code": "1", "files": {LONE: "x"}}, "a name in field 'files'"),
    ("POST", RUN, {"code": "1", "session": LONE}, "field 'session'"),
    ("POST", RUN, {"code": "1", "language": LONE}, "field 'language'"),
    ("POST", "/v1/assess", {"code": LONE}, "field 'code'"),
    ("POST", "/v1/sessions", {"language": LONE}, "field 'language'"),
    ("POST", "/v1/sessions/{s}/runs", {"code": LONE}, "field 'code'"),
    ("POST", "/v1/sessions/{s}/runs", {"code": "1", "stdin": LONE}, "field 'stdin'"),
    ("PUT", "/v1/sessions/{s}/files", {"files": {"a.txt": LONE}}, "field 'files'['a.txt']"),
    ("POST", "/v1/sessions/{s}/packages", {"packages": [LONE]}, "field 'packages'[0]"),
    ("POST", "/v1/batches", {"tasks": [{"id": LONE}]}, "field 'tasks'[0]['id']"),
]


@pytest.mark.parametrize(("method", "path", "body", "field"), SURROGATES)
def test_a_lone_surrogate_anywhere_is_a_400_naming_its_field(
    served: Served, method: str, path: str, body: Any, field: str
) -> None:
    """It was a 500 in code, stdin, args, env and files, a 503 "cannot record run.started"
    in session, and a 500 in session calls, uploads and /v1/assess."""
    answer = send(served, method, path, body)
    assert answer.status_code == 400, answer.text
    said = answer.json()["error"]["message"]
    assert said.startswith(f"the request body: {field} holds a lone surrogate"), said


def test_a_batch_line_with_a_lone_surrogate_is_a_400_naming_its_line(served: Served) -> None:
    answer = send(served, "POST", "/v1/batches", {"id": "a", "language": LONE}, lines=True)
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["message"].startswith(
        "line 1: the request body: field 'language' holds a lone surrogate"
    )


@pytest.mark.parametrize(
    ("path", "body"),
    [
        (RUN, f'{{"code": "1", "timeout": {HUGE}}}'),  # int() raised ValueError
        (RUN, f'{{"code": "1", "timeout": 1{"0" * 400}}}'),  # math.isfinite: OverflowError
        (RUN, f'{{"code": "1", "memory_mb": -{HUGE}}}'),
        ("/v1/sessions/{s}/runs", f'{{"code": "1", "timeout": 1{"0" * 400}}}'),
        ("/v1/batches", f'{{"tasks": [], "jobs": {HUGE}}}'),
    ],
)
def test_a_number_too_long_is_a_400(served: Served, path: str, body: str) -> None:
    answer = send(served, "POST", path, body.encode())
    assert answer.status_code == 400, answer.text
    assert "has a number" in answer.json()["error"]["message"]


@pytest.mark.parametrize("jobs", ["9" * 4301, "²", "99999999999"])
def test_a_query_number_is_ascii_digits_of_a_sane_length(served: Served, jobs: str) -> None:
    """`?jobs=` of JSON Lines batches: int() refused 4,301 digits with a ValueError (500),
    and took other scripts' digits after str.isdigit() said yes to "²", which it refuses."""
    client, headers, _ = served
    kind = {**headers, "Content-Type": "application/x-ndjson"}
    answer = client.post(f"/v1/batches?jobs={jobs}", content=b'{"id": "a"}\n', headers=kind)
    assert answer.status_code == 400, answer.text
    assert "jobs must be a whole number" in answer.json()["error"]["message"]


@pytest.mark.parametrize("path", ["/console/f/runs/x/receipt/", "/console/f/batches/b-1/receipt/"])
@pytest.mark.parametrize("key", [True, False])
def test_a_receipt_url_with_a_huge_number_is_not_found(
    served: Served, path: str, key: bool
) -> None:
    """int() of the path's 4,301 digits raised in the router, before any key was asked for."""
    client, headers, _ = served
    answer = client.get(path + "9" * 4301, headers=headers if key else {})
    assert answer.status_code == (404 if key else 401), answer.text


PROTOCOLS = [
    "/sandbox-fusion/run_code",
    "/piston/api/v2/execute",
    "/judge0/submissions?wait=true",
    "/judge0/submissions/batch",
    "/e2b/v2/sandboxes",
]
EVERY = {  # every protocol's fields at once: each reads its own
    "code": "1",
    "language": "python",
    "source_code": "1",
    "language_id": 71,
    "version": "*",
    "files": [{"content": "1"}],
}
HOSTILE = [
    {**EVERY, "code": LONE, "source_code": LONE, "files": [{"content": LONE}]},
    {**EVERY, "stdin": LONE},
    {**EVERY, "files": {LONE: "eA=="}},
    {"submissions": [{"source_code": LONE, "language_id": 71}], **EVERY},
    f'{{"code": "1", "language": "python", "run_timeout": {HUGE}}}'.encode(),
    f'{{"source_code": "1", "language_id": 71, "cpu_time_limit": 1{"0" * 400}}}'.encode(),
    f'{{"language": "py", "version": "*", "files": [], "run_timeout": -{HUGE}}}'.encode(),
    b"[" * 100_000,
    b"\xff\xfe",
]


@pytest.mark.parametrize("path", PROTOCOLS)
@pytest.mark.parametrize("body", HOSTILE)
def test_the_protocols_answer_hostile_bodies_with_a_4xx(
    served: Served, path: str, body: Any
) -> None:
    """SandboxFusion's, Piston's, Judge0's and E2B's endpoints (server/protocols/) take what
    `/v1` takes: no body is a 5xx."""
    answer = send(served, "POST", path, body)
    assert answer.status_code == 400, answer.text
    assert "the request body" in answer.text  # the decoder's sentence, in each one's shape


CHECKPOINTS = [1, [], {}, None, True, 1.5, "x"]


@pytest.mark.parametrize("checkpoint", CHECKPOINTS)
def test_a_pasted_receipt_whose_checkpoint_is_no_note_does_not_verify(
    served: Served, checkpoint: object
) -> None:
    """It was an AttributeError (500) for anything but a string."""
    receipt = {"receipt": 1, "seq": 0, "record": '{"seq": 0}', "path": [], "checkpoint": checkpoint}
    answer = check(served, json.dumps(receipt))
    assert answer.status_code == 200, answer.text
    assert "does not verify" in answer.text


def test_a_pasted_receipt_whose_record_is_deep_does_not_verify(served: Served) -> None:
    """The record is a string inside the receipt: its 100,000 brackets were a RecursionError."""
    receipt = {"receipt": 1, "seq": 0, "record": "[" * 100_000, "path": [], "checkpoint": "x"}
    answer = check(served, json.dumps(receipt))
    assert answer.status_code == 200, answer.text
    assert "not a receipt: its record is nested deeper than 32 levels" in answer.text


def check(served: Served, receipt: str) -> Any:
    client, headers, _ = served
    return client.post("/console/f/audit/check", data={"receipt": receipt}, headers=headers)


FUZZ = settings(
    max_examples=60,
    deadline=None,
    derandomize=True,  # the same cases every run
    database=None,
    suppress_health_check=list(HealthCheck),
)
TEXT = st.text(st.characters(exclude_categories=()), max_size=30)  # lone surrogates too
NUMBERS = st.integers() | st.integers(10**40, 10**400) | st.floats()
JSON = st.recursive(
    st.none() | st.booleans() | NUMBERS | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=8,
)
RECEIPTS = st.fixed_dictionaries(
    {},
    optional={
        "receipt": st.just(1) | JSON,
        "seq": NUMBERS | JSON,
        "record": st.builds(json.dumps, JSON) | st.just("[" * 5000) | JSON,
        "path": st.lists(st.just("00" * 32) | TEXT, max_size=3) | JSON,
        "checkpoint": TEXT | JSON,
    },
)


@FUZZ
@given(receipt=RECEIPTS | JSON)
def test_fuzz_the_receipt_check(served: Served, receipt: Any) -> None:
    answer = check(served, json.dumps(receipt))
    assert answer.status_code < 500, answer.text


SEGMENTS = st.text(st.characters(codec="utf-8"), min_size=1, max_size=20) | st.integers(
    4000, 6000
).map(lambda n: "9" * n)


@FUZZ
@given(segment=SEGMENTS, where=st.sampled_from(["runs/x/receipt", "batches/b-1/receipt", "runs"]))
def test_fuzz_the_consoles_ids_and_numbers(served: Served, segment: str, where: str) -> None:
    client, headers, _ = served
    answer = client.get(f"/console/f/{where}/" + quote(segment, safe=""), headers=headers)
    assert answer.status_code < 500, answer.text


@FUZZ
@given(
    query=st.dictionaries(
        st.sampled_from(["outcome", "language", "tenant", "script", "session"]), TEXT
    )
)
def test_fuzz_the_consoles_runs_filter(served: Served, query: dict[str, str]) -> None:
    client, headers, _ = served
    safe = {k: v.encode("utf-8", "surrogatepass").decode("latin-1") for k, v in query.items()}
    answer = client.get("/console/f/runs", params=safe, headers=headers)
    assert answer.status_code < 500, answer.text


def test_a_traceback_in_the_services_log_is_seen(tmp_path: Path) -> None:
    """The watch every test here runs under (conftest.py's `no_tracebacks`) sees a traceback
    from the app in process and one in a live service's log, and nothing else."""
    log = tmp_path / "serve.stderr"
    log.write_text("earlier: Traceback (most recent call last)\n")  # before the watch: not seen
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    server = LiveServer("http://x", {}, tmp_path, tmp_path, process, log)  # type: ignore[arg-type]
    STARTED.append(server)
    watch = TracebackWatch()
    logger = logging.getLogger("hazmat.server.test")
    try:
        raise ValueError("boom")
    except ValueError:  # given to this watch alone (the test's own would fail the test)
        error = sys.exc_info()
    for level, exc_info in (
        (logging.WARNING, error),
        (logging.ERROR, None),
        (logging.ERROR, error),
    ):
        record = logger.makeRecord(
            logger.name, level, __file__, 1, "an unexpected error", (), exc_info
        )
        watch.handle(record)
    logging.getLogger("starlette.test").warning("a warning is not a traceback")
    with log.open("a") as f:
        f.write("Traceback (most recent call last):\n  ...\nKeyError: 'x'\n")
    process.wait()
    found = watch.stop()
    assert len(found) == 2, found
    assert "an unexpected error" in found[0] and "ValueError: boom" in found[0]
    assert "KeyError: 'x'" in found[1] and "earlier" not in found[1]
    assert server not in STARTED  # it has stopped: not read again


@pytest.mark.parametrize("length", ["9" * 4301, "9" * 19])
def test_a_content_length_of_many_digits_is_413(served: Served, length: str) -> None:
    """int() of the header's 4,301 digits raised (a 500)."""
    client, headers, _ = served
    answer = client.post("/v1/runs", content=b"{}", headers={**headers, "Content-Length": length})
    assert answer.status_code == 413, answer.text
    assert f"a {len(length)}-digit number of bytes" in answer.json()["error"]["message"]


def test_a_lone_surrogate_in_an_mcp_tool_call_is_a_400(served: Served) -> None:
    """/mcp's JSON-RPC is decoded by the MCP SDK, which refuses a lone surrogate itself (a
    parse error, 400), before any tool sees it."""
    client, headers, _ = served
    mcp = {**headers, "Accept": "application/json, text/event-stream"}
    mcp["Content-Type"] = "application/json"
    hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t"}}
    hello["clientInfo"]["version"] = "1"
    opened = client.post(
        "/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello},
        headers=mcp,
    )
    assert opened.status_code == 200, opened.text
    mcp |= {
        "mcp-session-id": opened.headers["mcp-session-id"],
        "mcp-protocol-version": "2025-06-18",
    }
    for tool, arguments in (
        ("run_code", {"code": "1", "stdin": LONE}),
        ("assess_code", {"code": LONE}),
    ):
        call = {"name": tool, "arguments": arguments}
        body = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call}
        answer = client.post("/mcp", content=json.dumps(body).encode(), headers=mcp)
        assert answer.status_code == 400, answer.text
        assert "lone leading surrogate" in answer.json()["error"]["message"], answer.text


FORM_TEXT = st.text(st.characters(codec="utf-8"), max_size=40)


@FUZZ
@given(
    form=st.dictionaries(
        st.sampled_from(["code", "language", "trust", "image", "receipt", "pubkey", "x"]),
        FORM_TEXT | st.just("\x00") | st.just("9" * 5000),
        max_size=5,
    ),
    where=st.sampled_from(["playground/run", "audit/check"]),
)
def test_fuzz_the_consoles_forms(served: Served, form: dict[str, str], where: str) -> None:
    client, headers, _ = served
    answer = client.post(f"/console/f/{where}", data=form, headers=headers)
    assert answer.status_code < 500, answer.text


@FUZZ
@given(body=st.binary(max_size=200), where=st.sampled_from(["playground/run", "audit/check"]))
def test_fuzz_the_consoles_forms_with_any_bytes(served: Served, body: bytes, where: str) -> None:
    client, headers, _ = served
    kind = {**headers, "Content-Type": "application/x-www-form-urlencoded"}
    answer = client.post(f"/console/f/{where}", content=body, headers=kind)
    assert answer.status_code < 500, answer.text
