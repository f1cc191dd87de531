"""What the service hands a checked run to: the sandbox's own engine, a session's container, or
the cluster's workers (cluster/front.py's `ClusterExecutor`, composed in at start-up by
cli/serve.py). The service knows only these two small protocols.

A run is first *reserved* (the cluster takes a worker's slot, so that a full cluster is a plain
429 before a stream starts), then executed once; a reservation never used is released.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from hazmat.grade.grader import Grader
from hazmat.grade.tasks import Task
from hazmat.models import ExecutionRequest, ExecutionResult
from hazmat.sandbox import Sandbox
from hazmat.watch import OnOutput, Watch

if TYPE_CHECKING:
    from hazmat.server.session_routes import Sessions

__all__ = ["Direct", "Executor", "LocalExecutor", "Reservation"]


class Reservation(Protocol):
    """A place for one run: `execute` runs it there; `release` gives the place back if it was
    not used (harmless afterwards)."""

    def execute(
        self, request: ExecutionRequest, *, on_output: OnOutput | Watch | None = None
    ) -> ExecutionResult: ...

    def release(self) -> None: ...


class Executor(Protocol):
    """Where the service's runs go. `reserve` may block (call it from a worker thread) and may
    raise `QuotaExceeded` when there is no room. `grade` grades one task of a batch there
    (server/batches.py; `raw` is its JSON, `options` the batch's run options) and returns its
    result line: blocking too, and `QuotaExceeded` when there is no room for it now."""

    def reserve(self, request: ExecutionRequest) -> Reservation: ...

    def grade(
        self, task: Task, raw: Mapping[str, Any], options: Mapping[str, Any]
    ) -> dict[str, Any]: ...

    def waiting_for_core(self) -> int | None:
        """How many of its measured programs wait for a core now (None: not known here)."""
        ...

    def sessions(self, sandbox: Sandbox) -> Sessions | None:
        """Where the service's sessions live, the service's sandbox given (its policy checks
        a call before it is sent); None: in that sandbox itself."""
        ...


@dataclass(frozen=True)
class Direct:
    """A reservation that holds nothing: the run goes to `target` (`Sandbox.execute`, or a
    session's `execute`) when it is executed."""

    target: Callable[..., ExecutionResult]

    def execute(
        self, request: ExecutionRequest, *, on_output: OnOutput | Watch | None = None
    ) -> ExecutionResult:
        return self.target(request, on_output=on_output)

    def release(self) -> None:
        pass


@dataclass(frozen=True)
class LocalExecutor:
    """The service's own sandbox as a `Executor` (`LocalExecutor(sandbox)`): nothing to reserve;
    every run is the sandbox's `execute`, every task graded by a `Grader` over it."""

    sandbox: Sandbox

    def reserve(self, request: ExecutionRequest) -> Reservation:
        return Direct(self.sandbox.execute)

    def grade(
        self, task: Task, raw: Mapping[str, Any], options: Mapping[str, Any]
    ) -> dict[str, Any]:
        return Grader(self.sandbox, **options).grade(task).to_dict()

    def waiting_for_core(self) -> int | None:
        return self.sandbox.backend.waiting_for_core()

    def sessions(self, sandbox: Sandbox) -> Sessions | None:
        return None
