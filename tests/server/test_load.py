"""A bounded load test from a second process: 200 requests from 16 concurrent clients, mixed
languages, some timing out, two tenants (one with a small concurrent quota). Every request gets
a result or a 429; every run has its started and finished records; the server's memory does not
grow with the requests; no container is left."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from hazmat.service.tenant_keys import KeyStore, Quotas
from server_helpers import start_server, stop_server

pytestmark = [pytest.mark.docker, pytest.mark.slow]

HERE = Path(__file__).resolve().parent


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def load(url: str, keys: list[str], total: int) -> list[dict[str, object]]:
    done = subprocess.run(
        [sys.executable, str(HERE / "load_client.py"), url, ",".join(keys), str(total), "16"],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr
    return list(json.loads(done.stdout))


def test_load_from_a_second_process(tmp_path: Path) -> None:
    server = start_server(tmp_path)
    try:
        store = KeyStore(server.keys_path)
        big = store.create("big", "unknown", Quotas(concurrent=16, per_minute=10_000))[1]
        small = store.create("small", "unknown", Quotas(concurrent=2, per_minute=10_000))[1]
        load(server.url, [big], 48)  # warm-up: pools, analysers, allocator
        before = rss_kb(server.process.pid)
        results = load(server.url, [big, small], 200)
        after = rss_kb(server.process.pid)
        records = server.audit_records()
    finally:
        stop_server(server)
    statuses = Counter(r["status"] for r in results)
    assert set(statuses) <= {200, 429}, [r for r in results if r["status"] not in (200, 429)]
    assert statuses[200] >= 100, statuses
    refused = [r for r in results if r["status"] == 429]
    assert all(r["retry_after"] and r["i"] % 2 == 1 for r in refused)  # only the small tenant
    outcomes = Counter(r["outcome"] for r in results if r["status"] == 200)
    assert outcomes["timeout"] > 0 and outcomes["ok"] > 0 and outcomes["error"] > 0, outcomes
    assert "infra_error" not in outcomes, outcomes
    started = {r["data"]["run"] for r in records if r["kind"] == "run.started"}
    finished = {r["data"]["run"] for r in records if r["kind"] == "run.finished"}
    assert started == finished and len(started) == 48 + statuses[200]
    # flat: 200 more requests do not leave the server holding more (a leak of even 100 KB per
    # request would show as 20 MB)
    assert after - before < 20_000, (before, after)
