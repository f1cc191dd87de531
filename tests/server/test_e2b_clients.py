"""E2B's protocol with E2B's own SDKs from PyPI (`e2b`, `e2b-code-interpreter`), unchanged,
against a live `hazmat serve` on the real engine: `E2B_API_URL` and `E2B_SANDBOX_URL` set to
its `/e2b`, a hazmat key as `E2B_API_KEY`, under runc (a `trusted` key) and gVisor (an
`untrusted` key). The shapes and refusals in detail are test_e2b_logic.py's."""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Iterator

import anyio
import httpx
import pytest
from e2b import AuthenticationException, SandboxException, SandboxQuery
from e2b_code_interpreter import AsyncSandbox, Sandbox

from server_helpers import RUNTIME_KEYS, LiveServer

pytestmark = pytest.mark.docker


@pytest.fixture
def e2b(live_server: LiveServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[LiveServer]:
    """The SDK pointed at the live server, as docs/e2b.md tells a user to."""
    monkeypatch.setenv("E2B_API_URL", f"{live_server.url}/e2b")
    monkeypatch.setenv("E2B_SANDBOX_URL", f"{live_server.url}/e2b")
    monkeypatch.setenv("E2B_API_KEY", live_server.keys["trusted"])
    yield live_server


@pytest.mark.matrix
def test_a_sandbox_runs_code_keeps_state_and_ends(e2b: LiveServer, runtime: str) -> None:
    key = e2b.keys[RUNTIME_KEYS[runtime]]
    tag = uuid.uuid4().hex
    sbx = Sandbox.create(api_key=key, metadata={"test": tag}, timeout=120)
    try:
        first = sbx.run_code("x = 41\nprint(x + 1)")
        assert first.logs.stdout == ["42\n"] and first.error is None, first
        assert sbx.run_code("print(x)").logs.stdout == ["41\n"]
        value = sbx.run_code("x * 2")  # the last line's value: the main result, not printed
        assert value.text == "82" and value.logs.stdout == [], value
        failed = sbx.run_code("def f():\n    return 1 / 0\nf()")
        assert failed.error is not None, failed
        assert (failed.error.name, failed.error.value) == ("ZeroDivisionError", "division by zero")
        assert failed.error.traceback.endswith("ZeroDivisionError: division by zero")
        assert "return 1 / 0" in failed.error.traceback and failed.logs.stderr == []
        info = sbx.get_info(api_key=key)
        assert info.template_id == "code-interpreter-v1" and info.metadata == {"test": tag}
        sbx.set_timeout(60, api_key=key)
        assert sbx.get_info(api_key=key).end_at < info.end_at
        listed = Sandbox.list(SandboxQuery(metadata={"test": tag}), api_key=key).next_items()
        assert [s.sandbox_id for s in listed] == [sbx.sandbox_id]
        assert sbx.is_running()
    finally:
        assert sbx.kill(api_key=key) is True
    assert not sbx.is_running()
    assert Sandbox.kill(sbx.sandbox_id, api_key=key) is False  # gone: E2B's 404
    with pytest.raises(SandboxException, match="not found"):
        sbx.run_code("print(1)")


def test_a_chart_comes_back_as_png_and_contexts_keep_their_own_state(e2b: LiveServer) -> None:
    with Sandbox.create(timeout=120) as sbx:
        chart = sbx.run_code(
            "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3], [1, 4, 9])\nplt.show()"
        )
        assert chart.error is None, chart
        [figure] = chart.results
        assert figure.png is not None and base64.b64decode(figure.png).startswith(b"\x89PNG")
        sbx.run_code("y = 'main'")
        other = sbx.create_code_context(language="python")
        assert sbx.run_code("y = 'other'", context=other).error is None
        assert sbx.run_code("print(y)").logs.stdout == ["main\n"]
        assert sbx.run_code("print(y)", context=other).logs.stdout == ["other\n"]
        assert {c.id for c in sbx.list_code_contexts()} >= {other.id}
        sbx.remove_code_context(other)
        assert other.id not in {c.id for c in sbx.list_code_contexts()}
        shell = sbx.run_code("echo from bash", language="bash")
        assert shell.logs.stdout == ["from bash\n"], shell


def test_a_paused_sandbox_is_resumed_by_connect_with_its_variables(e2b: LiveServer) -> None:
    sbx = Sandbox.create(timeout=120)
    try:
        sbx.run_code("kept = [1, 2, 3]\nopen('still.txt', 'w').write('here')")
        sbx.pause()
        assert Sandbox.get_info(sbx.sandbox_id).state.value == "paused"
        assert not sbx.is_running()
        with pytest.raises(SandboxException, match="is paused: connect to it first"):
            sbx.run_code("print(kept)")
        again = Sandbox.connect(sbx.sandbox_id)
        shown = again.run_code("print(kept, open('still.txt').read())")
        assert shown.logs.stdout == ["[1, 2, 3] here\n"], shown
    finally:
        sbx.kill()


def test_stdout_comes_as_printed_and_a_client_that_leaves_cancels_the_call(
    e2b: LiveServer,
) -> None:
    """The first line comes while the program still runs (it never ends by itself): the
    client reads it and leaves, and the call is `cancelled` (a buffered answer would have
    come only at the time limit, the call `timeout`); the context goes on."""
    key = e2b.keys["trusted"]
    with httpx.Client(base_url=f"{e2b.url}/e2b", timeout=120) as http:
        body = {"templateID": "code-interpreter-v1", "timeout": 60}
        made = http.post("/v2/sandboxes", headers={"X-API-KEY": key}, json=body).json()
        sandbox = {
            "E2b-Sandbox-Id": made["sandboxID"],
            "E2b-Sandbox-Port": "49999",
            "E2B-Traffic-Access-Token": made["trafficAccessToken"],
        }
        try:
            code = "import threading\nprint('first', flush=True)\nthreading.Event().wait()\n"
            with http.stream("POST", "/execute", headers=sandbox, json={"code": code}) as lines:
                first = json.loads(next(lines.iter_lines()))
            assert (first["type"], first["text"]) == ("stdout", "first\n")
            after = http.post("/execute", headers=sandbox, json={"code": "print('next')"})
            assert after.text.splitlines()[0].startswith('{"type": "stdout", "text": "next\\n"')
        finally:
            http.delete(f"/sandboxes/{made['sandboxID']}", headers={"X-API-KEY": key})
    outcomes = [
        r["data"]["outcome"] for r in e2b.audit_records()
        if r["kind"] == "run.finished" and r["data"]["run"] in _runs_of(e2b, code)
    ]
    assert outcomes == ["cancelled"], outcomes


def _runs_of(server: LiveServer, code: str) -> set[str]:
    return {
        r["data"]["run"] for r in server.audit_records()
        if r["kind"] == "run.started" and r["data"]["code"] == code
    }


def test_the_async_sdk_once(e2b: LiveServer) -> None:
    async def main() -> list[str]:
        sbx = await AsyncSandbox.create(timeout=60)
        try:
            return (await sbx.run_code("print('async')")).logs.stdout
        finally:
            await sbx.kill()

    assert anyio.run(main) == ["async\n"]


def test_refusals_are_the_sdks_own_exceptions_with_hazmats_sentence(
    e2b: LiveServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(SandboxException, match=r"unknown template 'nope'.*sessions\.templates"):
        Sandbox.create(template="nope")
    with pytest.raises(SandboxException, match=r"sessions\.lifetime_s"):
        Sandbox.create(timeout=10**7)
    monkeypatch.setenv("E2B_API_KEY", "hzm_not_a_key")
    with pytest.raises(AuthenticationException, match="a valid API key is needed"):
        Sandbox.create()


def test_another_tenants_sandbox_is_not_found(e2b: LiveServer) -> None:
    mine = Sandbox.create(api_key=e2b.keys["untrusted"], timeout=60)
    try:
        theirs = e2b.keys["trusted"]
        assert Sandbox.kill(mine.sandbox_id, api_key=theirs) is False
        with pytest.raises(SandboxException, match="not found"):
            Sandbox.get_info(mine.sandbox_id, api_key=theirs)
        listed = Sandbox.list(api_key=theirs).next_items()
        assert mine.sandbox_id not in {s.sandbox_id for s in listed}
    finally:
        mine.kill()
