"""Put a benchmark's table into docs/benchmarks.md, between its own markers (a new section at
the end the first time)."""

from __future__ import annotations

from pathlib import Path

DOCS = Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md"


def write_section(name: str, title: str, text: str) -> None:
    """Replace what stands between `<!-- name:begin -->` and `<!-- name:end -->` with `text`."""
    begin, end = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
    doc = DOCS.read_text() if DOCS.exists() else "# Benchmarks\n"
    if begin not in doc:
        doc += f"\n## {title}\n\n{begin}\n{end}\n"
    head, _, rest = doc.partition(begin)
    _, _, tail = rest.partition(end)
    DOCS.write_text(f"{head}{begin}\n{text}\n{end}{tail}")
