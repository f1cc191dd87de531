"""`hazmat assess`: a program's risk and what the policy would do with it, without running it.
Exits 0 if the policy would run it, 126 if not. Like `hazmat run`, it asks the service set or
the user's local server (cli/local_server.py), whose assessor is already loaded; --local and
--policy assess in this process."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from hazmat.cli.common import add_source, policy, program

if TYPE_CHECKING:
    from hazmat.models import Assessment

__all__ = ["add"]


def add(sub: Any) -> None:
    assess = sub.add_parser(
        "assess",
        help="rate a program's risk without running it",
        description="Rate a program's risk. Exits 0 if the policy would run it, 126 if not.",
    )
    add_source(assess, "assess")
    assess.add_argument(
        "--semgrep", action="store_true", help="also run Semgrep (seconds; cached by code hash)"
    )
    assess.add_argument("--json", action="store_true", help="print one JSON object")
    assess.add_argument(
        "--local", action="store_true", help="assess in this process, not through a service"
    )
    assess.set_defaults(handler=_assess)


def _assess(args: argparse.Namespace) -> int:
    code, language, _ = program(args)
    data = None if args.policy or args.local else _remote(args, code, language.name)
    if data is None:
        data = _here(args, code, language.name)
    if args.json:
        print(json.dumps(data, ensure_ascii=True))
    else:
        from hazmat.service.wire import assessment_from_wire

        _print_assessment(assessment_from_wire(data), data["decision"], data["trust"])
    return 126 if data["decision"] == "block" else 0


def _here(args: argparse.Namespace, code: str | bytes, language: str) -> dict[str, Any]:
    """The assessment and the decision, in this process (an assessor started for it)."""
    from hazmat.assess.assessor import Assessor
    from hazmat.assess.decision import decide
    from hazmat.policy import parse_trust

    chosen = policy(args)
    trust = parse_trust(args.trust or chosen.default_trust)
    settings = chosen.settings(trust)
    with Assessor() as assessor:
        assessment = assessor.assess(
            code, language, semgrep=args.semgrep, max_bytes=settings.limits.max_code_bytes
        )
    data = assessment.to_dict()
    data["decision"] = decide(assessment, settings.assess, None).value
    data["trust"] = trust.value
    return data


def _remote(args: argparse.Namespace, code: str | bytes, language: str) -> dict[str, Any] | None:
    """The same, from the service or the local server, whose assessor is warm (None: here)."""
    from hazmat.cli import local_server

    if isinstance(code, bytes):  # not UTF-8: the API takes text
        return None
    service = local_server.for_cli(local_server.say)
    if service is None:
        return None
    trust = args.trust or service.default_trust
    body = {"code": code, "language": language, "semgrep": args.semgrep}
    return service.post("/v1/assess", {**body, **({"trust": trust} if trust else {})})


def _print_assessment(assessment: Assessment, decision: str, trust: str) -> None:
    state = "complete" if assessment.complete else "INCOMPLETE"
    print(
        f"{assessment.level.value}  risk score {assessment.risk_score}, {state}, "
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
