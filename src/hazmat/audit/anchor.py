"""An anchor: a directory, ideally on another volume or machine, that keeps every checkpoint the
log has signed, in one append-only file, so that rewriting the log's history needs rewriting the
anchor too. Nothing in it is ever overwritten.

    <anchor>/checkpoints    one JSON string (a signed note) per line, oldest first
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from hazmat._exceptions import AuditError, InputError
from hazmat.audit.layout import fsync_dir, io_message, write_fully
from hazmat.json_input import loads

__all__ = ["ANCHOR_FILE", "append_note", "last_note", "parse_notes", "read_notes"]

ANCHOR_FILE = "checkpoints"
_TAIL = 64 * 1024  # a signed note is ~200 bytes: the last one is within this many bytes


def append_note(anchor: Path, note: str) -> None:
    """Add one checkpoint to the anchor and make it durable."""
    try:
        anchor.mkdir(parents=True, exist_ok=True, mode=0o700)
        path = anchor / ANCHOR_FILE
        created = not path.exists()
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            write_fully(fd, json.dumps(note).encode() + b"\n")
            os.fdatasync(fd)
        finally:
            os.close(fd)
        if created:
            fsync_dir(anchor)
    except OSError as exc:
        raise AuditError(f"cannot write the audit anchor {anchor}: {io_message(exc)}") from None


def read_notes(anchor: Path) -> list[str]:
    """Every checkpoint in the anchor, oldest first. A final line without its newline (a crash
    mid-append) is left out; any other line that is not a JSON string is an error."""
    data = (anchor / ANCHOR_FILE).read_bytes()
    return _parse(data[: data.rfind(b"\n") + 1], anchor)


def last_note(anchor: Path) -> str | None:
    """The newest checkpoint in the anchor, reading only the end of the file."""
    path = anchor / ANCHOR_FILE
    try:
        with path.open("rb") as f:
            size = f.seek(0, os.SEEK_END)
            f.seek(max(0, size - _TAIL))
            data = f.read()
    except FileNotFoundError:
        return None
    end = data.rfind(b"\n")
    start = data.rfind(b"\n", 0, end) + 1
    notes = _parse(data[start : end + 1], anchor) if end >= 0 else []
    return notes[-1] if notes else None


def _parse(data: bytes, anchor: Path) -> list[str]:
    return parse_notes(data, str(anchor / ANCHOR_FILE))


def parse_notes(data: bytes, where: str | None = None) -> list[str]:
    """Checkpoints one JSON string a line (an anchor's file, a copy of it); `AuditError` naming
    the first line that is not one (decoded within json_input.py's bounds: never a crash)."""
    notes = []
    for number, line in enumerate(data.splitlines(), 1):
        try:
            note = loads(line, f"line {number}")
        except InputError:
            note = None
        if not isinstance(note, str):
            said = f"line {number} is not a checkpoint"
            raise AuditError(f"{where}: {said}" if where else said)
        notes.append(note)
    return notes
