"""The options table (hazmat/options/): every form of a run's options is derived from it, so
each derived form is checked against the table here, and a new option (`output_bytes`, the
first added to the table alone) reaches every front-end that the table says may set it."""

from __future__ import annotations

import asyncio
import dataclasses
import typing
from collections.abc import Iterator
from pathlib import Path

import pytest

from hazmat import ExecutionRequest, InputError, Outcome, Sandbox
from hazmat.options import (
    CALL_OPTIONS,
    OPEN_OPTIONS,
    Option,
    RunOptions,
    Use,
    body_fields,
    check_options,
    from_request,
    options,
)
from hazmat.policy import Limits
from hazmat.server.mcp_tools import build_mcp
from hazmat.server.openapi import OPENAPI
from hazmat.service.quotas import QuotaBook
from hazmat.service.tenant_keys import KeyStore
from hazmat.service.wire import RUN_FIELDS, options_from_wire, request_to_wire
from hazmat.testing import RecordingBackend, invoke


@pytest.fixture
def recorded() -> Iterator[tuple[Sandbox, RecordingBackend]]:
    backend = RecordingBackend()
    with Sandbox(backend=backend, pool=False) as sandbox:
        yield sandbox, backend


def test_every_key_of_the_typed_dict_is_an_option_with_a_request_field() -> None:
    hints = typing.get_type_hints(RunOptions, include_extras=True)
    assert list(options()) == list(hints)
    fields = {f.name for f in dataclasses.fields(ExecutionRequest)}
    limits = {f.name for f in dataclasses.fields(Limits)}
    for name, opt in options().items():
        assert isinstance(opt, Option)
        assert (opt.field or name) in fields, name
        assert opt.ceiling is None or opt.ceiling in limits, name
        assert opt.uses, f"{name} is set nowhere"
        assert Use.INTERNAL not in opt.uses or opt.uses == {Use.INTERNAL}, name


def test_the_session_sets_are_the_tables() -> None:
    assert {n for n, o in options().items() if Use.CALL in o.uses} == CALL_OPTIONS
    assert {n for n, o in options().items() if Use.OPEN in o.uses} == OPEN_OPTIONS
    assert "trust" in OPEN_OPTIONS and "trust" not in CALL_OPTIONS


@pytest.mark.parametrize(
    ("schema", "use", "own"),
    [
        ("RunRequest", Use.RUN, {"code", "language"}),
        ("SessionRun", Use.CALL, {"code"}),
        ("SessionRequest", Use.OPEN, {"language"}),
    ],
)
def test_the_openapi_bodies_are_the_tables(schema: str, use: Use, own: set[str]) -> None:
    properties = OPENAPI["components"]["schemas"][schema]["properties"]
    assert set(properties) - own == set(body_fields(use))
    for field, name in body_fields(use).items():
        assert properties[field]["description"], field
        if field == name:
            assert properties[field]["description"] == options()[name].help


def test_the_api_docs_table_names_every_field_of_a_runs_body() -> None:
    docs = (Path(__file__).resolve().parents[2] / "docs" / "api.md").read_text()
    table = docs.split("The body takes the fields of `Sandbox.run`:", 1)[1].split("\n\n")[1]
    for field in body_fields(Use.RUN):
        assert f"`{field}`" in table, f"docs/api.md: the run body's table lacks {field}"


def test_the_mcp_tools_take_what_a_model_may_set(
    recorded: tuple[Sandbox, RecordingBackend],
) -> None:
    sandbox, _ = recorded
    mcp = build_mcp(sandbox, lambda ctx: None, QuotaBook())
    tools = {tool.name: tool for tool in asyncio.run(mcp.list_tools())}
    for tool, use, own in [
        ("run_code", Use.RUN, {"code", "language"}),
        ("run_in_session", Use.CALL, {"session_id", "code"}),
        ("open_session", Use.OPEN, {"language"}),
    ]:
        told = set(tools[tool].input_schema["properties"]) - own
        model = {f for f, n in body_fields(use).items() if Use.TOOL in options()[n].uses}
        assert told == model, tool
    assert "output_bytes" in tools["run_code"].input_schema["properties"]
    assert "trust" not in tools["run_code"].input_schema["properties"]


def test_unknown_and_mistyped_options_name_the_option() -> None:
    with pytest.raises(InputError, match=r"option 'output_byte'; did you mean 'output_bytes'"):
        check_options({"output_byte": 2048})
    with pytest.raises(InputError, match="option 'output_bytes' must be bytes, a positive whole"):
        check_options({"output_bytes": "2048"})
    with pytest.raises(InputError, match="must be a positive whole number, not 0"):
        check_options({"output_bytes": 0})


