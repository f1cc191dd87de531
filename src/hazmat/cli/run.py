"""`hazmat run`: one program in a fresh hardened container, through a hazmat service
(cli/remote.py): the one set, else the user's local server, kept warm (cli/local_server.py);
or here, with --local. Its output as it comes, then hazmat's remarks, or one JSON object."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from hazmat.cli import local_server
from hazmat.cli.common import (
    INTERNAL_ERROR,
    add_option_flags,
    add_source,
    option_values,
    policy,
    program,
    read,
    weaker_runtime,
)
from hazmat.cli.remote import run_remote
from hazmat.displays import display_files
from hazmat.models import ExecutionResult, Outcome
from hazmat.options import options

__all__ = ["add"]

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


def add(sub: Any) -> None:
    run = sub.add_parser(
        "run",
        help="run a program in a fresh hardened container",
        description="Run a program once in a fresh, hardened, single-use container.",
        epilog=RUN_EXITS,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_source(run, "run")  # with --trust
    add_option_flags(run, [name for name in options() if name != "trust"])
    _add_outputs(run)
    run.add_argument("--json", action="store_true", help="print one JSON object with the result")
    run.add_argument(
        "--pip",
        "--npm",
        dest="pip",
        action="append",
        default=[],
        metavar="REQUIREMENT",
        help="install this package first (repeatable; 'seaborn==0.13.2', or for JavaScript "
        "'lodash@4.17.21'): the program runs in a session that installs it from the policy's "
        "index (packages.python.index, packages.npm.registry)",
    )
    run.add_argument(
        "--local",
        action="store_true",
        help="run in this process, not through a hazmat service (HAZMAT_URL, HAZMAT_API_KEY) "
        "or your local server (set HAZMAT_NO_SERVER=1 for every run)",
    )
    run.set_defaults(handler=_run)


def _add_outputs(run: argparse.ArgumentParser) -> None:
    run.add_argument(
        "--output-dir",
        type=Path,
        default=Path("."),
        metavar="DIR",
        help="where collected files are written (default: .; checked before the run)",
    )
    run.add_argument(
        "--displays",
        type=Path,
        metavar="DIR",
        help="write the program's displays (Python's charts and tables, R's plots, ...) to DIR "
        "as display-N.png, .html, ... and print their names (checked before the run)",
    )


def _run(args: argparse.Namespace) -> int:
    from hazmat.cli import output_dir

    # the script's name lets the audit log diff each run of it against its last one
    code, language, script = program(args)
    inputs = _inputs(args)
    if args.output_file:
        output_dir.prepare(args.output_dir)
    if args.displays:
        output_dir.prepare(args.displays, "--displays")
    options = {**inputs, **_options(args, script)}
    live = None if args.json else _Live()  # plain output is written as it comes
    here = args.local or args.policy or args.caller
    service = None if here else local_server.for_cli(local_server.say)
    if service is not None and not service.own and weaker_runtime(args):
        service = None  # runc at a runsc level: the user's own choice, no service key's
    if args.pip:
        from hazmat.cli.pip_run import run_with_packages

        result = run_with_packages(args, code, language.name, options, live, service)
    elif service is not None:
        result = run_remote(service, code, language.name, options, live)
    else:
        from hazmat.sandbox import Sandbox

        # one run: a warm pool would only start containers nobody uses
        with Sandbox(policy(args), pool=False) as sandbox:
            result = sandbox.run(code, language.name, caller=args.caller, on_output=live, **options)
        if live is not None and live.broken:
            raise BrokenPipeError  # main ends quietly, as for any reader gone away
    return _finish(args, result, output_shown=live is not None)


def _inputs(args: argparse.Namespace) -> dict[str, Any]:
    """The files (then stdin) the program is given, read before anything runs."""
    files = {p.name: read(p, "file") for p in args.input_files}
    if args.stdin is None:
        stdin = None
    elif str(args.stdin) == "-":
        stdin = sys.stdin.buffer.read()
    else:
        stdin = read(args.stdin, "stdin")
    return {"stdin": stdin, "files": files}


def _options(args: argparse.Namespace, script: str | None) -> dict[str, Any]:
    """The rest of `Sandbox.run`'s keyword arguments (the service takes the same ones); the
    caller is the local run's own (a service sets it from its key)."""
    given = option_values(args, [name for name in options() if name != "caller"])
    return given | {"script": script, "module": given.get("module") or _module_of(args)}


def _module_of(args: argparse.Namespace) -> str | None:
    """A program file named .mjs/.mts is an ES module, .cjs/.cts CommonJS, as Node has it."""
    suffix = Path(args.program).suffix.lower() if args.code is None else ""
    return {".mjs": "esm", ".mts": "esm", ".cjs": "commonjs", ".cts": "commonjs"}.get(suffix)


class _Live:
    """The program's stdout and stderr written as they come. A reader that has gone away
    (`| head`) cancels the run."""

    def __init__(self) -> None:
        self.broken = False

    def __call__(self, stream: str, data: bytes) -> None:
        out = sys.stdout.buffer if stream == "stdout" else sys.stderr.buffer
        try:
            out.write(data)
            out.flush()
        except BrokenPipeError:
            self.broken = True
            raise


def _finish(args: argparse.Namespace, result: ExecutionResult, output_shown: bool) -> int:
    """Save the output files, print the result, and say what `hazmat run` exits with."""
    from hazmat.cli import output_dir

    problems = output_dir.save(args.output_dir, result.files) if result.files else []
    shown: list[str] = []
    if args.displays and result.displays:
        files = display_files(result.displays)
        problems += output_dir.save(args.displays, files)
        shown = [str(args.displays / name) for name in files]
    if args.json:
        data = result.to_dict()
        if problems:
            data["output_dir_errors"] = problems
        print(json.dumps(data, ensure_ascii=True), flush=True)
    else:
        _print_plain(result, output_shown)
    for name in shown:
        print(f"hazmat: display: {name}", file=sys.stderr)
    for problem in problems:
        print(f"hazmat: error: {problem}", file=sys.stderr)
    return CANNOT_WRITE if problems else result.exit_status


def _print_plain(result: ExecutionResult, output_shown: bool = False) -> None:
    """The program's output as it was (unless it was shown as it came), then hazmat's remarks
    on stderr, prefixed `hazmat:`."""
    if not output_shown:
        sys.stdout.buffer.write(result.stdout_bytes)
        sys.stdout.buffer.flush()
        sys.stderr.buffer.write(result.stderr_bytes)
        sys.stderr.buffer.flush()
    # a program that failed by itself has said why, on its own stderr, and in its status
    if result.error and result.outcome is not Outcome.ERROR:
        print(f"hazmat: {result.error}", file=sys.stderr)
    for note in result.notes:
        print(f"hazmat: note: {note}", file=sys.stderr)
    sys.stderr.flush()
