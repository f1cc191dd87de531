"""An MCP client for test_mcp.py, run as its own process so that it can be killed mid-call: it
calls run_code over streamable HTTP with a progress callback, prints `running` once the first
progress notification comes (the program runs), and waits for the answer it never gets."""

from __future__ import annotations

import sys

import anyio
import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

CODE = "import time\nfor i in range(4):\n    print(i, flush=True)\n    time.sleep(0.5)\n"


async def main(url: str, key: str) -> None:
    said: list[str] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        if not said:
            said.append("running")
            print("running", flush=True)

    headers = {"Authorization": f"Bearer {key}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=120) as http,
        streamable_http_client(f"{url}/mcp", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        await session.call_tool("run_code", {"code": CODE}, progress_callback=progress)


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2])
