"""Sessions through the service: httpx against a live `hazmat serve`, and the MCP SDK's own
client over stdio, on the real engine."""

from __future__ import annotations

import base64
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import anyio
import pytest

from hazmat.cli.mcp import TOOLS
from hazmat.service.tenant_keys import KeyStore, Quotas
from server_helpers import LiveServer, http_client, params, session_calls

pytestmark = pytest.mark.docker


def test_a_session_keeps_state_and_files(live_server: LiveServer) -> None:
    with live_server.client() as client:
        opened = client.post("/v1/sessions", json={"language": "python"})
        assert opened.status_code == 201, opened.text
        sid = opened.json()["id"]
        assert opened.json()["trust"] == "untrusted"
        at = f"/v1/sessions/{sid}"
        first = client.post(f"{at}/runs", json={"code": "x = 6 * 7\nprint('set')"}).json()
        assert (first["outcome"], first["stdout"]) == ("ok", "set\n")
        assert client.post(f"{at}/runs", json={"code": "x"}).json()["stdout"] == "42\n"
        up = client.put(
            f"{at}/files",
            json={"files": {"in.txt": "hi"}, "files_base64": {"b.bin": "AAE="}},
        )
        assert up.json() == {"uploaded": ["b.bin", "in.txt"]}, up.text
        client.post(
            f"{at}/runs", json={"code": "open('out.txt','w').write(open('in.txt').read()*2)"}
        )
        down = client.get(f"{at}/files", params=[("name", "out.txt"), ("name", "b.bin")])
        assert down.status_code == 200, down.text
        got = {k: base64.b64decode(v) for k, v in down.json()["files_base64"].items()}
        assert got == {"out.txt": b"hihi", "b.bin": b"\x00\x01"}
        listed = client.get("/v1/sessions").json()["sessions"]
        assert [s["id"] for s in listed] == [sid] and listed[0]["calls"] == 5
        closed = client.delete(at)
        assert closed.json() == {"id": sid, "ended": "it was closed"}
        gone = client.post(f"{at}/runs", json={"code": "x"})
        assert gone.status_code == 410 and "it was closed" in gone.json()["error"]["message"]
    records = live_server.audit_records()
    mine = [r for r in records if r["data"].get("session") == sid]  # type: ignore[attr-defined]
    assert [r["kind"] for r in mine].count("run.started") == 3
    assert mine[0]["data"]["caller"].startswith("tenant:acme key:")  # type: ignore[index]


def test_another_tenant_cannot_see_or_use_a_session(live_server: LiveServer) -> None:
    with live_server.client() as owner, live_server.client("trusted") as other:
        sid = owner.post("/v1/sessions", json={}).json()["id"]
        try:
            for answer in (
                other.get(f"/v1/sessions/{sid}"),
                other.post(f"/v1/sessions/{sid}/runs", json={"code": "print(1)"}),
                other.delete(f"/v1/sessions/{sid}"),
                other.get(f"/v1/sessions/{sid}/files", params={"name": "x"}),
            ):
                assert answer.status_code == 404, answer.text
                assert answer.json()["error"]["type"] == "SessionNotFound"
            assert other.get("/v1/sessions").json() == {"sessions": []}
            assert owner.get(f"/v1/sessions/{sid}").status_code == 200
        finally:
            owner.delete(f"/v1/sessions/{sid}")


def test_a_tenant_holds_at_most_its_concurrent_quota_of_sessions(live_server: LiveServer) -> None:
    with live_server.client("tiny") as client:  # concurrent=1
        sid = client.post("/v1/sessions", json={}).json()["id"]
        second = client.post("/v1/sessions", json={})
        assert second.status_code == 429, second.text
        assert "sessions open or opening" in second.json()["error"]["message"]
        assert int(second.headers["Retry-After"]) >= 1
        client.delete(f"/v1/sessions/{sid}")
        again = client.post("/v1/sessions", json={})
        assert again.status_code == 201
        client.delete(f"/v1/sessions/{again.json()['id']}")


def test_parallel_opens_cannot_pass_the_tenants_cap_together(live_server: LiveServer) -> None:
    """A cap of 2 with one session open: of two opens at once, exactly one gets a session (the
    place is taken before the slow container start, not recorded after it)."""
    key = KeyStore(live_server.keys_path).create("pair", "untrusted", Quotas(concurrent=2))[1]
    headers = {"Authorization": f"Bearer {key}"}
    with http_client(live_server.url, headers, 120) as client:
        first = client.post("/v1/sessions", json={})
        assert first.status_code == 201, first.text
        with ThreadPoolExecutor(2) as pool:
            answers = list(pool.map(lambda _: client.post("/v1/sessions", json={}), range(2)))
        statuses = sorted(answer.status_code for answer in answers)
        opened = [a.json()["id"] for a in answers if a.status_code == 201]
        for sid in [first.json()["id"], *opened]:
            client.delete(f"/v1/sessions/{sid}")
        assert statuses == [201, 429], [a.text for a in answers]
        assert len(client.get("/v1/sessions").json()["sessions"]) == 0


