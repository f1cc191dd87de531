"""Waiting for a file descriptor to be readable, with poll(2): select(2) refuses a descriptor
numbered 1,024 or more (`ValueError: filedescriptor out of range`), and a busy service's
process holds that many (its connections, its containers' sockets, pipes and pidfds)."""

from __future__ import annotations

import math
import select
from typing import Protocol

__all__ = ["readable"]


class _HasFileno(Protocol):
    def fileno(self) -> int: ...


def readable(fd: int | _HasFileno, timeout_s: float = 0.0) -> bool:
    """Whether `fd` is readable within `timeout_s` seconds (0: now): data, its end, a hang-up
    or an error, as select(2) would say it. A closed one (-1) is a `ValueError`, as it is to
    select."""
    number = fd if isinstance(fd, int) else fd.fileno()
    if number < 0:
        raise ValueError("the file descriptor is closed")
    poller = select.poll()
    poller.register(number, select.POLLIN)
    return bool(poller.poll(math.ceil(max(0.0, timeout_s) * 1000)))
