"""JSON from outside the process, decoded within bounds: a request body (the HTTP API, a
batch's lines, the MCP endpoint), a receipt (pasted into the console, read by `hazmat audit
check-receipt`), the record a receipt carries.

    data = loads(body, "the request body")   # InputError saying what is wrong, never a crash

What the decoder would take but nothing after it can: nesting deeper than `MAX_DEPTH`
(measured before decoding, so never the decoder's RecursionError), a number longer than
`MAX_NUMBER_CHARS` (Python's int() of one is quadratic, of 4,301 digits an error, and a huge
int is no float), a NUL (UTF-16 or UTF-32 text the decoder would read), bytes that are not
UTF-8, and a lone surrogate (`"\\udc80"`: valid JSON, but no text: it cannot be encoded, so
it breaks the first `.encode()` after, the audit log's included). Each is an `InputError`
that names where it is: a byte, a line, or the field (`field 'env'['X']`).
"""

from __future__ import annotations

import json
import re
from typing import Any

from hazmat._exceptions import InputError, quoted

__all__ = [
    "MAX_DEPTH",
    "MAX_NUMBER_CHARS",
    "check_depth",
    "check_text",
    "field_name",
    "loads",
    "surrogate_in",
]

MAX_DEPTH = 32  # the API's deepest body is 3 levels (files_base64: {name: data})
MAX_NUMBER_CHARS = 40  # a 64-bit integer is 20; a double's shortest repr at most 24
# a string, or what is left of one that never ends: every attempt matches at once (no retry
# from each later quote, which made an unterminated string quadratic)
_STRINGS = re.compile(rb'"[^"\\]*(?:\\.?[^"\\]*)*"?', re.DOTALL)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_ONE_KIND = bytes.maketrans(b"{}", b"[]")  # depth is the same; the decoder checks the kinds
_ESCAPED_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")  # the only way JSON can carry one
_SURROGATE = re.compile("[\ud800-\udfff]")


class _LongNumber(Exception):
    """Raised out of the decoder by a number's hook (an InputError would read as bad JSON)."""


def loads(data: bytes | str, what: str = "the request body") -> Any:
    """`data` decoded as JSON, or `InputError` naming `what` and what is wrong with it."""
    body = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{what} is not UTF-8 (byte {exc.start}: {exc.reason}); send UTF-8 JSON"
        ) from None
    check_depth(body, what)
    value = _decoded(text, what)
    if _ESCAPED_SURROGATE.search(body):
        where = surrogate_in(value)
        if where is not None:
            raise InputError(
                f"{what}: {where} holds a lone surrogate (a \\ud800-\\udfff escape that is not "
                "half of a pair): send text that is valid Unicode"
            )
    return value


def _int(text: str) -> int:
    if len(text) > MAX_NUMBER_CHARS:
        raise _LongNumber(text)
    return int(text)


def _float(text: str) -> float:
    if len(text) > MAX_NUMBER_CHARS:
        raise _LongNumber(text)
    return float(text)


def _decoded(text: str, what: str) -> Any:
    try:
        return json.loads(text, parse_int=_int, parse_float=_float)
    except _LongNumber as exc:
        raise InputError(
            f"{what} has a number {quoted(str(exc), 20)}: at most {MAX_NUMBER_CHARS} characters"
        ) from None
    except RecursionError:  # brackets that do not match, too many to reach their error
        raise InputError(f"{what} is nested deeper than {MAX_DEPTH} levels") from None
    except ValueError as exc:
        raise InputError(f"{what} is not JSON: {exc}") from None


def check_depth(body: bytes, what: str = "the request body") -> None:
    """Refuse JSON nested deeper than `MAX_DEPTH`, without decoding it, at C speed: strings are
    cut out (a bracket inside one does not count), then each pass removes the innermost pairs;
    pairs left after `MAX_DEPTH` passes are deeper than that. Brackets that do not pair up are
    no JSON: the decoder says where (it meets the first one within `MAX_DEPTH` levels, or its
    recursion limit, which is said as nesting)."""
    nul = body.find(b"\x00")
    if nul >= 0:  # UTF-16 or UTF-32, which the decoder would take: quotes fall apart
        raise InputError(
            f"{what} is not JSON: a NUL byte at byte {nul} (send UTF-8, not UTF-16 or UTF-32)"
        )
    brackets = _STRINGS.sub(b"", body).translate(_ONE_KIND, _NOT_BRACKETS)
    for _ in range(MAX_DEPTH):  # one pass removes exactly one level: the innermost pairs
        inner = brackets.replace(b"[]", b"")
        if inner == brackets:
            break  # all paired (empty), or what is left does not pair up
        brackets = inner
    else:
        if b"[]" in brackets:
            raise InputError(f"{what} is nested deeper than {MAX_DEPTH} levels")
    if brackets:
        _decoded(body.decode("utf-8", "replace"), what)  # raises: the brackets do not match
        raise InputError(f"{what} is not JSON: its brackets do not match")


def surrogate_in(value: Any, path: tuple[str | int, ...] = ()) -> str | None:
    """Where in a decoded value (at most `MAX_DEPTH` deep) a string or a name holds a lone
    surrogate, as `field_name` says it; None if nowhere."""
    if isinstance(value, str):
        return field_name(path) if _SURROGATE.search(value) else None
    items: list[tuple[str | int, Any]] = []
    if isinstance(value, dict):
        for name in value:
            if _SURROGATE.search(name):
                return f"a name in {field_name(path)}" if path else "a field's name"
        items = list(value.items())
    elif isinstance(value, list):
        items = list(enumerate(value))
    for step, item in items:
        found = surrogate_in(item, (*path, step))
        if found is not None:
            return found
    return None


def check_text(text: str, what: str) -> str:
    """`text`, or `InputError` if it holds a lone surrogate (a str from Python, not from JSON:
    the same refusal for a caller of `Sandbox.run` as for one of the service)."""
    found = _SURROGATE.search(text)
    if found is not None:
        raise InputError(
            f"{what} holds a lone surrogate (\\u{ord(found.group()):04x} at character "
            f"{found.start()}): give text that is valid Unicode"
        )
    return text


def field_name(path: tuple[str | int, ...]) -> str:
    """`field 'files'['a.txt']`, `field 'args'[2]`; the whole value for an empty path."""
    if not path:
        return "the value"
    first, *rest = path
    shown = "".join(f"[{_safe(step)}]" for step in rest)
    return f"field {_safe(first)}{shown}"


def _safe(step: str | int) -> str:
    """A name or index as an error shows it, a lone surrogate as its escape."""
    if isinstance(step, int):
        return str(step)
    return quoted(step.encode("utf-8", "backslashreplace").decode("ascii", "backslashreplace"))
