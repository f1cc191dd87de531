"""The service from a program: a POST to `hazmat serve` over its unix socket (httpx), the same
run streamed as server-sent events, a session
(state and files kept between calls), and the MCP tools (a run and a session) through the
official SDK's client starting `hazmat mcp`. Used by examples/demo.sh.

    python examples/service.py SOCKET_PATH   (with HAZMAT_API_KEY set)

Each run is sent with its own time limit, and the clients wait that long plus a margin, so a
slow machine makes the example slow, not wrong. A service that does not answer in time, or
refuses a request, ends the example with one sentence on stderr and exit status 1.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

import anyio
import httpx
from mcp import ClientSession, MCPError, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import REQUEST_TIMEOUT, TextContent

# Each run's time limit, sent with it: the "strict" preset's 15 s, what the demo's untrusted
# key gets anyway (JavaScript and Python have no build step, so no compile budget to add).
RUN_TIMEOUT_S = 15.0
# What else an answer may wait for: a container's start (the service gives one 60 s to get
# ready; gVisor on a loaded machine is slow), a free slot, the audit record.
MARGIN_S = 120.0
WAIT_S = RUN_TIMEOUT_S + MARGIN_S  # the longest these clients wait for any answer


class Refused(Exception):
    """The service answered, but with an error instead of a result."""


def checked(response: httpx.Response) -> Any:
    """The answer's JSON; an error status (a bad request, a quota, no container) raises
    Refused with the service's own message."""
    if response.is_error:
        response.read()  # a refused stream is answered with plain JSON, not events
        message = response.json()["error"]["message"]
        raise Refused(f"{response.request.url.path}: HTTP {response.status_code}, {message}")
    return response.json()


def over_http(socket_path: str, key: str) -> None:
    transport = httpx.HTTPTransport(uds=socket_path)
    auth = {"Authorization": f"Bearer {key}"}
    with httpx.Client(
        transport=transport, base_url="http://hazmat", headers=auth, timeout=WAIT_S
    ) as client:
        code = "console.log([3, 1, 2].toSorted())"
        answer = client.post(
            "/v1/runs", json={"code": code, "language": "javascript", "timeout": RUN_TIMEOUT_S}
        )
        result = checked(answer)
        print(f"HTTP {answer.status_code}: {result['outcome']}, stdout {result['stdout']!r}")
        streamed(client)
        in_a_session(client)


def streamed(client: httpx.Client) -> None:
    """The same endpoint as server-sent events: each line as the program prints it. (The
    client's timeout applies between events; the service sends a comment every 15 s.)"""
    code = "import time\nfor n in range(3):\n    print('step', n, flush=True)\n    time.sleep(0.3)"
    body = {"code": code, "timeout": RUN_TIMEOUT_S}
    headers = {"Accept": "text/event-stream"}
    began = time.monotonic()
    with client.stream("POST", "/v1/runs", headers=headers, json=body) as response:
        if response.is_error:
            checked(response)  # raises Refused with the service's message
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
            elif line.startswith("data: ") and event == "error":
                raise Refused(json.loads(line[len("data: ") :])["error"]["message"])


def in_a_session(client: httpx.Client) -> None:
    """A session: variables and files kept between calls, then closed."""
    sid = checked(client.post("/v1/sessions", json={"language": "python"}))["id"]
    at = f"/v1/sessions/{sid}"
    checked(client.put(f"{at}/files", json={"files": {"prices.csv": "3\n5\n8\n"}}))
    for code in ("prices = [int(x) for x in open('prices.csv')]", "sum(prices) / len(prices)"):
        result = checked(client.post(f"{at}/runs", json={"code": code, "timeout": RUN_TIMEOUT_S}))
        print(f"session {sid} ({code!r}): {result['outcome']}, stdout {result['stdout']!r}")
    closed = checked(client.delete(at))
    print(f"session {sid}: ended ({closed['ended']})")


async def tool(session: ClientSession, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """Call an MCP tool: its structured result, or Refused with the tool's error."""
    answer = await session.call_tool(name, arguments)
    if answer.is_error:
        said = " ".join(part.text for part in answer.content if isinstance(part, TextContent))
        raise Refused(f"MCP tool {name}: {' '.join(said.split())}")
    return answer.structured_content or {}


async def over_mcp() -> None:
    hazmat = os.path.join(os.path.dirname(sys.executable), "hazmat")
    params = StdioServerParameters(command=hazmat, args=["mcp"], env=dict(os.environ))
    wait = WAIT_S  # for every request of the session (the SDK: forever)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, read_timeout_seconds=wait) as session:
            await session.initialize()
            tools = await session.list_tools()
            print("MCP tools:", ", ".join(tool.name for tool in tools.tools))
            code = "import statistics\nprint(statistics.mean([1, 2, 6]))\n"
            result = await tool(session, "run_code", {"code": code, "timeout": RUN_TIMEOUT_S})
            print(f"MCP run_code: {result.get('outcome')}, stdout {result.get('stdout')!r}")
            sid = (await tool(session, "open_session", {"language": "python"}))["id"]
            for code in ("n = 20", "n * 2 + 2"):
                call = {"session_id": sid, "code": code, "timeout": RUN_TIMEOUT_S}
                result = await tool(session, "run_in_session", call)
                print(f"MCP run_in_session ({code!r}): stdout {result.get('stdout')!r}")
            await tool(session, "close_session", {"session_id": sid})


def problem(exc: BaseException) -> str | None:
    """One sentence for a service that did not answer (in time) or refused; None otherwise."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]  # the MCP client's task groups wrap what they raise
    timed_out = isinstance(exc, MCPError) and exc.code == REQUEST_TIMEOUT
    if timed_out or isinstance(exc, httpx.TimeoutException):
        return (
            f"the service did not answer within {WAIT_S:g} s ({RUN_TIMEOUT_S:g} s for the run, "
            f"{MARGIN_S:g} s for its container's start and a slot); is the machine overloaded?"
        )
    if isinstance(exc, httpx.TransportError | MCPError):
        return f"no answer from the service ({type(exc).__name__}: {exc}); is it running?"
    if isinstance(exc, Refused):
        return f"the service refused a request: {exc}"
    return None


def main() -> None:
    try:
        over_http(sys.argv[1], os.environ["HAZMAT_API_KEY"])
        anyio.run(over_mcp)
    except Exception as exc:
        said = problem(exc)
        if said is None:
            raise
        sys.exit(f"hazmat example: {said}")  # to stderr, exit status 1


if __name__ == "__main__":
    main()
