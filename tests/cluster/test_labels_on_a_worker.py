"""Nothing of one tenant reaches another through a label, on a cluster's worker too: two
tenants' runs under one `script` name go through the worker, whose audit log diffs each
tenant's code against its own only (the service and the in-process app:
tests/server/test_tenant_labels.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from workers import start_worker

from server_helpers import audit_records, start_server, stop_server

pytestmark = pytest.mark.docker


def test_one_label_from_two_tenants_through_a_worker(
    tmp_path: Path, redis_url: str, redis_client: object
) -> None:
    worker = start_worker(tmp_path, redis_url, "w1", 1)
    server = start_server(tmp_path / "service", "--redis", redis_url)
    try:
        for key, code in (("untrusted", "print('acme 1')\n"), ("trusted", "print('trusty')\n")):
            with server.client(key) as client:
                answer = client.post("/v1/runs", json={"code": code, "script": "main.py"})
            assert answer.status_code == 200, answer.text
        with server.client("untrusted") as client:
            client.post("/v1/runs", json={"code": "print('acme 2')\n", "script": "main.py"})
    finally:
        stop_server(server)
        worker.terminate()
        worker.communicate(timeout=120)
    started = {
        r["data"]["code"]: r["data"]
        for r in audit_records(tmp_path / "audit-w1")
        if r["kind"] == "run.started"
    }
    assert started["print('trusty')\n"]["diff"] is None  # it was -print('acme 1')+...
    assert "-print('acme 1')\n+print('acme 2')" in started["print('acme 2')\n"]["diff"]
    assert started["print('trusty')\n"]["origin"]["worker"] == "w1"
