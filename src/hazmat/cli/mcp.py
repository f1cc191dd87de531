"""`hazmat mcp`: MCP tools (run_code, assess_code) over stdio, for the tenant whose key is
HAZMAT_API_KEY (server/mcp_tools.py)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from hazmat.cli.common import key_store, policy

__all__ = ["add"]


def add(sub: Any) -> None:
    mcp = sub.add_parser(
        "mcp", help="serve MCP tools (run_code, assess_code) over stdio, for HAZMAT_API_KEY"
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
