"""A batch's page in the console: its state and counts, and one page of its finished tasks.

The page of a running batch is asked for again every second, and it is rendered on the
service's event loop: what it costs must not grow with the batch. Its counts are the batch's
own, kept as each verdict arrives (`Batch.info`); its table holds at most `PAGE` tasks, in the
order they finished, each a row the batch kept as its verdict arrived (`Batch.rows`: at most
`SHOWN` tests' verdicts of a task), so no result line is decoded. A 10,000-task batch of
20 tests each renders in the time of a 50-task one (docs/benchmarks.md, "The console's page of
a large batch").
"""

from __future__ import annotations

from typing import Any

from hazmat._exceptions import InputError, quoted
from hazmat.server.batches import Batch

__all__ = ["PAGE", "batch_page", "page_number"]

PAGE = 50  # tasks a page shows
_DIGITS = 9  # more pages than any batch a request body can hold


def page_number(asked: str | None) -> int:
    """The page asked for (`?page=`, from 1; 1 when not asked): whole ASCII digits only."""
    if asked is None:
        return 1
    if not (asked.isascii() and asked.isdigit() and 0 < len(asked) <= _DIGITS) or not int(asked):
        raise InputError(f"page must be a whole number from 1, not {quoted(asked[:20])}")
    return int(asked)


def batch_page(batch: Batch, page: int) -> dict[str, Any]:
    """What batch.html shows: the batch's counts and the tasks of `page` (the last page when
    it asks for more than there are)."""
    with batch.changed:  # the grading threads append under it (an RLock: info() takes it too)
        info = batch.info()
        pages = max(1, -(-info["done"] // PAGE))
        page = min(page, pages)
        start = (page - 1) * PAGE
        lines = batch.rows[start : start + PAGE]  # the counts and the tasks of one moment
    return {
        "batch": batch,
        "info": info,
        "lines": lines,
        "page": page,
        "pages": pages,
        "first": start + 1,
        "last": start + len(lines),
    }