@pytest.mark.parametrize(
    ("path", "body", "status", "says"),
    [
        ("/v1/sessions", {"code": "print(1)"}, 400, "unknown field 'code'"),
        ("/v1/sessions", {"language": "cobol"}, 400, "cobol"),
        ("/v1/sessions", {"trust": "trusted"}, 403, "at most"),
        ("/v1/sessions", {"runtime": "runc"}, 403, "runsc"),
        ("/v1/sessions/s-0000000000000000/runs", {"code": "1"}, 404, "no open session"),
    ],
)
def test_bad_session_requests(
    live_server: LiveServer, path: str, body: dict[str, Any], status: int, says: str
) -> None:
    with live_server.client() as client:
        answer = client.post(path, json=body)
    assert answer.status_code == status, answer.text
    assert says in answer.json()["error"]["message"]


def test_a_call_may_not_change_what_the_session_fixed(live_server: LiveServer) -> None:
    with live_server.client() as client:
        sid = client.post("/v1/sessions", json={}).json()["id"]
        try:
            for field in ({"trust": "untrusted"}, {"memory_mb": 64}, {"language": "go"}):
                answer = client.post(f"/v1/sessions/{sid}/runs", json={"code": "1", **field})
                assert answer.status_code == 400, answer.text
            missing = client.get(f"/v1/sessions/{sid}/files", params={"name": "nope.txt"})
            assert missing.status_code == 400 and "nope.txt" in missing.text
        finally:
            client.delete(f"/v1/sessions/{sid}")


def test_a_timeout_interrupts_the_call_and_keeps_the_session(live_server: LiveServer) -> None:
    with live_server.client() as client:
        sid = client.post("/v1/sessions", json={}).json()["id"]
        try:
            client.post(f"/v1/sessions/{sid}/runs", json={"code": "x = 41"})
            slow = client.post(
                f"/v1/sessions/{sid}/runs", json={"code": "while True:\n    pass", "timeout": 1}
            ).json()
            assert slow["outcome"] == "timeout"
            assert any("still open" in note for note in slow["notes"])
            after = client.post(f"/v1/sessions/{sid}/runs", json={"code": "x + 1"})
            assert after.status_code == 200 and after.json()["stdout"] == "42\n"
        finally:
            client.delete(f"/v1/sessions/{sid}")


def test_mcp_session_tools_over_stdio(tmp_path: Path) -> None:
    key = KeyStore(tmp_path / "keys.json").create("agent", "untrusted")[1]

    async def scenario() -> list[Any]:
        from mcp import ClientSession
        from mcp.client.stdio import stdio_client

        async with (
            stdio_client(params(tmp_path, key)) as (read, write),
            ClientSession(read, write) as client,
        ):
            await client.initialize()
            opened = await client.call_tool("open_session", {"language": "python"})
            sid = opened.structured_content["id"]
            answers = [opened]
            for code in ("total = 40", "total + 2"):
                answers.append(
                    await client.call_tool("run_in_session", {"session_id": sid, "code": code})
                )
            answers.append(await client.call_tool("close_session", {"session_id": sid}))
            answers.append(
                await client.call_tool("run_in_session", {"session_id": sid, "code": "1"})
            )
            return answers

    opened, first, second, closed, after = anyio.run(scenario)
    assert not opened.is_error and opened.structured_content["language"] == "python"
    assert first.structured_content["outcome"] == "ok"
    assert second.structured_content["stdout"] == "42\n"
    assert closed.structured_content["ended"] == "it was closed"
    assert after.is_error and "has ended" in after.content[0].text


def test_an_mcp_session_under_runc_refuses_code_routed_to_gvisor(tmp_path: Path) -> None:
    """A trusted key's session runs under runc; code assessed HIGH is refused there, with what
    to do, and a session the model opens with runtime "runsc" runs it (docs/policy.md)."""
    key = KeyStore(tmp_path / "keys.json").create("agent", "trusted")[1]
    code = "import subprocess\nprint(1)"

    async def scenario() -> list[Any]:
        from mcp import ClientSession
        from mcp.client.stdio import stdio_client

        async with (
            stdio_client(params(tmp_path, key)) as (read, write),
            ClientSession(read, write) as client,
        ):
            await client.initialize()
            answers = []
            for opening in ({}, {"runtime": "runsc"}):
                opened = await client.call_tool("open_session", opening)
                sid = opened.structured_content["id"]
                ran = await client.call_tool("run_in_session", {"session_id": sid, "code": code})
                await client.call_tool("close_session", {"session_id": sid})
                answers += [opened, ran]
            return answers

    under_runc, refused, under_runsc, ran = anyio.run(scenario)
    assert under_runc.structured_content["runtime"] == "runc"
    assert refused.structured_content["outcome"] == "blocked"
    assert "Open the session with runtime 'runsc'" in refused.structured_content["error"]
    assert under_runsc.structured_content["runtime"] == "runsc"
    assert ran.structured_content["outcome"] == "ok" and ran.structured_content["stdout"] == "1\n"


