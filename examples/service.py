"""The service from a program: a POST to `hazmat serve` over its unix socket (httpx), and the
MCP tools through the official SDK's client starting `hazmat mcp`. Used by examples/demo.sh.

    python examples/service.py SOCKET_PATH   (with HAZMAT_API_KEY set)
"""

from __future__ import annotations

import os
import sys
import warnings

import anyio
import httpx

# the SDK's settings model warns about its own annotations when it is imported
warnings.filterwarnings("ignore", message=".*has an incomplete definition")
from mcp import ClientSession, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402


def over_http(socket_path: str, key: str) -> None:
    transport = httpx.HTTPTransport(uds=socket_path)
    with httpx.Client(transport=transport, base_url="http://hazmat") as client:
        answer = client.post(
            "/v1/runs",
            headers={"Authorization": f"Bearer {key}"},
            json={"code": "console.log([3, 1, 2].toSorted())", "language": "javascript"},
        )
    result = answer.json()
    print(f"HTTP {answer.status_code}: {result['outcome']}, stdout {result['stdout']!r}")


async def over_mcp() -> None:
    hazmat = os.path.join(os.path.dirname(sys.executable), "hazmat")
    params = StdioServerParameters(command=hazmat, args=["mcp"], env=dict(os.environ))
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = await session.list_tools()
            print("MCP tools:", ", ".join(tool.name for tool in tools.tools))
            answer = await session.call_tool(
                "run_code", {"code": "import statistics\nprint(statistics.mean([1, 2, 6]))\n"}
            )
            result = answer.structuredContent or {}
            print(f"MCP run_code: {result.get('outcome')}, stdout {result.get('stdout')!r}")


def main() -> None:
    over_http(sys.argv[1], os.environ["HAZMAT_API_KEY"])
    anyio.run(over_mcp)


if __name__ == "__main__":
    main()
