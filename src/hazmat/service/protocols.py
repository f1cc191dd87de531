"""What the service (server/) does with runs and sessions, and the cluster (cluster/) gives it:
the protocols both sides import. The service's own sandbox implements them in server/
(`LocalExecutor`, `LocalSessions`, `hazmat.Session`); the cluster's workers in cluster/
(`ClusterExecutor`, `ClusterSessions`, `RemoteSession`), composed in at start-up by
cli/serve.py. Each implementation says so where it is defined (a `type[...]` check mypy reads).

A run is first *reserved* (the cluster takes a worker's slot, so that a full cluster is a plain
429 before a stream starts), then executed once; a reservation never used is released.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol, Unpack

from hazmat.grade.tasks import Task
from hazmat.models import ExecutionRequest, ExecutionResult
from hazmat.options import RunOptions
from hazmat.packages.install import Installed
from hazmat.sandbox import Sandbox
from hazmat.sessions.store import Paused
from hazmat.watch import OnOutput, Watch

__all__ = ["Executor", "OpenSession", "Reservation", "Sessions"]


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


class OpenSession(Protocol):
    """What the service does with an open session: `hazmat.Session` (in the service's own
    engine) or cluster/remote_sessions.py's `RemoteSession` (on a worker)."""

    id: str
    owner: str | None

    @property
    def ended(self) -> str | None: ...

    def info(self) -> dict[str, Any]: ...

    def request(self, code: str | bytes, **options: Unpack[RunOptions]) -> ExecutionRequest: ...

    def execute(
        self, request: ExecutionRequest, *, on_output: OnOutput | Watch | None = None
    ) -> ExecutionResult: ...

    def upload(self, files: Mapping[str, str | bytes]) -> None: ...

    def download(self, names: Iterable[str]) -> dict[str, bytes]: ...

    def install(self, packages: Iterable[str]) -> Installed: ...

    def pause(self, owner: str | None = None) -> Paused: ...

    def fork(self, n: int = 1) -> Sequence[OpenSession]: ...

    def close(self) -> None: ...


class Sessions(Protocol):
    """Where the service's sessions live: its own sandbox (`LocalSessions`) or the cluster's
    workers (cluster/remote_sessions.py's `ClusterSessions`, with `hazmat serve --redis`)."""

    def open(
        self,
        language: str,
        *,
        trust: str | None,
        runtime: str | None,
        image: str | None,
        caller: str | None,
        owner: str | None,
    ) -> OpenSession: ...

    def resume(self, session_id: str, owner: str | None) -> OpenSession: ...

    def get(self, session_id: str) -> OpenSession: ...

    def all(self) -> Sequence[OpenSession]: ...
