"""The exception a failed program ended with, read from its stderr on the host: its name, its
value and the traceback of the program's own frames (`ExecutionResult.exception`), so that a
model, or the code that serves one, need not parse the text.

Python's last traceback (`Traceback (most recent call last):` ... `Name: value`), or a syntax
error's block (`File "...", line N` ... `SyntaxError: ...`); Node's uncaught error (`Name:
value` followed by its `    at ...` stack, Node's own `node:internal` frames left out). What
the program printed is only read, never believed beyond this: a program can print a traceback
of its own making, and then that is what this says (it decides nothing: the outcome comes from
the exit status the agent reported).
"""

from __future__ import annotations

import re

from hazmat.models import ProgramException

__all__ = ["program_exception"]

_PY_START = "Traceback (most recent call last):"
# `ZeroDivisionError: division by zero`, `json.decoder.JSONDecodeError: ...`, `KeyboardInterrupt`
_PY_LAST = re.compile(r"^([A-Za-z_][\w.]*)(?::\s?(.*))?$")
# a syntax error's block: from a frame line to the first error line after it
_PY_FRAME = re.compile(r'  File "[^"]+", line \d+$')
_PY_ERROR = re.compile(r"(\w*Error): (.*)$")
# `TypeError: x is not a function`, `Error [ERR_MODULE_NOT_FOUND]: Cannot find ...`
_NODE_LAST = re.compile(r"^([A-Za-z_$][\w$]*)(?: \[[A-Z0-9_]+\])?: (.*)$")
_NODE_FRAME = re.compile(r"^ {4}at ")
_LIMIT = 8192  # a traceback's characters kept (its end: the frames nearest the error)


def program_exception(language: str, stderr: str) -> ProgramException | None:
    """The exception the program's stderr ends with, for Python and JavaScript/TypeScript;
    None for other languages or when it ends with none."""
    if language == "python":
        return _python(stderr)
    if language in ("javascript", "typescript"):
        return _node(stderr)
    return None


def _python(stderr: str) -> ProgramException | None:
    at = stderr.rfind(_PY_START)
    if at < 0:
        return _python_syntax(stderr.splitlines())
    lines = stderr[at:].rstrip("\n").splitlines()
    # the frames are indented; the first line after them that is not names the exception
    # (its value may run on over more lines)
    for i in range(1, len(lines)):
        if lines[i] and not lines[i].startswith(" "):
            found = _PY_LAST.match(lines[i])
            if found is None:
                return None
            value = "\n".join([found.group(2) or "", *lines[i + 1 :]]).strip("\n")
            return ProgramException(found.group(1), value, _cut("\n".join(lines[:i])))
    return None


def _python_syntax(lines: list[str]) -> ProgramException | None:
    """The last block from a frame line to the first error line after it, in one pass (the
    stderr is the program's: a scan that went back over it for each frame line would let a
    program spend the host's time)."""
    start: int | None = None
    last: tuple[int, int, re.Match[str]] | None = None
    for i, line in enumerate(lines):
        if start is None and _PY_FRAME.match(line):
            start = i
        elif start is not None and (found := _PY_ERROR.match(line)):
            last, start = (start, i, found), None
    if last is None:
        return None
    first, end, found = last
    block = "\n".join(lines[first : end + 1])
    return ProgramException(found.group(1), found.group(2), _cut(block))


def _node(stderr: str) -> ProgramException | None:
    lines = stderr.rstrip("\n").splitlines()
    for i in range(len(lines) - 1, -1, -1):
        found = _NODE_LAST.match(lines[i])
        if found is None:
            continue
        if i + 1 == len(lines) or not _NODE_FRAME.match(lines[i + 1]):
            continue  # no stack after it: a line the program printed
        frames = []
        for line in lines[i + 1 :]:
            if not _NODE_FRAME.match(line):
                break
            if "node:internal" not in line and "/usr/lib/hazmat/" not in line:
                frames.append(line)
        return ProgramException(found.group(1), found.group(2), _cut("\n".join(frames)))
    return None


def _cut(text: str) -> str:
    return text if len(text) <= _LIMIT else "...\n" + text[-_LIMIT:]
