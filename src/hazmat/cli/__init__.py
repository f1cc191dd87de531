"""The `hazmat` command: one module per command or group of commands, each with `add(sub)`
that adds its parser and sets `handler=` to a function of the same module (parser beside
handler). A command module imports only what parsing needs; its handlers import the rest when
they run, so that `hazmat --help` stays quick.

Every error is a message, never a traceback: hazmat's own errors exit with their class's
`exit_code`, a usage error with 2, a package hazmat needs that cannot be imported with 125
(saying which, and the command that installs it), an unexpected failure with 70 (set
HAZMAT_DEBUG=1 for the traceback). With `--json`, errors too are one JSON object on stdout. A
reader that goes away (`| head`) ends the command quietly. argparse rather than click: it is in
the standard library, `main(argv)` already runs in-process in the tests, and the behaviours
click would bring (exit codes, broken pipes) live in `main` in a few lines.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

from hazmat import __version__
from hazmat._exceptions import HazmatError, InfraError, InputError
from hazmat.cli.common import INTERNAL_ERROR, broken_dependency

__all__ = ["COMMANDS", "INTERNAL_ERROR", "UsageError", "main"]

# In the order `hazmat --help` lists them; each is the module hazmat.cli.<name>.
COMMANDS = (
    "run",
    "batch",
    "polygon",
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
    except ImportError as exc:  # a package hazmat needs, absent or broken: say which, and how
        command = f"hazmat {argv[0]}" if argv and argv[0] in COMMANDS else "hazmat"
        said = broken_dependency(exc, command)
        if said is None:  # hazmat's own module: a bug
            return _internal(as_json, exc)
        _debug(exc)
        return _fail(as_json, InfraError.__name__, said, InfraError.exit_code)
    except Exception as exc:
        return _internal(as_json, exc)


def _debug(exc: BaseException) -> None:
    if os.environ.get("HAZMAT_DEBUG"):
        import traceback  # here: only a failure needs it

        traceback.print_exception(exc)


def _internal(as_json: bool, exc: Exception) -> int:
    _debug(exc)
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