def test_the_tool_list_names_the_session_tools(tmp_path: Path) -> None:
    key = KeyStore(tmp_path / "keys.json").create("agent", "untrusted")[1]
    tools, _ = anyio.run(session_calls, tmp_path, key, [])
    # every tool `hazmat mcp --help` names, but installs: the built-in policy has no index
    assert {tool.name for tool in tools.tools} == set(TOOLS) - {"install_packages"}
    for tool in tools.tools:  # the model reads what each parameter is for
        described = tool.input_schema["properties"]
        assert all(p.get("description") for p in described.values()), (tool.name, described)


def test_mcp_tools_take_what_http_takes_and_files_come_back_as_resources(
    tmp_path: Path,
) -> None:
    """Over the SDK's client: upload (text and bytes), a call with env, args, figure formats
    and a file given as base64, a failed call's exception, and a download as resources."""
    key = KeyStore(tmp_path / "keys.json").create("agent", "untrusted")[1]
    blob = bytes(range(256))
    code = (
        "import os, sys\n"
        "data = open('blob.bin', 'rb').read() + open('more.bin', 'rb').read()\n"
        "open('out.bin', 'wb').write(data[::-1])\n"
        "print(os.environ['GREETING'], sys.argv[1:], open('note.txt').read(), len(data))"
    )

    async def scenario() -> list[Any]:
        from mcp import ClientSession
        from mcp.client.stdio import stdio_client

        async with (
            stdio_client(params(tmp_path, key)) as (read, write),
            ClientSession(read, write) as client,
        ):
            await client.initialize()
            opened = await client.call_tool("open_session", {"language": "python"})
            sid = opened.structured_content["id"]
            upload = {
                "session_id": sid,
                "files": {"note.txt": "hello"},
                "files_base64": {"blob.bin": base64.b64encode(blob).decode()},
            }
            call = {
                "session_id": sid,
                "code": code,
                "env": {"GREETING": "hi"},
                "args": ["a", "b"],
                "files_base64": {"more.bin": base64.b64encode(b"\x00\x01").decode()},
                "figure_formats": ["svg"],
            }
            answers = [
                await client.call_tool("upload_files", upload),
                await client.call_tool("run_in_session", call),
                await client.call_tool("run_in_session", {"session_id": sid, "code": "1 / 0"}),
                await client.call_tool(
                    "download_files", {"session_id": sid, "names": ["out.bin", "note.txt"]}
                ),
                await client.call_tool("download_files", {"session_id": sid, "names": ["no"]}),
                await client.call_tool(
                    "install_packages", {"session_id": sid, "packages": ["seaborn"]}
                ),
            ]
            # 100,000 bytes of output: a head and a tail for the model, the rest kept in a file
            loop = "for n in range(1000):\n    print(f'{n:04d}' + 'y' * 95)"
            long = await client.call_tool("run_in_session", {"session_id": sid, "code": loop})
            kept = long.structured_content["stdout"].split("is the file ", 1)[1].split(":")[0]
            part = {"session_id": sid, "names": [kept], "offset": 50_000, "length": 100}
            answers += [long, await client.call_tool("download_files", part)]
            await client.call_tool("close_session", {"session_id": sid})
            return answers

    uploaded, ran, failed, downloaded, missing, refused, long, part = anyio.run(scenario)
    said = long.structured_content["stdout"]
    assert len(said) < 17_000 and said.startswith("0000y")
    assert said.endswith("0999" + "y" * 95 + "\n")
    assert "of stdout cut here" in said and "read it in parts with download_files" in said
    assert part.content[0].resource.text == "0500" + "y" * 95 + "\n"  # that part alone
    assert uploaded.structured_content == {"uploaded": ["blob.bin", "note.txt"]}
    assert ran.structured_content["stdout"] == "hi ['a', 'b'] hello 258\n", ran.content
    assert failed.structured_content["exception"]["name"] == "ZeroDivisionError"
    assert failed.structured_content["exception"]["value"] == "division by zero"
    out, note = downloaded.content
    assert base64.b64decode(out.resource.blob) == (blob + b"\x00\x01")[::-1]
    assert note.resource.text == "hello" and note.resource.uri.endswith("/files/note.txt")
    assert set(downloaded.structured_content["files_base64"]) == {"out.bin", "note.txt"}
    assert missing.is_error and "no" in missing.content[0].text
    # the built-in policy installs nothing: the model reads what to do instead
    assert refused.is_error and refused.structured_content["error"]["type"] == "InstallRefused"
    assert "use the standard library" in refused.content[0].text
