"""Checks on what a caller sends, before anything reaches a container.

The checks on a run's names, paths, environment, arguments and origin: the options table
converts a caller's options with them, and `check_request` (run/intake.py) checks every
`ExecutionRequest` with them, including one built by hand and passed to `Sandbox.execute`. Each
raises `InputError` (or a subclass) with a message that names the field and what was expected.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence

from hazmat._exceptions import InputError, InputTooLarge, UnsafeFileName, quoted
from hazmat.json_input import check_text

__all__ = [
    "FINAL_VALUES",
    "check_args",
    "check_env",
    "check_figure_formats",
    "check_file_name",
    "check_final_value",
    "check_origin",
    "check_path",
    "to_bytes",
]

MAX_NAME_BYTES = 255
MAX_PATH_BYTES = 1024
MAX_PATH_DEPTH = 16
# Environment and arguments travel in the job; together at most this many bytes.
MAX_ENV_ARGS_BYTES = 64 * 1024
MAX_ENV_VARS = 256
MAX_ARGS = 1024
MAX_ORIGIN = 8  # entries of a request's origin, each name and value at most 256 characters
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# Variables the sandbox sets for itself; a caller may not replace them.
RESERVED_ENV = frozenset({"HOME", "TMPDIR", "PATH", "LANG"})


def check_file_name(name: str) -> str:
    """A plain file name inside the working directory: no path, no tricks, at most 255 bytes."""
    if not isinstance(name, str):
        raise UnsafeFileName(f"file name must be a string, not {type(name).__name__}")
    problem = _name_problem(name)
    if problem:
        raise UnsafeFileName(f"unsafe file name {quoted(name)}: {problem}")
    return name


def check_path(path: str) -> str:
    """A relative path inside the working directory (`out/result.json`): components joined by
    `/`, each a safe file name (no `.`, `..`, empty parts or backslashes), at most 16 deep."""
    if not isinstance(path, str):
        raise UnsafeFileName(f"file path must be a string, not {type(path).__name__}")
    if path.startswith("/"):
        raise UnsafeFileName(
            f"unsafe file path {quoted(path)}: absolute; give a path relative to /work"
        )
    parts = path.split("/")
    if len(parts) > MAX_PATH_DEPTH:
        raise UnsafeFileName(f"unsafe file path {quoted(path)}: more than {MAX_PATH_DEPTH} levels")
    if len(path.encode("utf-8", "surrogatepass")) > MAX_PATH_BYTES:
        raise UnsafeFileName(f"unsafe file path {quoted(path)}: longer than {MAX_PATH_BYTES} bytes")
    for part in parts:
        problem = _name_problem(part)
        if problem:
            where = f"part {quoted(part)} " if len(parts) > 1 else ""
            raise UnsafeFileName(f"unsafe file path {quoted(path)}: {where}{problem}")
    return path


def check_paths_distinct(paths: Sequence[str], what: str) -> None:
    """No path is also the folder of another (`a` and `a/b` cannot both be files)."""
    names = set(paths)
    for path in paths:
        parts = path.split("/")
        for depth in range(1, len(parts)):
            folder = "/".join(parts[:depth])
            if folder in names:
                raise InputError(f"{what} {quoted(folder)} is also the folder of {quoted(path)}")


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


def check_env(env: Mapping[str, str]) -> dict[str, str]:
    """Variables for the program: portable names, str values without NUL; not hazmat's own
    (`HAZMAT_*`) nor the ones the sandbox sets (HOME, TMPDIR, PATH, LANG)."""
    if not isinstance(env, Mapping):
        raise InputError(f"env must be a mapping of name -> str, not {type(env).__name__}")
    if len(env) > MAX_ENV_VARS:
        raise InputTooLarge(f"env has {len(env)} variables; at most {MAX_ENV_VARS}")
    for name, value in env.items():
        if not isinstance(name, str) or not _ENV_NAME.match(name):
            raise InputError(
                f"env name {quoted(name)} is not a valid variable name (letters, digits, _; "
                "not starting with a digit)"
            )
        if name.startswith("HAZMAT_") or name in RESERVED_ENV:
            raise InputError(f"env name {quoted(name)} is reserved for the sandbox")
        if not isinstance(value, str):
            raise InputError(f"env value of {quoted(name)} must be str, not {type(value).__name__}")
        if "\x00" in value:
            raise InputError(f"env value of {quoted(name)} contains a NUL byte")
        check_text(value, f"env value of {quoted(name)}")
    return dict(env)


def check_args(args: Sequence[str]) -> tuple[str, ...]:
    """Command-line arguments for the program: a list of str without NUL bytes."""
    if isinstance(args, str | bytes) or not isinstance(args, Sequence):
        raise InputError(f"args must be a list of str, not {type(args).__name__}")
    if len(args) > MAX_ARGS:
        raise InputTooLarge(f"{len(args)} arguments; at most {MAX_ARGS}")
    for i, arg in enumerate(args):
        if not isinstance(arg, str):
            raise InputError(f"args[{i}] must be str, not {type(arg).__name__}")
        if "\x00" in arg:
            raise InputError(f"args[{i}] contains a NUL byte")
        check_text(arg, f"args[{i}]")
    return tuple(args)


def check_env_args_size(env: Mapping[str, str], args: Sequence[str]) -> None:
    size = sum(len(k.encode()) + len(v.encode()) + 2 for k, v in env.items())
    size += sum(len(a.encode()) + 1 for a in args)
    if size > MAX_ENV_ARGS_BYTES:
        raise InputTooLarge(f"env and args come to {size} bytes; the limit is {MAX_ENV_ARGS_BYTES}")


def to_bytes(data: str | bytes | bytearray, what: str) -> bytes:
    if isinstance(data, str):
        return check_text(data, what).encode("utf-8")
    if isinstance(data, bytes | bytearray):
        return bytes(data)
    raise InputError(f"{what} must be str or bytes, not {type(data).__name__}")


def check_origin(origin: Mapping[str, object]) -> None:
    """Where a run came from (recorded with it): a few names, each with a short text or a
    whole number."""
    if not isinstance(origin, Mapping):
        raise InputError(f"origin must be a mapping, not {type(origin).__name__}")
    if len(origin) > MAX_ORIGIN:
        raise InputError(f"origin has {len(origin)} entries; at most {MAX_ORIGIN}")
    for name, value in origin.items():
        if not isinstance(name, str) or not 0 < len(name) <= 256:
            raise InputError(f"origin names must be short strings, not {quoted(name)}")
        if isinstance(value, bool) or not isinstance(value, str | int):
            raise InputError(
                f"origin {quoted(name)} must be str or int, not {type(value).__name__}"
            )
        if isinstance(value, str) and len(value) > 256:
            raise InputError(f"origin {quoted(name)} is over 256 characters")


# what `final_value` may be: the program's own way, or the value given back as the result
FINAL_VALUES = ("default", "result")


def check_final_value(value: object) -> str | None:
    if value is None or value in FINAL_VALUES:
        return None if value in (None, "default") else str(value)
    raise InputError(f"final_value must be default or result, not {quoted(value)}")


def check_figure_formats(formats: object) -> tuple[str, ...]:
    """The formats a Python run's matplotlib figures are drawn in (displays.py), each once;
    empty: PNG."""
    if isinstance(formats, str) or not isinstance(formats, list | tuple):
        raise InputError(f"figure_formats must be a list of formats, not {type(formats).__name__}")
    known = ("png", "svg", "pdf", "jpeg")
    for name in formats:
        if name not in known:
            raise InputError(
                f"figure_formats: unknown format {quoted(name)} (formats: {', '.join(known)})"
            )
    if len(set(formats)) != len(formats):
        raise InputError("figure_formats: a format is named twice")
    return tuple(formats) or ("png",)
