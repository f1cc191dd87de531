"""The load generator for test_load.py, run as its own process: N requests from C concurrent
clients (threads, one httpx client each), a fixed mix of languages and of programs that time
out, spread over two tenants. Prints one JSON summary: per request, the status and outcome."""

from __future__ import annotations

import json
import sys
from concurrent.futures import ThreadPoolExecutor

import httpx

MIX = [
    {"code": "print(1)\n", "language": "python"},
    {"code": "console.log(1)\n", "language": "javascript"},
    {"code": "while True: pass\n", "language": "python", "timeout": 1},
    {"code": "const n: number = 1;\nconsole.log(n)\n", "language": "typescript"},
    {"code": "import sys; print(sum(range(10**5))); sys.exit(2)\n", "language": "python"},
    {
        "code": 'package main\n\nimport "fmt"\n\nfunc main() {\n\tfmt.Println(1)\n}\n',
        "language": "go",
    },
]


def main() -> None:
    url, keys, total, clients = (
        sys.argv[1],
        sys.argv[2].split(","),
        int(sys.argv[3]),
        int(sys.argv[4]),
    )

    def one(i: int) -> dict[str, object]:
        key = keys[i % len(keys)]
        # idle connections dropped before the service's 5 s keep-alive ends them (a request
        # sent as it does would meet a reset)
        limits = httpx.Limits(keepalive_expiry=2.0)
        with httpx.Client(base_url=url, timeout=300, limits=limits) as client:
            answer = client.post(
                "/v1/runs", json=MIX[i % len(MIX)], headers={"Authorization": f"Bearer {key}"}
            )
        body = answer.json()
        return {
            "i": i,
            "status": answer.status_code,
            "outcome": body.get("outcome"),
            "retry_after": answer.headers.get("retry-after"),
            "error": body.get("error"),
        }

    with ThreadPoolExecutor(clients) as pool:
        results = list(pool.map(one, range(total)))
    print(json.dumps(results))


if __name__ == "__main__":
    main()
