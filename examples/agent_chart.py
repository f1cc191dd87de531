"""What an AI assistant does with hazmat: load a CSV in a session, look at it, plot it, and get
the chart back as a PNG, over the HTTP API and over MCP. Used by examples/demo.sh.

    python examples/agent_chart.py SOCKET_PATH OUT_DIR   (with HAZMAT_API_KEY set)

The session runs in the data image (pandas, matplotlib). Each call's charts and tables come
back as displays (docs/api.md, "Displays"): over HTTP in the result's `displays` (base64 for
images), over MCP as an image the assistant sees. The PNGs are written to OUT_DIR.
"""

from __future__ import annotations

import base64
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import ImageContent, TextContent

HERE = Path(__file__).parent
TIMEOUT_S = 15.0  # each call's time limit (the strict preset's)
WAIT_S = TIMEOUT_S + 120.0  # and what a client waits: a gVisor start on a loaded machine
# the assistant's three turns: look at the data, summarise it, chart it
TURNS = (
    "import pandas as pd\nsales = pd.read_csv('sales.csv')\nsales.head(3)",
    "by_region = sales.groupby('region')['units'].sum()\nprint(by_region.to_string())",
    "import matplotlib.pyplot as plt\n"
    "ax = by_region.plot.bar(title='Units by region', figsize=(4, 3))\n"
    "ax.set_ylabel('units')\nplt.show()",
)


def over_http(socket_path: str, key: str, out: Path) -> None:
    transport = httpx.HTTPTransport(uds=socket_path)
    headers = {"Authorization": f"Bearer {key}"}
    with httpx.Client(
        transport=transport, base_url="http://hazmat", headers=headers, timeout=WAIT_S
    ) as client:
        opened = _ok(client.post("/v1/sessions", json={"image": "python-data"}))
        at = f"/v1/sessions/{opened['id']}"
        try:
            csv = (HERE / "sales.csv").read_text()
            _ok(client.put(f"{at}/files", json={"files": {"sales.csv": csv}}))
            for number, code in enumerate(TURNS, 1):
                result = _ok(client.post(f"{at}/runs", json={"code": code, "timeout": TIMEOUT_S}))
                if result["outcome"] != "ok":
                    raise SystemExit(f"turn {number} failed: {result['error']}")
                for shown in result["displays"]:
                    _say_http(number, shown, out)
        finally:
            client.delete(at)


def _say_http(turn: int, shown: dict[str, str], out: Path) -> None:
    if "image/png" in shown:
        path = out / f"http-turn{turn}.png"
        path.write_bytes(base64.b64decode(shown["image/png"]))
        print(f"HTTP turn {turn}: a chart, {path.stat().st_size} bytes of PNG -> {path}")
    else:
        kinds = ", ".join(shown)
        first = shown.get("text/plain", "").splitlines()[:1]
        print(f"HTTP turn {turn}: a display ({kinds}): {first[0] if first else ''}")


async def over_mcp(out: Path) -> None:
    hazmat = os.path.join(os.path.dirname(sys.executable), "hazmat")
    params = StdioServerParameters(command=hazmat, args=["mcp"], env=dict(os.environ))
    async with (
        stdio_client(params) as (read, write),
        ClientSession(read, write, read_timeout_seconds=WAIT_S) as session,
    ):
        await session.initialize()
        opened = await _tool(session, "open_session", {"image": "python-data"})
        sid = opened.structured_content["id"]
        csv = (HERE / "sales.csv").read_text()
        setup = f"open('sales.csv', 'w').write({csv!r})\n"
        for number, code in enumerate(TURNS, 1):
            call = {"session_id": sid, "code": (setup if number == 1 else "") + code}
            answer = await _tool(session, "run_in_session", call | {"timeout": TIMEOUT_S})
            for part in answer.content[1:]:  # the summary first, then each display
                if isinstance(part, ImageContent):
                    path = out / f"mcp-turn{number}.png"
                    path.write_bytes(base64.b64decode(part.data))
                    print(f"MCP turn {number}: an image ({part.mime_type}) -> {path}")
                elif isinstance(part, TextContent):
                    print(f"MCP turn {number}: text: {part.text.splitlines()[0]}")
        await _tool(session, "close_session", {"session_id": sid})


async def _tool(session: ClientSession, name: str, arguments: dict[str, Any]) -> Any:
    answer = await session.call_tool(name, arguments)
    if answer.is_error:
        said = " ".join(p.text for p in answer.content if isinstance(p, TextContent))
        raise SystemExit(f"MCP tool {name} refused: {said}")
    return answer


def _ok(response: httpx.Response) -> Any:
    if response.is_error:
        raise SystemExit(
            f"{response.request.url.path}: HTTP {response.status_code} {response.text}"
        )
    return response.json()


def main() -> None:
    out = Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    over_http(sys.argv[1], os.environ["HAZMAT_API_KEY"], out)
    anyio.run(over_mcp, out)
    charts = sorted(p.name for p in out.glob("*.png"))
    if charts != ["http-turn3.png", "mcp-turn3.png"]:
        raise SystemExit(f"expected one chart over each front-end, got {charts}")


if __name__ == "__main__":
    main()
