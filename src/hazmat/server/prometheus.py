"""The service's Prometheus metrics, in a registry of its own (no process-wide globals).

Counted here: requests by endpoint and status, runs by outcome and language with their latency,
runs in progress and waiting for a slot; and, as `hazmat_backend_info{tier=...}`, which tier
makes the sandboxes (docker or oci). The sandbox's own totals (pool hits and misses) are read
from `Sandbox.metrics()` at scrape time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, Info, generate_latest
from prometheus_client.core import CounterMetricFamily, Metric
from prometheus_client.registry import Collector

from hazmat.metrics import MetricsSnapshot
from hazmat.models import ExecutionResult

__all__ = ["ServiceMetrics"]

# run latency buckets, seconds: warm runs are tens of ms, Go under runsc some seconds
BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300)


class ServiceMetrics:
    def __init__(self, snapshot: Callable[[], MetricsSnapshot], tier: str | None = None) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        backend = Info("hazmat_backend", "What makes the sandboxes (docker, oci)", registry=r)
        backend.info({"tier": tier or "none"})
        self.requests = Counter(
            "hazmat_http_requests",
            "HTTP requests by endpoint and status",
            ["endpoint", "status"],
            registry=r,
        )
        self.runs = Counter(
            "hazmat_runs", "Runs by outcome and language", ["outcome", "language"], registry=r
        )
        self.latency = Histogram(
            "hazmat_run_seconds",
            "Run latency, end to end in the service",
            ["language"],
            buckets=BUCKETS,
            registry=r,
        )
        self.in_progress = Gauge("hazmat_runs_in_progress", "Runs executing now", registry=r)
        self.queued = Gauge(
            "hazmat_runs_queued", "Runs admitted and waiting for a free slot", registry=r
        )
        r.register(_PoolCollector(snapshot))

    def ran(self, result: ExecutionResult, seconds: float) -> None:
        self.runs.labels(result.outcome.value, result.language).inc()
        self.latency.labels(result.language).observe(seconds)

    def exposition(self) -> bytes:
        return generate_latest(self.registry)


class _PoolCollector(Collector):
    """The warm pool's hits and misses, from the sandbox's own counters."""

    def __init__(self, snapshot: Callable[[], MetricsSnapshot]) -> None:
        self._snapshot = snapshot

    def collect(self) -> Iterator[Metric]:
        snap = self._snapshot()
        family = CounterMetricFamily(
            "hazmat_pool_runs",
            "Runs served by a warm container (hit) or a cold start (miss)",
            labels=["result"],
        )
        family.add_metric(["hit"], snap.pool_hits)
        family.add_metric(["miss"], snap.pool_misses)
        yield family
