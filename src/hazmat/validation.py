"""Checks on what a caller sends, before anything reaches a container."""

from __future__ import annotations

import unicodedata

from hazmat._exceptions import InputError, UnsafeFileName

__all__ = ["check_code", "check_file_name", "to_bytes"]

MAX_NAME_BYTES = 255


def check_code(code: str | bytes) -> str:
    """The code as text: UTF-8, not empty, no NUL bytes."""
    if isinstance(code, bytes):
        try:
            code = code.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(f"code is not valid UTF-8 (byte {exc.start}: {exc.reason})") from None
    if not isinstance(code, str):
        raise InputError(f"code must be str or bytes, not {type(code).__name__}")
    if not code.strip():
        raise InputError("code is empty")
    if "\x00" in code:
        raise InputError(f"code contains a NUL byte (at character {code.index(chr(0))})")
    return code


def check_file_name(name: str) -> str:
    """A plain file name inside the working directory: no path, no tricks, at most 255 bytes."""
    if not isinstance(name, str):
        raise UnsafeFileName(f"file name must be a string, not {type(name).__name__}")
    problem = _name_problem(name)
    if problem:
        raise UnsafeFileName(f"unsafe file name {name!r}: {problem}")
    return name


def _name_problem(name: str) -> str | None:
    if not name:
        return "empty"
    if "\x00" in name:
        return "contains a NUL byte"
    if "/" in name or "\\" in name:
        return "contains a path separator; only plain names in the working directory are allowed"
    if name in (".", ".."):
        return "is a directory reference"
    if len(name.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES:
        return f"longer than {MAX_NAME_BYTES} bytes"
    if any(unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp") for ch in name):
        return "contains a control or formatting character"
    if name != name.strip():
        return "starts or ends with white space"
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return "is not valid Unicode"
    return None


def to_bytes(data: str | bytes | bytearray, what: str) -> bytes:
    if isinstance(data, str):
        return data.encode("utf-8")
    if isinstance(data, bytes | bytearray):
        return bytes(data)
    raise InputError(f"{what} must be str or bytes, not {type(data).__name__}")
