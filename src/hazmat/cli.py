"""The `hazmat` command: a thin layer over `Sandbox.run`, the image builder and the doctor.

Every error is a message, never a traceback: hazmat's own errors exit with their class's
`exit_code`, a usage error with 2, an unexpected failure with 70 (set HAZMAT_DEBUG=1 for the
traceback). With `--json`, errors too are one JSON object on stdout. A reader that goes away
(`| head`) ends the command quietly. argparse rather than click: it is in the standard library,
`main(argv)` already runs in-process in the tests, and the behaviours click would bring (exit
codes, broken pipes) live in `main` in a few lines.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import traceback
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from hazmat._exceptions import HazmatError, InputError
from hazmat.cli_args import CANNOT_WRITE, INTERNAL_ERROR, build_parser
from hazmat.languages import Language, get_language, language_for_path
from hazmat.models import Assessment, ExecutionResult, Outcome
from hazmat.policy import Policy, load_policy
from hazmat.server.client import find_service, run_remote

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    as_json = "--json" in argv  # until the command line is understood
    try:
        args = _parser().parse_args(argv)
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
    except Exception as exc:  # noqa: BLE001 - no traceback for any input
        if os.environ.get("HAZMAT_DEBUG"):
            traceback.print_exc()
        why = f"internal error ({type(exc).__name__}: {exc}); please report it"
        return _fail(as_json, "InternalError", why, INTERNAL_ERROR)


def _parser() -> argparse.ArgumentParser:
    return build_parser(
        {
            "run": _cmd_run,
            "assess": _cmd_assess,
            "images build": _cmd_images_build,
            "images list": _cmd_images_list,
            "doctor": _cmd_doctor,
            "bench": _cmd_bench,
        }
    )


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


def _cmd_bench(args: argparse.Namespace) -> int:
    from hazmat.bench import PRINT_ONE, markdown, run_bench

    if args.runs < 2 or args.callers < 1 or args.throughput_seconds < 0:
        raise InputError("--runs must be at least 2, --callers at least 1, seconds not negative")
    languages = [get_language(name).name for name in args.lang or PRINT_ONE]
    report = run_bench(
        runs=args.runs,
        languages=languages,
        runtimes=args.runtime,
        throughput_s=args.throughput_seconds,
        callers=args.callers,
        progress=lambda line: print(line, flush=True),
    )
    if args.markdown:
        print(markdown(report, f"`hazmat bench --runs {args.runs}`"))
    return 0


def _program(args: argparse.Namespace) -> tuple[str | bytes, Language, str | None]:
    """The code, its language and a session name (the script's path) from FILE or -c."""
    if args.code is not None:
        return args.code, get_language(args.lang or "python"), None
    path = Path(args.program)
    code = _read(path, "program")
    language = get_language(args.lang) if args.lang else language_for_path(path)
    return code, language, str(path.resolve())


def _module_of(args: argparse.Namespace) -> str | None:
    """A program file named .mjs/.mts is an ES module, .cjs/.cts CommonJS, as Node has it."""
    suffix = Path(args.program).suffix.lower() if args.code is None else ""
    return {".mjs": "esm", ".mts": "esm", ".cjs": "commonjs", ".cts": "commonjs"}.get(suffix)


def _env(pairs: list[str]) -> dict[str, str]:
    env = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep:
            raise InputError(f"--env {pair!r} must look like NAME=VALUE")
        env[name] = value
    return env


def _cmd_run(args: argparse.Namespace) -> int:
    from hazmat import output_dir

    # the session lets the audit log diff each run of a script against its last one
    code, language, session = _program(args)
    files = {p.name: _read(p, "file") for p in args.input_files}
    stdin = _read(args.stdin, "stdin") if args.stdin else None
    if args.output_file:
        output_dir.prepare(args.output_dir)
    options: dict[str, Any] = {
        "trust": args.trust,
        "stdin": stdin,
        "files": files,
        "output_files": args.output_file,
        "env": _env(args.env),
        "args": args.program_args,
        "timeout": args.timeout,
        "memory_mb": args.memory,
        "runtime": args.runtime,
        "image": args.image,
        "module": args.module or _module_of(args),
        "network": args.allow_host or None,
        "session": session,
        "override_reason": args.override_reason,
    }
    live = None if args.json else _Live()  # plain output is written as it comes
    service = None if args.local or args.policy or args.caller else find_service()
    if service is not None:
        remote = run_remote(service, code, language.name, options, live)
        shown = live is not None
        return _finish(
            args, remote.files, remote.to_dict, lambda: remote.print_plain(shown), remote.status
        )
    from hazmat.sandbox import Sandbox

    policy = load_policy(args.policy) if args.policy else Policy()
    # one run: a warm pool would only start containers nobody uses
    with Sandbox(policy, pool=False) as sandbox:
        result = sandbox.run(code, language.name, caller=args.caller, on_output=live, **options)
    if live is not None and live.broken:
        raise BrokenPipeError  # main ends quietly, as for any reader gone away
    return _finish(
        args,
        result.files,
        result.to_dict,
        lambda: _print_plain(result, live is not None),
        result.exit_status,
    )


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


def _finish(
    args: argparse.Namespace,
    files: Mapping[str, bytes],
    as_dict: Callable[[], dict[str, Any]],
    print_plain: Callable[[], None],
    status: int,
) -> int:
    """Save the output files, print the result, and say what `hazmat run` exits with."""
    from hazmat import output_dir

    problems = output_dir.save(args.output_dir, files) if files else []
    if args.json:
        data = as_dict()
        if problems:
            data["output_dir_errors"] = problems
        print(json.dumps(data, ensure_ascii=True), flush=True)
    else:
        print_plain()
    for problem in problems:
        print(f"hazmat: error: {problem}", file=sys.stderr)
    return CANNOT_WRITE if problems else status


def _cmd_assess(args: argparse.Namespace) -> int:
    from hazmat.assess.assessor import Assessor
    from hazmat.assess.decision import Decision, decide
    from hazmat.policy import parse_trust

    code, language, _ = _program(args)
    policy = load_policy(args.policy) if args.policy else Policy()
    trust = parse_trust(args.trust or policy.default_trust)
    settings = policy.settings(trust)
    with Assessor() as assessor:
        assessment = assessor.assess(
            code, language.name, semgrep=args.semgrep, max_bytes=settings.limits.max_code_bytes
        )
    decision = decide(assessment, settings.assess, None)
    if args.json:
        data = assessment.to_dict()
        data["decision"] = decision.value
        data["trust"] = trust.value
        print(json.dumps(data, ensure_ascii=True))
    else:
        _print_assessment(assessment, decision.value, trust.value)
    return 126 if decision is Decision.BLOCK else 0


def _print_assessment(assessment: Assessment, decision: str, trust: str) -> None:
    state = "complete" if assessment.complete else "INCOMPLETE"
    print(
        f"{assessment.level.value}  score {assessment.score}, {state}, "
        f"{assessment.duration_ms:.0f} ms ({', '.join(assessment.analyzers) or 'no analyser'}); "
        f"policy for {trust}: {decision}"
    )
    for problem in assessment.problems:
        print(f"  problem: {problem}")
    shown = [f for f in assessment.findings if f.severity.rank > 0]
    if not shown:
        print("  no findings")
        return
    print(f"  {'LINE':>5}  {'SEVERITY':<8}  {'SOURCE':<10}  {'RULE':<28}  MESSAGE")
    for f in shown:
        rule = f.rule if len(f.rule) <= 28 else f.rule[:27] + "…"
        print(f"  {f.line:>5}  {f.severity.value:<8}  {f.source:<10}  {rule:<28}  {f.message}")
    hidden = len(assessment.findings) - len(shown)
    if hidden:
        print(f"  (and {hidden} informational finding(s); --json shows them)")


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


def _read(path: Path, what: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read {what} {str(path)!r}: {exc.strerror or exc}") from None


def _cmd_images_build(args: argparse.Namespace) -> int:
    from hazmat.backends.custom_images import CustomImage
    from hazmat.backends.images import RECIPES, ImageBuilder, recipes_for

    own = args.name or args.base or args.apt or args.pip or args.npm
    if own and (args.lang or args.missing):
        raise InputError("--name/--from build one image of your own; drop --lang and --missing")
    if own and not (args.name and args.base):
        raise InputError("an image of your own needs both --name NAME and --from BASE")
    builder = ImageBuilder()
    if own:
        image = CustomImage.of(args.name, args.base, args.apt, args.pip, args.npm)
        recipe = image.recipe(args.suite)
        builder.build(recipe)
        print(f"use it with --image {image.name}, after allowing it in the policy:")
        print(f"  trust: {{<level>: {{allow_images: [{image.name}]}}}}")
        return 0
    names = args.lang or list(RECIPES)
    for recipe in recipes_for(names, args.suite):
        if args.missing:
            builder.ensure(recipe)  # kept if current, else from the image cache, else built
        else:
            builder.build(recipe)
    return 0


def _cmd_images_list(args: argparse.Namespace) -> int:
    from hazmat.backends.images import RECIPES, ImageBuilder

    builder = ImageBuilder()
    statuses = [builder.status(recipe) for recipe in RECIPES.values()]
    own = builder.custom()
    if args.json:
        rows: list[dict[str, Any]] = [
            {
                "image": s.recipe.ref,
                "present": s.present,
                "id": s.image_id,
                "size_mb": round(s.size_mb, 1),
                "built": s.built,
                "version": s.version,
                "current": s.current if not s.base else None,
                "languages": list(s.languages),
                "from": s.base or None,
                "adds": s.adds or None,
            }
            for s in statuses + own
        ]
        print(json.dumps(rows))
        return 0
    print(f"{'IMAGE':<24} {'LANGUAGES':<24} {'ID':<13} {'SIZE':>8}  BUILT")
    for s in statuses + own:
        langs = ", ".join(s.languages)
        if s.present:
            print(f"{s.recipe.ref:<24} {langs:<24} {s.image_id:<13} {s.size_mb:>6.0f}MB  {s.built}")
            if s.base:
                print(f"{'':<24} from {s.base}, adds {s.adds}")
            elif not s.current:
                print(f"{'':<24} (stale: built from another recipe; hazmat images build --missing)")
        else:
            hint = f"(missing: hazmat images build --lang {s.recipe.name})"
            print(f"{s.recipe.ref:<24} {langs:<24} {hint}")
    return 0 if all(s.current for s in statuses) else 1


def _cmd_doctor(args: argparse.Namespace) -> int:
    from hazmat.doctor import run_checks

    checks = run_checks()
    if args.json:
        print(json.dumps([c.__dict__ for c in checks]))
    else:
        for c in checks:
            print(f"{'OK  ' if c.ok else 'FAIL'} {c.name}: {c.detail}")
            if not c.ok and c.fix:
                print(f"     fix: {c.fix}")
    return 0 if all(c.ok for c in checks) else 1
