"""What the MCP tools say and which the SDK's own client is shown, in-process over the recording
backend (tests/server/test_mcp.py drives them on the real engine): the session tools in each
language's words, `install_packages` only for a key whose level may install, and `hazmat mcp
--help` naming the tools the server has."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from mcp import Client

from hazmat import Sandbox
from hazmat.cli.mcp import TOOLS
from hazmat.languages import LANGUAGES
from hazmat.policy.file import parse_policy
from hazmat.server.mcp_tools import build_mcp
from hazmat.service.quotas import QuotaBook
from hazmat.service.tenant_keys import KeyStore
from hazmat.testing import RecordingBackend

INDEX = {"levels": ["unknown"], "python": {"index": "https://pypi.mirror.example/simple/"}}


def listed(tmp_path: Path, trust: str) -> dict[str, str]:
    """The tools the SDK's client lists for a key of `trust`: name -> description."""
    sandbox = Sandbox(parse_policy({"packages": INDEX}), backend=RecordingBackend())
    key, _ = KeyStore(tmp_path / "keys.json").create("acme", trust)
    server = build_mcp(sandbox, lambda ctx: key, QuotaBook())

    async def tools() -> dict[str, str]:
        async with Client(server) as client:
            return {t.name: t.description or "" for t in (await client.list_tools()).tools}

    try:
        return anyio.run(tools)
    finally:
        sandbox.close()


@pytest.mark.parametrize(("trust", "installs"), [("unknown", True), ("untrusted", False)])
def test_install_packages_is_listed_only_for_a_level_that_may_install(
    tmp_path: Path, trust: str, installs: bool
) -> None:
    names = set(listed(tmp_path, trust))
    assert ("install_packages" in names) is installs
    assert names | {"install_packages"} == set(TOOLS)  # what `hazmat mcp --help` names


def test_the_session_tools_say_what_each_language_keeps(tmp_path: Path) -> None:
    tools = listed(tmp_path, "unknown")
    for name in ("open_session", "run_in_session"):
        said = tools[name]
        for lang in LANGUAGES.values():
            assert (lang.keeps or lang.title) in said, (name, lang.name)
        assert "nothing more (each call runs as a new program)" in said
