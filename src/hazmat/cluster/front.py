"""What `hazmat serve --redis URL` adds to the service: runs go to the workers (dispatch.py)
through a `ClusterExecutor`, tenants' quotas are counted in Redis across services (redis_quotas.py),
sessions are opened on the workers too (remote_sessions.py), paused sessions are kept in Redis for
any worker or service to resume (paused.py), and the workers' signed checkpoints are copied
into anchors of the service's (anchors.py).
cli/serve.py hands `cluster_front` to the service as its front (server/listening.py)."""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hazmat.cluster.anchors import AnchorCollector
from hazmat.cluster.dispatch import Dispatcher
from hazmat.cluster.paused import RedisShelf
from hazmat.cluster.placement import Placement
from hazmat.cluster.redis_quotas import RedisQuotaBook
from hazmat.cluster.remote_sessions import ClusterSessions
from hazmat.grade.tasks import Task
from hazmat.models import ExecutionRequest, ExecutionResult
from hazmat.policy import Policy, parse_trust
from hazmat.sandbox import Sandbox
from hazmat.service.protocols import Executor
from hazmat.watch import OnOutput, Watch, as_watch

__all__ = ["ClusterExecutor", "ClusterOptions", "cluster_front"]

LEASE_GRACE_S = 60  # a dead service's quota leases outlive its longest run by this


@dataclass(frozen=True)
class ClusterOptions:
    url: str
    anchors: Path  # where the workers' checkpoints are kept, one folder per worker
    on_lost: str = "report"  # or "retry": a run whose worker died (docs/scale.md)
    attempts: int = 3  # with "retry": attempts in all


class ClusterExecutor:
    """Runs go to the cluster's workers: `reserve` takes a slot on one (`QuotaExceeded` when
    none is free), the reservation's `execute` runs it there (server/executor.py's protocols)."""

    def __init__(self, dispatcher: Dispatcher, policy: Policy) -> None:
        self.dispatcher = dispatcher
        self.policy = policy

    def reserve(self, request: ExecutionRequest) -> Placed:
        runtime = request.runtime or self.policy.settings(request.trust).runtime
        placement = self.dispatcher.place(request.language, runtime.value)
        return Placed(self.dispatcher, placement, runtime.value)

    def grade(
        self, task: Task, raw: Mapping[str, Any], options: Mapping[str, Any]
    ) -> dict[str, Any]:
        """One task of a batch on a worker: a slot taken for the whole task
        (`QuotaExceeded` when none is free: the batch waits and tries again)."""
        trust = parse_trust(options.get("trust") or self.policy.default_trust)
        runtime = str(options.get("runtime") or self.policy.settings(trust).runtime.value)
        placement = self.dispatcher.place(task.language, runtime)
        wire = {k: v if isinstance(v, bool) else str(v) for k, v in options.items()}
        try:
            return self.dispatcher.grade(raw, wire, secrets.token_hex(8), runtime, placement)
        finally:
            self.dispatcher.release(placement)  # only if it was never used

    def waiting_for_core(self) -> int | None:
        """Each worker counts its own cores: not known here."""
        return None

    def sessions(self, sandbox: Sandbox) -> ClusterSessions:
        """Sessions too are placed on the workers (remote_sessions.py)."""
        return ClusterSessions(self.dispatcher, sandbox)


@dataclass(frozen=True)
class Placed:
    """A slot taken on a worker for one run."""

    dispatcher: Dispatcher
    placement: Placement
    runtime: str

    def execute(
        self, request: ExecutionRequest, *, on_output: OnOutput | Watch | None = None
    ) -> ExecutionResult:
        run_id = secrets.token_hex(8)
        watch = as_watch(on_output)
        return self.dispatcher.execute(request, run_id, watch, self.runtime, self.placement)

    def release(self) -> None:
        self.dispatcher.release(self.placement)


@contextlib.contextmanager
def cluster_front(
    options: ClusterOptions, policy: Policy
) -> Iterator[tuple[ClusterExecutor, RedisQuotaBook, RedisShelf]]:
    """The executor, the quota book and the paused sessions' shelf, with the anchor collector
    running meanwhile. A run's quota lease outlives a service that died holding it by the
    policy's longest run + 60 s."""
    dispatcher = Dispatcher(options.url, options.on_lost, options.attempts)
    quotas = RedisQuotaBook(dispatcher.redis, policy.longest_run_s() + LEASE_GRACE_S)
    collector = AnchorCollector(dispatcher.redis, options.anchors)
    collector.start()
    try:
        yield ClusterExecutor(dispatcher, policy), quotas, RedisShelf(dispatcher.redis)
    finally:
        collector.stop()
        dispatcher.redis.close()


# the protocol it implements (service/protocols.py), checked by mypy
_EXECUTOR: type[Executor] = ClusterExecutor
