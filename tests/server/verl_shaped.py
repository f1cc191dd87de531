"""verl's code-reward request to a SandboxFusion URL, in the shape its documentation and its
`check_correctness` give (verl's utils/reward_score/sandbox_fusion/; verl itself is too heavy
to install, and no code of it is copied here): one POST of JSON per test case with
`compile_timeout`, `run_timeout`, `code`, `stdin`, `language`, `files`, `fetch_files` and
`memory_limit_MB`, a deadline of compile_timeout + run_timeout + 10 s, retried on a 504 only
(3 attempts, 1 s then 2 s apart); every other failure scores -1. A test case scores True or
False (stdout against the expected output, trailing newlines aside), -2 (a runtime error), -3
(a time limit) or -4 (a compile error).

As a program (the load of benchmarks/protocols.py): `verl_shaped.py URL TASKS.jsonl N C`
sends N requests, C in flight, each a line of TASKS.jsonl (`code`, `stdin`, `expected`) in
turn, and prints one JSON summary: the scores counted, the 504s retried, seconds taken."""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx

ATTEMPTS = 3
CLIENT_SLACK_S = 10


def reward(
    client: httpx.Client,
    url: str,
    code: str,
    stdin: str = "",
    expected: str = "",
    *,
    timeout: int = 10,
    language: str = "python",
) -> tuple[bool | int, dict[str, Any] | None, int]:
    """(the score, the answer's JSON, the 504s it met) of one test case; a -1 that had no
    answer to score has `{"failure": why}` for its JSON."""
    payload = {
        "compile_timeout": timeout,
        "run_timeout": timeout,
        "code": code,
        "stdin": stdin,
        "language": language,
        "files": {},
        "fetch_files": [],
        "memory_limit_MB": 1024,
    }
    busy = 0
    for attempt in range(ATTEMPTS):
        try:
            answer = client.post(url, json=payload, timeout=2 * timeout + CLIENT_SLACK_S)
        except httpx.HTTPError as exc:
            return -1, {"failure": type(exc).__name__}, busy
        if answer.status_code == 504:
            busy += 1
            if attempt < ATTEMPTS - 1:
                time.sleep(attempt + 1)  # verl's back-off between its attempts
            continue
        if answer.status_code != 200:
            return -1, {"failure": f"HTTP {answer.status_code}: {answer.text[:200]}"}, busy
        data = answer.json()
        return score(data, expected), data, busy
    return -1, {"failure": f"{ATTEMPTS} 504s"}, busy


def score(data: dict[str, Any], expected: str) -> bool | int:
    """verl's reading of a `RunCodeResponse`."""
    built, ran = data.get("compile_result") or {}, data.get("run_result") or {}
    if data.get("status") == "Success":
        if ran.get("status") != "Finished":
            return -1
        return str(ran.get("stdout") or "").rstrip("\n") == expected.rstrip("\n")
    if data.get("status") != "Failed":
        return -1
    if built and (
        built.get("status") in ("Error", "TimeLimitExceeded") or built.get("return_code") != 0
    ):
        return -4
    if not ran:
        return -1
    if ran.get("status") == "TimeLimitExceeded":
        return -3
    if ran.get("status") == "Error" or ran.get("return_code") != 0:
        return -2
    return -1


def main() -> None:
    url, tasks_path, total, in_flight = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    with open(tasks_path) as f:
        tasks = [json.loads(line) for line in f]
    scores: Counter[str] = Counter()
    failures: Counter[str] = Counter()
    retried = 0
    limits = httpx.Limits(max_connections=in_flight, keepalive_expiry=2.0)

    with httpx.Client(limits=limits) as client:

        def one(i: int) -> tuple[bool | int, int, str | None]:
            task = tasks[i % len(tasks)]
            got, data, busy = reward(client, url, task["code"], task["stdin"], task["expected"])
            why = None if got != -1 else str((data or {}).get("failure") or data)[:300]
            return got, busy, why

        began = time.monotonic()
        with ThreadPoolExecutor(in_flight) as pool:
            for got, busy, why in pool.map(one, range(total)):
                scores[str(got)] += 1
                retried += busy
                if why is not None:
                    failures[why] += 1
        took = time.monotonic() - began
    summary = {"scores": dict(scores), "retried_504": retried, "seconds": took}
    print(json.dumps({**summary, "failures": dict(failures.most_common(5))}))


if __name__ == "__main__":
    main()
