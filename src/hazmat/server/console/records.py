"""A run's records in the service's audit log, for the console's run page: its run.started (or
run.blocked), run.finished, run.connection and assess.semgrep records, found by the run id they
carry, read from a window of the log around where the log ended when the run did. A run that a
cluster's worker ran is recorded in that worker's log, not here: none is found."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hazmat.audit.tree import LogTree, TreeError

__all__ = ["run_records"]

BEFORE = 256  # records before the log's end at the run's end: its start, other runs between
AFTER = 256  # and after it: late findings, records of runs that ended at about the same time


def run_records(directory: Path, run_id: str, near: int) -> list[dict[str, Any]]:
    """The records of run `run_id` among those from `near - BEFORE` to `near + AFTER`, each
    with its `seq`; those found before a part that cannot be read (none: the page says so)."""
    found: list[dict[str, Any]] = []
    try:
        tree = LogTree(directory)
        if not tree.spans:
            return found
        first = max(near - BEFORE, tree.spans[0].first)
        for entry in tree.entries(first, tree.start_of(first)):
            if entry.seq >= near + AFTER:
                break
            if entry.record is not None:
                record = entry.record.as_json()
                if record["data"].get("run") == run_id:
                    found.append({"seq": entry.seq, **record})
    except (OSError, TreeError, ValueError):
        pass  # a line being written, a damaged log (`hazmat audit verify` says which): so far
    return found
