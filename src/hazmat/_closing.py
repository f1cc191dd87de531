"""`Closable`: what holds something until `close()` is its own context manager, written once
(`with Sandbox() as sandbox:`, a session, a backend, the audit log, the assessor...)."""

from __future__ import annotations

from typing import Self

__all__ = ["Closable"]


class Closable:
    """`with x:` closes `x` at the end of the block, however it ends; `close` is safe to
    call more than once."""

    def close(self) -> None:
        """Release what it holds (nothing here)."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
