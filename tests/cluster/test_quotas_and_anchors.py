"""Quotas that hold across services, and the service's anchors of the workers' checkpoints,
against a real Redis (no engine needed)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from hazmat import QuotaExceeded
from hazmat.audit.log import AuditLog
from hazmat.cluster.anchors import AnchorCollector
from hazmat.cluster.keys import CHECKPOINTS, audit_key
from hazmat.cluster.redis_quotas import RedisQuotaBook
from hazmat.service.tenant_keys import Quotas


def test_a_tenants_quota_holds_across_two_services(redis_client: Any) -> None:
    first, second = RedisQuotaBook(redis_client), RedisQuotaBook(redis_client)
    quotas = Quotas(concurrent=2, per_minute=3, max_request_bytes=1 << 20)
    with first.admit("acme", quotas), second.admit("acme", quotas):
        assert first.active("acme") == 2
        with pytest.raises(QuotaExceeded, match="already has 2 run"):
            second.admit("acme", quotas).__enter__()
        with first.admit("other", quotas):  # another tenant counts apart
            pass
    assert second.active("acme") == 0
    assert (first.started("acme"), second.started("other")) == (2, 1)  # in the last minute
    with second.admit("acme", quotas):
        pass
    with pytest.raises(QuotaExceeded, match="started 3 runs in the cluster") as refused:
        first.admit("acme", quotas).__enter__()
    assert 1 <= refused.value.retry_after_s <= 60


def test_a_dead_services_lease_stops_counting_when_it_expires(redis_client: Any) -> None:
    quotas = Quotas(concurrent=2, per_minute=100, max_request_bytes=1 << 20)
    # never left: its service died holding it (kept referenced, or collecting the generator
    # would run its `finally` and give the lease back)
    held = RedisQuotaBook(redis_client, lease_s=1.0).admit("acme", quotas)
    held.__enter__()
    live = RedisQuotaBook(redis_client)
    with live.admit("acme", quotas):  # a live lease keeps the tenant's running set in Redis
        assert live.active("acme") == 2
        with pytest.raises(QuotaExceeded, match="already has 2 run"):  # until it expires
            live.admit("acme", quotas).__enter__()
        deadline = time.monotonic() + 10
        while live.active("acme") != 1:
            assert time.monotonic() < deadline, "the dead service's lease never expired"
            time.sleep(0.1)
        with live.admit("acme", quotas):  # its slot is free again
            assert live.active("acme") == 2
    assert live.active("acme") == 0


def worker_log(tmp: Path, name: str, records: int) -> AuditLog:
    log = AuditLog(tmp / name, checkpoint_every=1)
    for i in range(records):
        log.append("run.started", {"n": i})
    return log


def publish(client: Any, worker: str, log: AuditLog) -> None:
    client.set(audit_key(worker), (log.dir / "pubkey").read_text())
    client.xadd(CHECKPOINTS, {"worker": worker, "note": (log.dir / "checkpoint").read_text()})


def verify(log: Path, anchor: Path) -> dict[str, Any]:
    argv = ["audit", "verify", "--log", str(log), "--json"]
    argv += ["--pubkey", str(anchor / "pubkey"), "--anchor", str(anchor)]
    done = subprocess.run([sys.executable, "-m", "hazmat", *argv], capture_output=True, text=True)
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def test_the_service_anchors_each_workers_checkpoints(tmp_path: Path, redis_client: Any) -> None:
    anchors = tmp_path / "anchors"
    collector = AnchorCollector(redis_client, anchors)
    log = worker_log(tmp_path, "w1", 3)
    publish(redis_client, "w1", log)
    publish(redis_client, "w1", log)  # the same checkpoint twice is kept once
    log.append("run.started", {"n": 3})
    publish(redis_client, "w1", log)
    assert collector.collect(block_ms=None) == 2
    assert len((anchors / "w1" / "checkpoints").read_text().splitlines()) == 2
    assert collector.collect(block_ms=None) == 0  # resumes after what it copied
    log.close()
    assert verify(log.dir, anchors / "w1")["verdict"] == "intact"


def test_refused_checkpoints_and_a_log_rewritten_after_anchoring(
    tmp_path: Path, redis_client: Any
) -> None:
    anchors = tmp_path / "anchors"
    collector = AnchorCollector(redis_client, anchors)
    log = worker_log(tmp_path, "w1", 4)
    publish(redis_client, "w1", log)
    assert collector.collect(block_ms=None) == 1
    impostor = worker_log(tmp_path / "elsewhere", "w1", 9)  # same name, another key
    publish(redis_client, "w1", impostor)  # also replaces the published key: the pin holds
    redis_client.xadd(CHECKPOINTS, {"worker": "../../etc", "note": "x"})
    assert collector.collect(block_ms=None) == 0 and collector.refused == 2
    log.close()
    impostor.close()
    # the worker's log replaced by another one, with its own key and checkpoints, after
    # anchoring: whole on its own, caught only by the service's anchor and pinned key
    shutil.rmtree(log.dir)
    shutil.copytree(impostor.dir, log.dir)
    alone = subprocess.run(
        [sys.executable, "-m", "hazmat", "audit", "verify", "--log", str(log.dir), "--json"],
        capture_output=True,
        text=True,
    )
    assert json.loads(alone.stdout)["verdict"] == "intact"
    assert verify(log.dir, anchors / "w1")["verdict"] == "tampered"


def test_entries_that_are_not_utf8_are_refused_and_passed_over(
    tmp_path: Path, redis_client: Any
) -> None:
    """A worker name, a note or a published verifier key of bytes that are not UTF-8: each is
    refused (it stopped the collector at that entry for ever: UnicodeDecodeError, retried)."""
    anchors = tmp_path / "anchors"
    collector = AnchorCollector(redis_client, anchors)
    log = worker_log(tmp_path, "w1", 2)
    redis_client.xadd(CHECKPOINTS, {"worker": b"w\xff", "note": b"x"})
    redis_client.xadd(CHECKPOINTS, {"worker": "w1", "note": b"\xff\xfe"})
    redis_client.set(audit_key("w2"), b"\xff" * 64)
    redis_client.xadd(CHECKPOINTS, {"worker": "w2", "note": (log.dir / "checkpoint").read_text()})
    publish(redis_client, "w1", log)  # after them: still anchored
    assert collector.collect(block_ms=None) == 1
    assert collector.refused == 3
    assert not (anchors / "w2").exists()
    log.close()
