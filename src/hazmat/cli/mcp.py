"""`hazmat mcp`: hazmat's MCP tools over stdio, for the tenant whose key is HAZMAT_API_KEY
(server/mcp_tools.py: `TOOLS` below names them, and a test holds the two together; the
SDK is not imported for `--help`)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from hazmat.cli.common import key_store, policy

__all__ = ["TOOLS", "add"]

# the tools, as `tools/list` names them (install_packages only where the key's level installs)
TOOLS = (
    "run_code",
    "assess_code",
    "open_session",
    "run_in_session",
    "upload_files",
    "download_files",
    "install_packages",
    "pause_session",
    "resume_session",
    "fork_session",
    "close_session",
)


def add(sub: Any) -> None:
    mcp = sub.add_parser(
        "mcp",
        help="serve hazmat's MCP tools (code runs, sessions, files) over stdio, for "
        "HAZMAT_API_KEY",
        description="Serve hazmat's MCP tools over stdio for the tenant whose key is in "
        f"HAZMAT_API_KEY: {', '.join(TOOLS)} (install_packages where the key's trust level "
        "may install). An assistant starts it itself: "
        '{"command": "hazmat", "args": ["mcp"], "env": {"HAZMAT_API_KEY": "hzm_..."}}.',
    )
    mcp.add_argument("--policy", type=Path, metavar="FILE", help="policy file (YAML)")
    mcp.add_argument("--keys", type=Path, metavar="FILE", help="key store (default: see keys)")
    mcp.set_defaults(handler=_mcp)


def _mcp(args: argparse.Namespace) -> int:
    from hazmat.sandbox import Sandbox
    from hazmat.server.mcp_tools import serve_stdio

    with Sandbox(policy(args)) as sandbox:
        serve_stdio(sandbox, key_store(args))
    return 0
