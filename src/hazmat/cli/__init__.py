"""The `hazmat` command: one module per command or group of commands, each with `add(sub)`
that adds its parser and sets `handler=` to a function of the same module (parser beside
handler). A command module imports only what parsing needs; its handlers import the rest when
they run, so that `hazmat --help` stays quick.

Every error is a message, never a traceback: hazmat's own errors exit with their class's
`exit_code`, a usage error with 2, an unexpected failure with 70 (set HAZMAT_DEBUG=1 for the
traceback). With `--json`, errors too are one JSON object on stdout. A reader that goes away
(`| head`) ends the command quietly. argparse rather than click: it is in the standard library,
`main(argv)` already runs in-process in the tests, and the behaviours click would bring (exit
codes, broken pipes) live in `main` in a few lines.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import traceback
from collections.abc import Sequence
from typing import NoReturn

from hazmat import __version__
from hazmat._exceptions import HazmatError, InputError
from hazmat.cli.common import INTERNAL_ERROR

__all__ = ["COMMANDS", "INTERNAL_ERROR", "UsageError", "main"]

# In the order `hazmat --help` lists them; each is the module hazmat.cli.<name>.
COMMANDS = (
    "run",
    "batch",
    "assess",
    "images",
    "audit",
    "serve",
    "server",
    "worker",
    "mcp",
    "keys",
    "doctor",
    "bench",
)


class UsageError(InputError):
    """The command line itself is wrong (argparse's complaint)."""


class _Parser(argparse.ArgumentParser):
    """argparse, raising instead of exiting, so that `main` reports every error one way."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see `{self.prog} --help`)")


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    as_json = "--json" in argv  # until the command line is understood
    try:
        args = _parser(argv[0] if argv else None).parse_args(argv)
        as_json = bool(getattr(args, "json", False))
        code = int(args.handler(args))
        sys.stdout.flush()  # here, so that a reader gone away is seen below
        return code
    except SystemExit as exc:  # --help and --version; a message is a failure, as Python has it
        if isinstance(exc.code, str):
            return _fail(as_json, "Failure", exc.code, 1)
        return exc.code if isinstance(exc.code, int) else 0
    except BrokenPipeError:
        _silence_stdout()
        return 141  # as a Unix tool killed by SIGPIPE
    except KeyboardInterrupt:
        return 130
    except HazmatError as exc:
        return _fail(as_json, type(exc).__name__, str(exc), exc.exit_code)
    except Exception as exc:
        if os.environ.get("HAZMAT_DEBUG"):
            traceback.print_exc()
        why = f"internal error ({type(exc).__name__}: {exc}); please report it"
        return _fail(as_json, "InternalError", why, INTERNAL_ERROR)


def _parser(command: str | None = None) -> argparse.ArgumentParser:
    """Every command, in the order `hazmat --help` lists them; only `command`'s when it names
    one (the others' modules are then never imported: `hazmat run` starts quicker)."""
    parser = _Parser(prog="hazmat", description="run untrusted code in hardened containers")
    parser.add_argument("--version", action="version", version=f"hazmat {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in (command,) if command in COMMANDS else COMMANDS:
        importlib.import_module(f"hazmat.cli.{name}").add(sub)
    return parser


def _fail(as_json: bool, kind: str, message: str, code: int) -> int:
    try:
        if as_json:
            error = {"type": kind, "message": message, "exit_code": code}
            print(json.dumps({"error": error}, ensure_ascii=True), flush=True)
        print(f"hazmat: error: {message}", file=sys.stderr, flush=True)
    except BrokenPipeError:
        _silence_stdout()
    return code


def _silence_stdout() -> None:
    """After EPIPE: point stdout at /dev/null so the interpreter's final flush stays quiet."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
