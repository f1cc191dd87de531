"""The lease protocol: what the warm pool needs from whatever starts its containers. The pool
knows nothing else about containers (backends/container/backend.py is the one that does)."""

from __future__ import annotations

from typing import Protocol, TypeVar

from hazmat.backends.base import Job, KeptBackend, RunReport, Spec
from hazmat.policy import HostResources

__all__ = ["L", "Lease", "Leaser"]


class Lease(Protocol):
    """Something started for exactly one job and not used yet (a container, in practice)."""

    @property
    def born(self) -> float:
        """`time.monotonic()` when it became ready."""
        ...

    def healthy(self) -> bool:
        """Still fit to take its job: nothing came from it, it did not end."""
        ...

    def covers(self, timeout_s: float) -> bool:
        """Whether it may still run a job of `timeout_s` before anything reclaims it."""
        ...


L = TypeVar("L", bound=Lease)


class Leaser(Protocol[L]):
    """What the warm pool needs from a backend: start a lease for a spec, run one job in it,
    discard it. The pool knows nothing else about containers."""

    def start(self, spec: Spec, *, lifetime_s: float, pooled: bool = False) -> L: ...

    def run(self, lease: L, job: Job) -> RunReport: ...

    def discard(self, lease: L) -> None: ...

    @property
    def tier(self) -> str | None: ...

    def resources(self) -> HostResources: ...

    def keep(self, spec: Spec, lifetime_s: float) -> KeptBackend: ...

    def runtimes(self) -> set[str]: ...

    def waiting_for_core(self) -> int: ...

    def reap(self) -> list[str]: ...

    def remove_leftovers(self, before: float) -> int: ...

    def close(self) -> None: ...
