"""The build steps of the compiled languages that are scripts rather than one command, as
real shell files: `make lint` runs ShellCheck on them (scripts/lint-inside.sh), languages/
reads them and fills their `@NAME@` placeholders. A build step reaches the container as the
language's `build`, byte for byte (tests/backends/inside_digests.json pins it)."""

from __future__ import annotations

from pathlib import Path

__all__ = ["read"]


def read(name: str) -> str:
    """The build step in `name`, with the newline it has always begun with."""
    # beside this file (importlib.resources would cost every `hazmat` command ~5 ms to import)
    return "\n" + Path(__file__).with_name(name).read_text(encoding="utf-8")
