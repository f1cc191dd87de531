"""E2B's SDK against hazmat's E2B protocol, beside hazmat's own HTTP API, side by side in one run:
`Sandbox.create()` + `run_code("print(1)")` + `kill()` through `e2b-code-interpreter` (its
default template, `code-interpreter-v1`: a Python session of the `python-data` image), and
the same through `/v1/sessions` (open with that image, one run, close) with httpx, the client
hazmat's own docs show. One `hazmat serve` on loopback, a key of the level asked for; the two
paths alternate, N times each after one warm-up of each.

    .venv/bin/python benchmarks/e2b_sdk.py --trust unknown --write     # runc
    .venv/bin/python benchmarks/e2b_sdk.py --trust untrusted --write   # gVisor
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import httpx
from docs_section import write_section
from serving import serve

from hazmat.policy import Policy, TrustLevel
from hazmat.service.tenant_keys import Quotas


def through_e2b() -> None:
    from e2b_code_interpreter import Sandbox

    sbx = Sandbox.create()
    out = sbx.run_code("print(1)")
    assert out.logs.stdout == ["1\n"], out
    sbx.kill()


def through_hazmat(client: httpx.Client) -> None:
    opened = client.post("/v1/sessions", json={"language": "python", "image": "python-data"})
    opened.raise_for_status()
    sid = opened.json()["id"]
    ran = client.post(f"/v1/sessions/{sid}/runs", json={"code": "print(1)"})
    assert ran.json()["stdout"] == "1\n", ran.text
    client.delete(f"/v1/sessions/{sid}").raise_for_status()


def timed(work: Callable[[], None]) -> float:
    began = time.perf_counter()
    work()
    return (time.perf_counter() - began) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--trust", default="unknown", choices=[t.value for t in TrustLevel])
    parser.add_argument("-n", type=int, default=10)
    parser.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    args = parser.parse_args()
    runtime = Policy().settings(TrustLevel(args.trust)).runtime.value
    with tempfile.TemporaryDirectory() as tmp:
        server, url, key = serve(Path(tmp), args.trust, Quotas(per_minute=100_000))
        os.environ.update(E2B_API_URL=f"{url}/e2b", E2B_SANDBOX_URL=f"{url}/e2b",
                          E2B_API_KEY=key)
        headers = {"Authorization": f"Bearer {key}"}
        try:
            with httpx.Client(base_url=url, headers=headers, timeout=120) as client:
                ours = lambda: through_hazmat(client)  # noqa: E731
                through_e2b(), ours()  # warm: imports, connections, the image's page cache
                e2b_ms, ours_ms = [], []
                for _ in range(args.n):
                    e2b_ms.append(timed(through_e2b))
                    ours_ms.append(timed(ours))
        finally:
            server.terminate()
            server.wait(120)
    e2b_median, ours_median = statistics.median(e2b_ms), statistics.median(ours_ms)
    row = (
        f"| {runtime} | {args.n} | {e2b_median:,.0f} | {min(e2b_ms):,.0f}-{max(e2b_ms):,.0f} | "
        f"{ours_median:,.0f} | {min(ours_ms):,.0f}-{max(ours_ms):,.0f} | "
        f"{e2b_median / ours_median:.2f} |"
    )
    print(row)
    if args.write:
        write(row, runtime, args)


def write(row: str, runtime: str, args: argparse.Namespace) -> None:
    text = (
        "| runtime | rounds | E2B SDK, median ms | range | hazmat's /v1/sessions, median ms | "
        "range | ratio |\n|---|---|---|---|---|---|---|\n"
        f"{row}\n\nMeasured {datetime.now(UTC):%Y-%m-%d} on this machine ({os.cpu_count()} "
        f"cores), one `hazmat serve`, a key at `{args.trust}`, the two paths alternating "
        "(`benchmarks/e2b_sdk.py`): `Sandbox.create()` + `run_code(\"print(1)\")` + `kill()` "
        "through `e2b-code-interpreter`, and `POST /v1/sessions` (python-data) + one run + "
        "`DELETE` through httpx. Both open a fresh session container each round: the start of "
        "that container is most of either figure."
    )
    write_section(f"e2b-{runtime}", f"E2B's SDK on hazmat ({runtime})", text)


if __name__ == "__main__":
    main()
