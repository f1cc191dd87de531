"""An in-memory leaser for the warm pool's own logic (tests/backends/pool/test_pool_logic.py,
tests/backends/pool/test_pool_sizing.py): leases start at once, or fail as planned; what ran and
what was discarded is kept."""

from __future__ import annotations

import itertools
import threading
import time
from dataclasses import dataclass, field

from hazmat import Policy
from hazmat.backends.base import Job, Program, RunReport, Spec
from hazmat.languages import get_language
from hazmat.policy import HostResources, Runtime, TrustLevel

__all__ = ["FakeLease", "FakeLeaser", "job"]


@dataclass
class FakeLease:
    number: int
    spec: Spec
    born: float = field(default_factory=time.monotonic)
    alive: bool = True

    def healthy(self) -> bool:
        return self.alive

    def covers(self, timeout_s: float) -> bool:
        return True


class FakeLeaser:
    """Starts leases instantly, or fails as `plan` says (one entry per start, then `then`)."""

    tier = "fake"

    def __init__(
        self,
        plan: list[Exception | None] | None = None,
        then: Exception | None = None,
        gate: threading.Event | None = None,
    ) -> None:
        self.plan = list(plan or [])
        self.then = then
        self.gate = gate
        self.numbers = itertools.count(1)
        self.lock = threading.Lock()
        self.started: list[FakeLease] = []
        self.discarded: list[FakeLease] = []
        self.ran: list[int] = []
        self.discard_seen = threading.Condition()

    def start(self, spec: Spec, *, lifetime_s: float, pooled: bool = False) -> FakeLease:
        if self.gate is not None:
            self.gate.wait(10)
        with self.lock:
            failure = self.plan.pop(0) if self.plan else self.then
            if failure is not None:
                raise failure
            lease = FakeLease(next(self.numbers), spec)
            self.started.append(lease)
            return lease

    def run(self, lease: FakeLease, job: Job) -> RunReport:
        with self.lock:
            self.ran.append(lease.number)
        return RunReport(0, b"", b"", 1.0, container_id=str(lease.number))

    def discard(self, lease: FakeLease) -> None:
        with self.discard_seen:
            self.discarded.append(lease)
            self.discard_seen.notify_all()

    def wait_discarded(self, count: int) -> bool:
        with self.discard_seen:
            return self.discard_seen.wait_for(lambda: len(self.discarded) >= count, 10)

    def waiting_for_core(self) -> int:
        return 0

    def resources(self) -> HostResources:
        return HostResources(cpus=2, memory_mb=4096)

    def close(self) -> None:
        pass


def job(language: str = "python", memory_mb: int | None = None) -> Job:
    limits = Policy().settings(TrustLevel.UNTRUSTED).limits
    if memory_mb is not None:
        limits = limits.replace(memory_mb=memory_mb)
    program = Program(files={"main.py": b"print(1)"}, want=(), stdin=b"", max_file_bytes=10)
    return Job(get_language(language), "img", limits, Runtime.RUNC, TrustLevel.UNTRUSTED, program)
