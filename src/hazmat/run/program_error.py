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
_PY_SYNTAX = re.compile(r'^  File "[^"]+", line \d+\n(?:.*\n)*?(\w*Error): (.*)$', re.MULTILINE)
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
        blocks = list(_PY_SYNTAX.finditer(stderr))
        if not blocks:
            return None
        syntax = blocks[-1]
        block = stderr[syntax.start() : syntax.end()]
        return ProgramException(syntax.group(1), syntax.group(2), _cut(block))
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
