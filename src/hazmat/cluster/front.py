"""What `hazmat serve --redis URL` adds to the service: runs go to the workers (dispatch.py),
tenants' quotas are counted in Redis across services (quotas.py), and the workers' signed
checkpoints are copied into anchors of the service's (anchors.py)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from hazmat.cluster.anchors import AnchorCollector
from hazmat.cluster.dispatch import Dispatcher
from hazmat.cluster.quotas import RedisQuotaBook

__all__ = ["ClusterOptions", "cluster_front"]


@dataclass(frozen=True)
class ClusterOptions:
    url: str
    anchors: Path  # where the workers' checkpoints are kept, one folder per worker
    on_lost: str = "report"  # or "retry": a run whose worker died (docs/scale.md)
    attempts: int = 3  # with "retry": attempts in all


@contextlib.contextmanager
def cluster_front(
    options: ClusterOptions, lease_s: float
) -> Iterator[tuple[Dispatcher, RedisQuotaBook]]:
    """The dispatcher and the quota book, with the anchor collector running meanwhile.
    `lease_s`: how long a run's quota lease outlives a service that died holding it."""
    dispatcher = Dispatcher(options.url, options.on_lost, options.attempts)
    quotas = RedisQuotaBook(dispatcher.redis, lease_s)
    collector = AnchorCollector(dispatcher.redis, options.anchors)
    collector.start()
    try:
        yield dispatcher, quotas
    finally:
        collector.stop()
        dispatcher.redis.close()
