"""The service from a program: a POST to `hazmat serve` over its unix socket (httpx), the same
run streamed as server-sent events, a session
(state and files kept between calls), and the MCP tools (a run and a session) through the
official SDK's client starting `hazmat mcp`. Used by examples/demo.sh.

    python examples/service.py SOCKET_PATH   (with HAZMAT_API_KEY set)
"""

from __future__ import annotations

import json
import os
import sys
import time
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
        streamed(client, key)
        in_a_session(client, key)


def streamed(client: httpx.Client, key: str) -> None:
    """The same endpoint as server-sent events: each line as the program prints it."""
    code = "import time\nfor n in range(3):\n    print('step', n, flush=True)\n    time.sleep(0.3)"
    headers = {"Authorization": f"Bearer {key}", "Accept": "text/event-stream"}
    began = time.monotonic()
    with client.stream("POST", "/v1/runs", headers=headers, json={"code": code}) as response:
        event = ""
        for line in response.iter_lines():
            if line.startswith("event: "):
                event = line[len("event: ") :]
            elif line.startswith("data: ") and event == "stdout":
                text = json.loads(line[len("data: ") :])["text"]
                print(f"  SSE at {time.monotonic() - began:4.1f} s: stdout {text!r}")
            elif line.startswith("data: ") and event == "result":
                outcome = json.loads(line[len("data: ") :])["outcome"]
                print(f"  SSE at {time.monotonic() - began:4.1f} s: result, {outcome}")


def in_a_session(client: httpx.Client, key: str) -> None:
    """A session: variables and files kept between calls, then closed."""
    auth = {"Authorization": f"Bearer {key}"}
    sid = client.post("/v1/sessions", headers=auth, json={"language": "python"}).json()["id"]
    at = f"/v1/sessions/{sid}"
    client.put(f"{at}/files", headers=auth, json={"files": {"prices.csv": "3\n5\n8\n"}})
    for code in ("prices = [int(x) for x in open('prices.csv')]", "sum(prices) / len(prices)"):
        result = client.post(f"{at}/runs", headers=auth, json={"code": code}).json()
        print(f"session {sid} ({code!r}): {result['outcome']}, stdout {result['stdout']!r}")
    closed = client.delete(at, headers=auth).json()
    print(f"session {sid}: ended ({closed['ended']})")


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
            opened = await session.call_tool("open_session", {"language": "python"})
            sid = (opened.structuredContent or {})["id"]
            for code in ("n = 20", "n * 2 + 2"):
                answer = await session.call_tool(
                    "run_in_session", {"session_id": sid, "code": code}
                )
                result = answer.structuredContent or {}
                print(f"MCP run_in_session ({code!r}): stdout {result.get('stdout')!r}")
            await session.call_tool("close_session", {"session_id": sid})


def main() -> None:
    over_http(sys.argv[1], os.environ["HAZMAT_API_KEY"])
    anyio.run(over_mcp)


if __name__ == "__main__":
    main()
