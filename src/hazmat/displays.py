"""Displays: the charts, tables and rich values a Python program shows, as MIME bundles.

A display is what Jupyter calls display data: a mapping from a MIME type to the same thing in
that type (`{"image/png": b"\\x89PNG...", "text/plain": "<Figure size 640x480 with 1 Axes>"}`),
bytes for binary types and text for the others. The program makes them inside the sandbox
(backends/agent/python_parts.py: matplotlib figures, a final expression with a rich
representation, `display(obj)`), the runner writes them to a file the agent collects, and the
host reads that file here as untrusted bytes: only the types below are kept, each checked
(a PNG must be a PNG, text must be UTF-8), and no more than the policy's `max_displays` and
`max_display_bytes`; what is cut is said in a note. hazmat never renders any of them.

On the wire (JSON) a display is an object of MIME type -> string, binary data as base64, as
Jupyter's notebook files store it: `bundle_to_json` / `bundle_from_json`.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any, NamedTuple

from hazmat._exceptions import InputError, quoted

__all__ = [
    "BINARY_TYPES",
    "DISPLAY_FILE",
    "FIGURE_FORMATS",
    "TEXT_TYPES",
    "Bundle",
    "Shown",
    "bundle_from_json",
    "bundle_to_json",
    "display_cap",
    "display_files",
    "displays_to_json",
    "parse_displays",
]

Bundle = Mapping[str, bytes | str]

# where the runner writes them (JSON Lines, one bundle each), collected by the agent
DISPLAY_FILE = "/tmp/.hazmat-displays"
# the checks a binary type's data must pass: its leading bytes
BINARY_TYPES: Mapping[str, tuple[bytes, ...]] = MappingProxyType(
    {
        "image/png": (b"\x89PNG\r\n\x1a\n",),
        "image/jpeg": (b"\xff\xd8\xff",),
        "image/gif": (b"GIF87a", b"GIF89a"),
        "application/pdf": (b"%PDF-",),
    }
)
TEXT_TYPES = frozenset(
    {
        "text/plain",
        "text/html",
        "text/markdown",
        "text/latex",
        "image/svg+xml",
        "application/json",
    }
)
# what `figure_formats` may ask for, and the MIME type each gives
FIGURE_FORMATS: Mapping[str, str] = MappingProxyType(
    {"png": "image/png", "svg": "image/svg+xml", "pdf": "application/pdf", "jpeg": "image/jpeg"}
)
_DROPPED = "hazmat/dropped"  # a line the runner writes for a display it did not keep
_RESULT = "hazmat/result"  # on the display of the last line's value (`final_value: result`)
_PER_DISPLAY = 4096  # room for a bundle's JSON beyond its data, in the file's cap


def display_cap(max_displays: int, max_display_bytes: int) -> int:
    """The most the display file may hold: every display's data as base64, and its JSON."""
    if max_displays == 0 or max_display_bytes == 0:
        return 0
    return -(-max_display_bytes * 4 // 3) + (max_displays + 1) * _PER_DISPLAY


class Shown(NamedTuple):
    """What the runner's file held: the displays, checked; notes on what was cut; which
    display is the last line's value (`final_value: result`), if one is."""

    displays: tuple[Bundle, ...]
    notes: list[str]
    result: int | None = None


def parse_displays(blob: bytes | None, max_displays: int, max_display_bytes: int) -> Shown:
    """The bundles in the runner's file, checked, and notes on what was cut. Any bytes give a
    result, never an exception."""
    if not blob:
        return Shown((), [])
    shown: list[Bundle] = []
    notes: list[str] = []
    dropped = {"count": 0, "bytes": 0, "invalid": 0, "types": 0}
    total = 0
    result = None
    for line in blob.splitlines():
        bundle, problem, value = _read_line(line)
        if problem in dropped:
            dropped[problem] += 1
            continue
        if bundle is None:
            dropped["invalid"] += 1
            continue
        kept = _checked(bundle)
        if not kept:
            dropped["invalid"] += 1
            continue
        dropped["types"] += len(bundle) - len(kept)
        bundle = kept
        size = sum(len(v if isinstance(v, bytes) else v.encode()) for v in bundle.values())
        if len(shown) >= max_displays:
            dropped["count"] += 1
        elif total + size > max_display_bytes:
            dropped["bytes"] += 1
        else:
            result = len(shown) if value else result
            shown.append(MappingProxyType(bundle))
            total += size
    why = {
        "count": f"more than max_displays ({max_displays})",
        "bytes": f"together over max_display_bytes ({max_display_bytes} bytes)",
        "invalid": "not a display hazmat can check (unknown types, or data not of its type)",
    }
    for kind, n in dropped.items():
        if n and kind in why:
            notes.append(f"{n} display{'s' if n > 1 else ''} dropped: {why[kind]}")
    if dropped["types"]:
        notes.append(
            f"{dropped['types']} part(s) of displays left out: a type hazmat does not know, or "
            "data not of its type (a PNG that is not a PNG)"
        )
    return Shown(tuple(shown), notes, result)


def _read_line(line: bytes) -> tuple[Bundle | None, str | None, bool]:
    """A line's bundle, or why there is none; and whether it is the last line's value."""
    try:
        data = json.loads(line)
    except (ValueError, RecursionError):
        return None, "invalid", False
    if isinstance(data, dict) and set(data) == {_DROPPED}:
        reason = data[_DROPPED]
        return None, reason if reason in ("count", "bytes") else "invalid", False
    value = isinstance(data, dict) and data.pop(_RESULT, None) is True
    try:
        return bundle_from_json(data), None, value
    except InputError:
        return None, "invalid", False


def _checked(bundle: Mapping[str, bytes | str]) -> dict[str, bytes | str]:
    """Only the known types, each as its type says."""
    return {mime: data for mime, data in bundle.items() if _fits(mime, data)}


def _fits(mime: str, data: bytes | str) -> bool:
    if mime in BINARY_TYPES:
        return isinstance(data, bytes) and data.startswith(BINARY_TYPES[mime])
    if mime == "application/json" and isinstance(data, str):
        try:
            json.loads(data)
        except (ValueError, RecursionError):
            return False
    return mime in TEXT_TYPES and isinstance(data, str)


def bundle_to_json(bundle: Bundle) -> dict[str, str]:
    """A display as JSON: binary data as base64."""
    return {
        mime: base64.b64encode(data).decode("ascii") if isinstance(data, bytes) else data
        for mime, data in bundle.items()
    }


def bundle_from_json(data: Any, name: str = "display") -> dict[str, bytes | str]:
    """`bundle_to_json`'s object back: the binary types decoded. Anything else is an
    `InputError` naming what is wrong."""
    if not isinstance(data, Mapping):
        raise InputError(f"{name} must be an object of MIME type -> data")
    bundle: dict[str, bytes | str] = {}
    for mime, value in data.items():
        if not isinstance(mime, str) or not isinstance(value, str):
            raise InputError(f"{name}[{quoted(mime)}] must be a string")
        if mime in BINARY_TYPES:
            try:
                bundle[mime] = base64.b64decode(value, validate=True)
            except (binascii.Error, ValueError):
                raise InputError(f"{name}[{quoted(mime)}] is not valid base64") from None
        else:
            _utf8(value, f"{name}[{quoted(mime)}]")
            bundle[mime] = value
    return bundle


def _utf8(text: str, name: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise InputError(f"{name} is not valid UTF-8 text") from None


def displays_to_json(displays: Sequence[Bundle]) -> list[dict[str, str]]:
    """Displays as JSON, in order."""
    return [bundle_to_json(b) for b in displays]


# a file name's extension for each type (display_files)
_EXTENSIONS = {
    "image/png": "png",
    "image/jpeg": "jpg",
    "image/gif": "gif",
    "application/pdf": "pdf",
    "image/svg+xml": "svg",
    "text/html": "html",
    "text/markdown": "md",
    "text/latex": "tex",
    "application/json": "json",
    "text/plain": "txt",
}


def display_files(displays: Sequence[Bundle]) -> dict[str, bytes]:
    """Displays as files (`display-1.png`, `display-2.html`, ...), numbered from 1 in order:
    each type of a display, text as UTF-8; its plain text only when it has no image."""
    files: dict[str, bytes] = {}
    for number, bundle in enumerate(displays, 1):
        pictured = any(mime in BINARY_TYPES or mime == "image/svg+xml" for mime in bundle)
        for mime, data in bundle.items():
            if mime == "text/plain" and pictured:
                continue
            name = f"display-{number}.{_EXTENSIONS.get(mime, 'bin')}"
            files[name] = data if isinstance(data, bytes) else data.encode("utf-8")
    return files
