"""Output as it comes: when a program's first line reaches the caller, against when its result
does, in process (`on_output`) and through `hazmat serve` as server-sent events; and what
streaming costs a short run. Medians, under runc and runsc.

The program prints a line, works for about half a second, and prints another. One Sandbox
(warm pool) and one server (its own warm pool, TCP on loopback); the methods run in a new
random order every round.

    .venv/bin/python benchmarks/streaming.py --runs 20 --write
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import httpx
from docs_section import write_section
from serving import serve

import hazmat

WARMUP = 3
WORK = "import time\nprint('first', flush=True)\ntime.sleep(0.5)\nprint('done')\n"
SHORT = "print(1)"
Timing = tuple[float, float]  # (first output, result) in ms; first output 0 when not streamed


def in_process(sandbox: hazmat.Sandbox, code: str, runtime: str, stream: bool) -> Timing:
    began = time.perf_counter()
    first: list[float] = []

    def seen(stream_name: str, data: bytes) -> None:
        if not first:
            first.append((time.perf_counter() - began) * 1000)

    result = sandbox.run(code, runtime=runtime, trust="trusted", on_output=seen if stream else None)
    total = (time.perf_counter() - began) * 1000
    if result.outcome is not hazmat.Outcome.OK:
        raise SystemExit(f"in process: {result.outcome} {result.error}")
    return (first[0] if first else 0.0), total


def over_http(client: httpx.Client, code: str, runtime: str, stream: bool) -> Timing:
    body = {"code": code, "runtime": runtime}
    began = time.perf_counter()
    if not stream:
        answer = client.post("/v1/runs", json=body).json()
        if answer.get("outcome") != "ok":
            raise SystemExit(f"http: {answer}")
        return 0.0, (time.perf_counter() - began) * 1000
    first = 0.0
    headers = {"Accept": "text/event-stream"}
    with client.stream("POST", "/v1/runs", json=body, headers=headers) as response:
        for line in response.iter_lines():
            if line.startswith("event: stdout") and not first:
                first = (time.perf_counter() - began) * 1000
            if (
                line.startswith("data: ")
                and '"outcome"' in line
                and json.loads(line[6:])["outcome"] != "ok"
            ):
                raise SystemExit(f"sse: {line}")
    return first, (time.perf_counter() - began) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, hazmat.Sandbox() as sandbox:
        server, url, key = serve(Path(tmp), "trusted")
        headers = {"Authorization": f"Bearer {key}"}
        try:
            with httpx.Client(base_url=url, headers=headers, timeout=120) as client:
                times = measure(args.runs, sandbox, client)
        finally:
            server.terminate()
            server.wait(timeout=120)
    rows = []
    for name, got in times.items():
        first = [f for f, _ in got if f]
        shown = f"{statistics.median(first):.1f}" if first else "—"
        rows.append(f"| {name} | {shown} | {statistics.median([t for _, t in got]):.1f} |")
    text = "\n".join(
        [
            f"`benchmarks/streaming.py --runs {args.runs}`, {datetime.now(UTC):%Y-%m-%d}: the "
            "program prints `first`, works 0.5 s, prints `done`; a short run is `print(1)`. From "
            "the call to the first output chunk and to the result, end to end (assessment and "
            "audit included), warm pools, the methods in a new random order every round "
            f"({WARMUP} warm-up rounds not counted). HTTP is httpx over TCP on loopback to "
            "`hazmat serve`.",
            "",
            "| how | first output, median ms | result, median ms |",
            "|---|---:|---:|",
            *rows,
        ]
    )
    print(text)
    if args.write:
        write_section("streaming", "Streaming: output as it comes", text)


def measure(runs: int, sandbox: hazmat.Sandbox, client: httpx.Client) -> dict[str, list[Timing]]:
    methods: dict[str, Callable[[], Timing]] = {}
    for runtime in ("runc", "runsc"):
        for label, code in (("0.5 s program", WORK), ("`print(1)`", SHORT)):
            for stream in (True, False):
                how = "streamed" if stream else "not streamed"
                methods[f"{label}, in process, {how} ({runtime})"] = (
                    lambda c=code, r=runtime, s=stream: in_process(sandbox, c, r, s)
                )
                methods[f"{label}, HTTP, {'events' if stream else 'JSON'} ({runtime})"] = (
                    lambda c=code, r=runtime, s=stream: over_http(client, c, r, s)
                )
    times: dict[str, list[Timing]] = {name: [] for name in methods}
    order = list(methods.items())
    shuffle = random.Random(0).shuffle
    for round_ in range(WARMUP + runs):
        # a new order every round: no method always follows the same one (a run right after
        # another of the same kind can find that kind's warm pool still refilling)
        shuffle(order)
        for name, call in order:
            got = call()
            if round_ >= WARMUP:
                times[name].append(got)
        print(f"round {round_ + 1}/{WARMUP + runs}", file=sys.stderr)
    return times


if __name__ == "__main__":
    main()
