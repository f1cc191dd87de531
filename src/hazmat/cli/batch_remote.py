"""`hazmat batch` through a service (the user's local server, or the one `HAZMAT_URL` names):
the tasks go to its batch API (`POST /v1/batches`, docs/batch.md#over-http) and their result
lines come back as they finish (`GET /v1/batches/{id}/results`), to be written as they come.

Leaving early (Ctrl-C, an output that cannot be written) cancels the batch on the service: no
task starts after; those running finish there and are not written here, so `--resume` grades
them again. A batch the service ended before every task had a result (it was stopped) is an
`InfraError` saying how many are missing.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator, Mapping
from typing import Any

from hazmat._exceptions import HazmatError, InfraError
from hazmat.cli.remote import Service

__all__ = ["RemoteBatch"]


class RemoteBatch:
    """One batch sent to `service`; iterate over it for its result lines (dicts)."""

    def __init__(
        self, service: Service, tasks: list[Any], jobs: int, options: Mapping[str, Any]
    ) -> None:
        body = {"tasks": tasks, "jobs": jobs, **options}
        self.service = service
        self.total = len(tasks)
        self.id = str(service.post("/v1/batches", body)["id"])
        self.received = 0
        self._asked = 0.0
        self._waiting = 0

    def waiting(self) -> int:
        """The service's measured programs waiting for a core, asked at most once a second
        (0 when it does not answer, or does not know)."""
        now = time.monotonic()
        if now - self._asked >= 1.0:
            self._asked = now
            try:
                said = json.loads(self.service.get(f"/v1/batches/{self.id}", timeout_s=2.0))
                self._waiting = int(said.get("waiting_for_core") or 0)
            except (HazmatError, OSError, ValueError, TypeError, AttributeError):
                self._waiting = 0
        return self._waiting

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for line in self.service.lines(f"/v1/batches/{self.id}/results"):
            if line.strip():
                self.received += 1
                yield dict(json.loads(line))
        if self.received < self.total:
            missing = self.total - self.received
            raise InfraError(
                f"the service ended batch {self.id} with {missing} of {self.total} tasks not "
                "graded (was it stopped?); `--resume` grades them"
            )

    def __enter__(self) -> RemoteBatch:
        return self

    def __exit__(self, kind: type[BaseException] | None, *rest: object) -> None:
        if kind is not None and self.received < self.total:
            with contextlib.suppress(HazmatError):  # it is gone already: nothing to cancel
                self.service.delete(f"/v1/batches/{self.id}")
