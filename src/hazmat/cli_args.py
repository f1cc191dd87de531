"""The `hazmat` command line's shape: every command, option and help text, and the exit-status
table `hazmat run --help` shows. What each command does lives in cli.py."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, NoReturn

from hazmat import __version__
from hazmat._exceptions import InputError
from hazmat.audit.command_args import add_audit_commands
from hazmat.languages import LANGUAGES
from hazmat.models import Outcome
from hazmat.policy import TrustLevel
from hazmat.server.commands import add_server_commands

__all__ = ["CANNOT_WRITE", "INTERNAL_ERROR", "RUN_EXITS", "UsageError", "build_parser"]

Handler = Callable[[argparse.Namespace], int]

INTERNAL_ERROR = 70  # EX_SOFTWARE
CANNOT_WRITE = 73  # EX_CANTCREAT: an output file could not be written to --output-dir

_MEANING = {
    Outcome.TIMEOUT: "timeout: stopped at the time limit",
    Outcome.COMPILE_TIMEOUT: "compile_timeout: the build step outlasted its own budget",
    Outcome.MEMORY_LIMIT: "memory_limit: killed at the memory limit",
    Outcome.OUTPUT_LIMIT: "output_limit: stopped after the output cap",
    Outcome.BLOCKED: "blocked: the assessment and the policy refused it",
    Outcome.INFRA_ERROR: "infra_error: engine unreachable, image or runtime missing",
    Outcome.CANCELLED: "cancelled: stopped by its caller while it ran",
}
RUN_EXITS = "\n".join(
    [
        "exit status:",
        "  own   ok (0), error, compile_error, or pids_limit (it failed after a fork or thread",
        "        was refused):",
        "        the program's (or its compiler's) own status",
        *(f"  {outcome.exit_status:<5} {meaning}" for outcome, meaning in _MEANING.items()),
        "  2     bad request: language, code, file name, option",
        f"  {CANNOT_WRITE:<5} an output file could not be written to --output-dir",
        "  74    the audit log cannot record, so nothing ran",
        "  78    bad policy file (the message names the file and the key)",
        f"  {INTERNAL_ERROR:<5} internal error (HAZMAT_DEBUG=1 shows the traceback)",
        "With --json the outcome is authoritative: a program can exit 124 by itself.",
    ]
)


class UsageError(InputError):
    """The command line itself is wrong (argparse's complaint)."""


class _Parser(argparse.ArgumentParser):
    """argparse, raising instead of exiting, so that `main` reports every error one way."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see `{self.prog} --help`)")


def build_parser(handlers: Mapping[str, Handler]) -> argparse.ArgumentParser:
    """The parser; `handlers` maps run, assess, images build, images list, doctor and bench
    to the functions that carry them out (cli.py)."""
    parser = _Parser(prog="hazmat", description="run untrusted code in hardened containers")
    parser.add_argument("--version", action="version", version=f"hazmat {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_run(sub, handlers["run"])
    _add_assess(sub, handlers["assess"])
    _add_images(sub, handlers["images build"], handlers["images list"])
    add_audit_commands(sub)
    add_server_commands(sub)
    doctor = sub.add_parser("doctor", help="check that this machine can run sandboxes")
    doctor.add_argument("--json", action="store_true", help="print the checks as JSON")
    doctor.set_defaults(handler=handlers["doctor"])
    _add_bench(sub, handlers["bench"])
    return parser


def _source(parser: argparse.ArgumentParser, what: str) -> None:
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("program", nargs="?", metavar="FILE", help=f"the program to {what}")
    source.add_argument("-c", dest="code", metavar="CODE", help="the program, as a string")
    langs = ", ".join(LANGUAGES)
    parser.add_argument("--lang", help=f"one of {langs} (default: from the file's extension)")
    parser.add_argument(
        "--trust",
        choices=[t.value for t in TrustLevel],
        help="trust level, which picks limits and runtime (default: the policy's, untrusted)",
    )
    parser.add_argument("--policy", type=Path, metavar="FILE", help="YAML policy file")


def _add_run(sub: Any, handler: Handler) -> None:
    run = sub.add_parser(
        "run",
        help="run a program in a fresh hardened container",
        description="Run a program once in a fresh, hardened, single-use container.",
        epilog=RUN_EXITS,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _source(run, "run")
    _add_run_limits(run)
    _add_run_io(run)
    run.add_argument("--caller", metavar="NAME", help="who is asking (recorded in the audit log)")
    run.add_argument(
        "--override-reason",
        metavar="TEXT",
        help="run code the policy blocks, and record why (at least 20 characters by default)",
    )
    run.add_argument("--json", action="store_true", help="print one JSON object with the result")
    run.add_argument(
        "--local",
        action="store_true",
        help="run in this process even when a hazmat service is set (HAZMAT_URL, HAZMAT_API_KEY)",
    )
    run.set_defaults(handler=handler)


def _add_run_limits(run: argparse.ArgumentParser) -> None:
    run.add_argument("--timeout", type=float, metavar="SEC", help="wall-clock limit in seconds")
    run.add_argument("--memory", type=int, metavar="MB", help="memory limit in MB")
    run.add_argument(
        "--image",
        metavar="NAME",
        help="an image the policy allows for this trust level, e.g. python-data (numpy, "
        "pandas, matplotlib, scipy, scikit-learn); default: the policy's",
    )
    run.add_argument(
        "--module",
        choices=["auto", "esm", "commonjs"],
        help="JavaScript/TypeScript: run as an ES module or CommonJS (default: auto, from the "
        "code and the file's extension)",
    )
    run.add_argument(
        "--runtime", choices=["runc", "runsc"], help="container runtime (default: the policy's)"
    )
    run.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="HOST",
        help="reach only these hosts through the allowlist proxy (repeatable; each must be on "
        "the trust level's network.allow; default: all of them)",
    )


def _add_run_io(run: argparse.ArgumentParser) -> None:
    run.add_argument("--stdin", type=Path, metavar="FILE", help="file fed to the program's stdin")
    run.add_argument(
        "--file",
        dest="input_files",
        type=Path,
        action="append",
        default=[],
        metavar="PATH",
        help="copy a file into the working directory, under its own name (repeatable)",
    )
    run.add_argument(
        "--output-file",
        action="append",
        default=[],
        metavar="NAME",
        help="collect a file the program writes, e.g. out/report.json (repeatable)",
    )
    run.add_argument(
        "--output-dir",
        type=Path,
        default=Path("."),
        metavar="DIR",
        help="where collected files are written (default: .; checked before the run)",
    )
    run.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="an environment variable for the program (repeatable)",
    )
    run.add_argument(
        "--arg",
        dest="program_args",
        action="append",
        default=[],
        metavar="ARG",
        help="a command-line argument for the program (repeatable, in order; --arg=-v for one "
        "that starts with -)",
    )


def _add_assess(sub: Any, handler: Handler) -> None:
    assess = sub.add_parser(
        "assess",
        help="rate a program's risk without running it",
        description="Rate a program's risk. Exits 0 if the policy would run it, 126 if not.",
    )
    _source(assess, "assess")
    assess.add_argument(
        "--semgrep", action="store_true", help="also run Semgrep (seconds; cached by code hash)"
    )
    assess.add_argument("--json", action="store_true", help="print one JSON object")
    assess.set_defaults(handler=handler)


def _add_images(sub: Any, build_handler: Handler, list_handler: Handler) -> None:
    images = sub.add_parser("images", help="build or list hazmat's images")
    images_sub = images.add_subparsers(dest="images_command", required=True, metavar="COMMAND")
    build = images_sub.add_parser("build", help="build images from Debian packages (needs root)")
    build.add_argument(
        "--lang",
        action="append",
        default=[],
        metavar="L",
        help="only the image for this language or image name (repeatable)",
    )
    build.add_argument(
        "--missing",
        action="store_true",
        help="only images that are absent or built from another recipe (from the image cache "
        "in /var/cache/hazmat/images when it has them)",
    )
    build.add_argument(
        "--suite",
        choices=("trixie", "bookworm"),
        default="trixie",
        help="Debian suite: trixie (tag 2, the default) or bookworm (the old tag 1 images)",
    )
    own = build.add_argument_group(
        "an image of your own (docs/images.md): --name NAME --from BASE and packages"
    )
    own.add_argument("--name", metavar="NAME", help="build hazmat/NAME from a base image")
    own.add_argument("--from", dest="base", metavar="BASE", help="python, python-data or node")
    for flag, what in (
        ("apt", "a Debian package"),
        ("pip", "a Python requirement"),
        ("npm", "an npm package"),
    ):
        own.add_argument(
            f"--{flag}", action="append", default=[], metavar="P", help=f"{what} (repeatable)"
        )
    build.set_defaults(handler=build_handler)
    listing = images_sub.add_parser("list", help="show hazmat's images")
    listing.add_argument("--json", action="store_true", help="print the images as JSON")
    listing.set_defaults(handler=list_handler)


def _add_bench(sub: Any, handler: Handler) -> None:
    bench = sub.add_parser(
        "bench", help="latency of docker run vs the cold path vs the warm pool; throughput"
    )
    bench.add_argument("--runs", type=int, default=20, help="timed calls per row (default 20)")
    bench.add_argument("--lang", action="append", help="a language (repeatable; default: all four)")
    bench.add_argument(
        "--runtime",
        action="append",
        choices=["runc", "runsc"],
        help="a runtime (repeatable; default: both, if the engine has them)",
    )
    bench.add_argument(
        "--throughput-seconds",
        type=float,
        default=60.0,
        help="seconds per throughput measurement (default 60; 0 skips it)",
    )
    bench.add_argument(
        "--callers", type=int, default=4, help="concurrent callers for throughput (default 4)"
    )
    bench.add_argument("--markdown", action="store_true", help="print the tables as Markdown")
    bench.set_defaults(handler=handler)
