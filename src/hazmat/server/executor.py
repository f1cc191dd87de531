"""The service's own sandbox as where its runs go (`LocalExecutor`), and a reservation that
holds nothing (`Direct`): service/protocols.py's `Executor` and `Reservation`, which the
cluster's workers implement too."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hazmat.grade.grader import Grader
from hazmat.grade.tasks import Task
from hazmat.models import ExecutionRequest, ExecutionResult
from hazmat.sandbox import Sandbox
from hazmat.watch import OnOutput, Watch

if TYPE_CHECKING:
    from hazmat.service.protocols import Executor, Reservation, Sessions

__all__ = ["Direct", "LocalExecutor"]


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


if TYPE_CHECKING:  # the protocol it implements (service/protocols.py), checked by mypy
    _EXECUTOR: type[Executor] = LocalExecutor
