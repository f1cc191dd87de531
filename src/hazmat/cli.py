"""The `hazmat` command: a thin layer over `Sandbox.run`, the image builder and the doctor.

Exit codes of `hazmat run`: the program's own exit status for `ok` and `error`; 124 timeout;
137 memory_limit; 141 output_limit; 126 blocked; 125 infra_error; 2 a bad request; 78 a bad
policy. `hazmat assess` exits 0 when the policy would let the code run, 126 when it would block.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hazmat import __version__
from hazmat._exceptions import HazmatError, InputError
from hazmat.audit.commands import add_audit_commands
from hazmat.languages import LANGUAGES, Language, get_language, language_for_path
from hazmat.models import Assessment, ExecutionResult, Outcome
from hazmat.policy import Policy, TrustLevel, load_policy
from hazmat.validation import check_file_name

__all__ = ["main"]

OUTCOME_EXIT = {
    Outcome.TIMEOUT: 124,
    Outcome.MEMORY_LIMIT: 137,
    Outcome.OUTPUT_LIMIT: 141,
    Outcome.INFRA_ERROR: 125,
    Outcome.BLOCKED: 126,
}


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args))
    except HazmatError as exc:
        print(f"hazmat: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hazmat", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"hazmat {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run a program in a fresh hardened container")
    source = run.add_mutually_exclusive_group(required=True)
    source.add_argument("program", nargs="?", metavar="FILE", help="the program to run")
    source.add_argument("-c", dest="code", metavar="CODE", help="the program, as a string")
    run.add_argument("--lang", help=f"one of {', '.join(LANGUAGES)} (default: from the extension)")
    run.add_argument("--trust", choices=[t.value for t in TrustLevel], help="trust level")
    run.add_argument("--policy", type=Path, help="YAML policy file")
    run.add_argument("--timeout", type=float, metavar="SEC", help="wall-clock limit in seconds")
    run.add_argument("--memory", type=int, metavar="MB", help="memory limit in MB")
    run.add_argument("--runtime", choices=["runc", "runsc"], help="container runtime")
    run.add_argument("--stdin", type=Path, metavar="FILE", help="file fed to the program's stdin")
    run.add_argument(
        "--file",
        dest="input_files",
        type=Path,
        action="append",
        default=[],
        metavar="PATH",
        help="copy a file into the working directory (repeatable)",
    )
    run.add_argument(
        "--output-file",
        action="append",
        default=[],
        metavar="NAME",
        help="collect a file the program writes in its working directory",
    )
    run.add_argument(
        "--output-dir",
        type=Path,
        default=Path("."),
        metavar="DIR",
        help="where collected files are written (default: .)",
    )
    run.add_argument("--caller", metavar="NAME", help="who is asking (recorded in the audit log)")
    run.add_argument(
        "--override-reason",
        metavar="TEXT",
        help="run code the policy blocks, and record why (at least 20 characters by default)",
    )
    run.add_argument("--json", action="store_true", help="print one JSON object with the result")
    run.set_defaults(handler=_cmd_run)

    assess = sub.add_parser("assess", help="rate a program's risk without running it")
    source = assess.add_mutually_exclusive_group(required=True)
    source.add_argument("program", nargs="?", metavar="FILE", help="the program to assess")
    source.add_argument("-c", dest="code", metavar="CODE", help="the program, as a string")
    assess.add_argument("--lang", help=f"one of {', '.join(LANGUAGES)} (default: from extension)")
    assess.add_argument("--trust", choices=[t.value for t in TrustLevel], help="trust level")
    assess.add_argument("--policy", type=Path, help="YAML policy file")
    assess.add_argument(
        "--semgrep", action="store_true", help="also run Semgrep (seconds; cached by code hash)"
    )
    assess.add_argument("--json", action="store_true", help="print one JSON object")
    assess.set_defaults(handler=_cmd_assess)

    images = sub.add_parser("images", help="build or list hazmat's images")
    images_sub = images.add_subparsers(dest="images_command", required=True)
    build = images_sub.add_parser("build", help="build images from Debian packages (needs root)")
    build.add_argument(
        "--lang",
        action="append",
        default=[],
        metavar="L",
        help="only the image for this language or image name (repeatable)",
    )
    build.add_argument("--missing", action="store_true", help="skip images that are present")
    build.set_defaults(handler=_cmd_images_build)
    listing = images_sub.add_parser("list", help="show hazmat's images")
    listing.add_argument("--json", action="store_true")
    listing.set_defaults(handler=_cmd_images_list)

    add_audit_commands(sub)

    doctor = sub.add_parser("doctor", help="check that this machine can run sandboxes")
    doctor.add_argument("--json", action="store_true")
    doctor.set_defaults(handler=_cmd_doctor)

    bench = sub.add_parser(
        "bench", help="latency of docker run vs the cold path vs the warm pool; throughput"
    )
    bench.add_argument("--runs", type=int, default=20, help="timed calls per row (default 20)")
    bench.add_argument("--lang", action="append", help="a language (repeatable; default all)")
    bench.add_argument("--runtime", action="append", choices=["runc", "runsc"])
    bench.add_argument("--throughput-seconds", type=float, default=60.0, help="0 to skip")
    bench.add_argument("--callers", type=int, default=4)
    bench.add_argument("--markdown", action="store_true", help="print the tables as Markdown")
    bench.set_defaults(handler=_cmd_bench)
    return parser


def _cmd_bench(args: argparse.Namespace) -> int:
    from hazmat.bench import PRINT_ONE, markdown, run_bench

    if args.runs < 2 or args.callers < 1 or args.throughput_seconds < 0:
        raise InputError("--runs must be at least 2, --callers at least 1, seconds not negative")
    languages = [get_language(name).name for name in args.lang or PRINT_ONE]
    print("| path | language | runtime | median ms | p95 ms | min ms |", flush=True)
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


def _cmd_run(args: argparse.Namespace) -> int:
    from hazmat.sandbox import Sandbox

    # the session lets the audit log diff each run of a script against its last one
    code, language, session = _program(args)
    files = {check_file_name(p.name): _read(p, "file") for p in args.input_files}
    stdin = _read(args.stdin, "stdin") if args.stdin else None
    policy = load_policy(args.policy) if args.policy else Policy()
    # one run: a warm pool would only start containers nobody uses
    with Sandbox(policy, pool=False) as sandbox:
        result = sandbox.run(
            code,
            language.name,
            trust=args.trust,
            stdin=stdin,
            files=files,
            output_files=args.output_file,
            timeout=args.timeout,
            memory_mb=args.memory,
            runtime=args.runtime,
            caller=args.caller,
            session=session,
            override_reason=args.override_reason,
        )
    if args.json:
        print(json.dumps(result.to_dict(), ensure_ascii=False))
    else:
        _print_plain(result)
    _save_files(result, args.output_dir, args.output_file)
    return exit_code(result)


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
        print(json.dumps(data, ensure_ascii=False))
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


def exit_code(result: ExecutionResult) -> int:
    if result.outcome in OUTCOME_EXIT:
        return OUTCOME_EXIT[result.outcome]
    code = result.exit_code or 0
    return code if 0 <= code <= 255 else 1


def _print_plain(result: ExecutionResult) -> None:
    sys.stdout.buffer.write(result.stdout_bytes)
    sys.stdout.buffer.flush()
    sys.stderr.buffer.write(result.stderr_bytes)
    why = {
        Outcome.TIMEOUT: f"timed out after {result.limits.timeout_s:g}s; killed",
        Outcome.MEMORY_LIMIT: f"killed at the {result.limits.memory_mb} MB memory limit",
        Outcome.OUTPUT_LIMIT: f"stopped after {result.limits.output_bytes} bytes of output",
        Outcome.INFRA_ERROR: f"infrastructure error: {result.error}",
        Outcome.BLOCKED: f"{result.error}",
    }.get(result.outcome)
    if why:
        print(f"hazmat: {why}", file=sys.stderr)
    for note in result.notes:
        print(f"hazmat: note: {note}", file=sys.stderr)
    sys.stderr.flush()


def _save_files(result: ExecutionResult, directory: Path, wanted: list[str]) -> None:
    if not wanted or not result.files:
        return
    directory.mkdir(parents=True, exist_ok=True)
    for name, data in result.files.items():
        (directory / check_file_name(name)).write_bytes(data)


def _read(path: Path, what: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read {what} {str(path)!r}: {exc.strerror or exc}") from None


def _cmd_images_build(args: argparse.Namespace) -> int:
    from hazmat.backends.images import RECIPES, ImageBuilder, recipes_for

    builder = ImageBuilder()
    recipes = recipes_for(args.lang) if args.lang else list(RECIPES.values())
    for recipe in recipes:
        if args.missing and builder.status(recipe).present:
            print(f"[{recipe.name}] {recipe.ref} is present; skipped")
            continue
        builder.build(recipe)
    return 0


def _cmd_images_list(args: argparse.Namespace) -> int:
    from hazmat.backends.images import RECIPES, ImageBuilder

    builder = ImageBuilder()
    statuses = [builder.status(recipe) for recipe in RECIPES.values()]
    if args.json:
        rows: list[dict[str, Any]] = [
            {
                "image": s.recipe.ref,
                "present": s.present,
                "id": s.image_id,
                "size_mb": round(s.size_mb, 1),
                "built": s.built,
                "version": s.version,
                "languages": list(s.recipe.languages),
            }
            for s in statuses
        ]
        print(json.dumps(rows))
        return 0
    print(f"{'IMAGE':<18} {'LANGUAGES':<24} {'ID':<13} {'SIZE':>8}  BUILT")
    for s in statuses:
        langs = ", ".join(s.recipe.languages)
        if s.present:
            print(f"{s.recipe.ref:<18} {langs:<24} {s.image_id:<13} {s.size_mb:>6.0f}MB  {s.built}")
        else:
            hint = f"(missing: hazmat images build --lang {s.recipe.name})"
            print(f"{s.recipe.ref:<18} {langs:<24} {hint}")
    return 0 if all(s.present for s in statuses) else 1


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