def test_a_run_may_ask_for_less_output_never_more(
    recorded: tuple[Sandbox, RecordingBackend],
) -> None:
    sandbox, backend = recorded
    result = sandbox.run("print(1)", output_bytes=4096)
    assert backend.jobs[-1].limits.output_bytes == 4096 == result.limits.output_bytes
    ceiling = sandbox.policy.settings(result.trust).limits.output_bytes
    with pytest.raises(InputError, match=r"policy key trust\.untrusted\.output_bytes"):
        sandbox.run("print(1)", output_bytes=ceiling + 1)
    with pytest.raises(InputError, match="outside the allowed range 1024"):
        sandbox.run("print(1)", output_bytes=1000)
    assert len(backend.jobs) == 1


def test_a_run_may_give_its_build_less_time_never_more(
    recorded: tuple[Sandbox, RecordingBackend],
) -> None:
    sandbox, backend = recorded
    result = sandbox.run("int main(void) { return 0; }", "c", compile_timeout=2.5)
    assert backend.jobs[-1].limits.compile_timeout_s == 2.5 == result.limits.compile_timeout_s
    ceiling = sandbox.policy.settings(result.trust).limits.compile_timeout_s
    with pytest.raises(InputError, match=r"policy key trust\.untrusted\.compile_timeout_s"):
        sandbox.run("int main(void) { return 0; }", "c", compile_timeout=ceiling + 1)
    with pytest.raises(InputError, match="'compile_timeout' must be a positive number of sec"):
        sandbox.run("int main(void) { return 0; }", "c", compile_timeout=0)
    assert len(backend.jobs) == 1


@pytest.mark.docker
def test_a_real_build_stops_at_the_time_it_asked_for(sandbox: Sandbox) -> None:
    """`compile_timeout` on the real engine (one cell: the build's budget is the host's,
    whatever the tier or runtime; every runtime's: tests/execution/test_compile.py)."""
    program = "#include <iostream>\nint main() { std::cout << 1; }\n"
    result = sandbox.run(program, "cpp", compile_timeout=0.1)
    assert result.outcome is Outcome.COMPILE_TIMEOUT, result
    assert "time limit of 0.1 s" in (result.error or "")


@pytest.mark.docker
def test_a_real_run_stops_at_the_cap_it_asked_for(sandbox: Sandbox) -> None:
    """`output_bytes` on the real engine (one cell: the cap is the host's, read from the
    request's limits whatever the tier or runtime; every cell's cap: test_abuse.py)."""
    result = sandbox.run("while True:\n    print('x' * 1000)", output_bytes=4096)
    assert result.outcome is Outcome.OUTPUT_LIMIT and result.truncated
    assert len(result.stdout_bytes) + len(result.stderr_bytes) == 4096
    assert result.limits.output_bytes == 4096
    assert "4096 bytes" in (result.error or "")


def test_the_new_option_travels_the_wire_and_the_queue(
    recorded: tuple[Sandbox, RecordingBackend],
) -> None:
    sandbox, _ = recorded
    assert RUN_FIELDS["output_bytes"] == "output_bytes"
    _, _, given = options_from_wire({"code": "x", "output_bytes": 2048})
    assert given == {"output_bytes": 2048}
    request = sandbox.request("print(1)", output_bytes=2048)
    assert request_to_wire(request)["output_bytes"] == 2048
    assert "output_bytes" not in from_request(sandbox.request("print(1)"))


def test_the_service_takes_it_in_a_runs_body(tmp_path: Path) -> None:
    from starlette.testclient import TestClient

    from hazmat.server.http import create_app

    store = KeyStore(tmp_path / "keys.json")
    headers = {"Authorization": f"Bearer {store.create('acme', 'untrusted')[1]}"}
    backend = RecordingBackend()
    with Sandbox(backend=backend) as sandbox, TestClient(create_app(sandbox, store)) as client:
        run = {"code": "print(1)", "output_bytes": 2048}
        answer = client.post("/v1/runs", json=run, headers=headers)
        assert answer.status_code == 200, answer.text
        assert answer.json()["limits"]["output_bytes"] == 2048
        too_much = client.post(
            "/v1/runs", json={"code": "print(1)", "output_bytes": 10**9}, headers=headers
        )
        assert too_much.status_code == 400
        assert "trust.untrusted.output_bytes" in too_much.json()["error"]["message"]
        in_a_call = client.post("/v1/sessions", json={}, headers=headers).json()["id"]
        call = client.post(f"/v1/sessions/{in_a_call}/runs", json=run, headers=headers)
        assert call.status_code == 400 and "output_bytes" in call.json()["error"]["message"]
    assert [job.limits.output_bytes for job in backend.jobs] == [2048]


def test_the_cli_flag_sets_it(tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text("default_trust: untrusted\n")
    said = invoke(
        ["run", "--local", "--policy", str(policy), "--json", "--output-bytes", "1000", "-c", "1"],
        env={"HAZMAT_AUDIT_DIR": str(tmp_path / "audit")},
    )
    assert said.exit_code == 2 and "outside the allowed range 1024" in said.stderr
    help_text = invoke(["run", "--help"]).stdout
    assert "--output-bytes BYTES" in help_text
