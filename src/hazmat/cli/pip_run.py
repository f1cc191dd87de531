"""`hazmat run --pip NAME`: the program runs in a session that first installs NAME from the
policy's package index (hazmat/packages/), here or through the service, and ends after it. An
install the policy does not allow is refused before the program runs, saying why."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from hazmat._exceptions import InputError
from hazmat.cli.remote import Live, Service
from hazmat.models import ExecutionResult
from hazmat.options import CALL_OPTIONS
from hazmat.service.wire import options_to_wire, result_from_wire

__all__ = ["run_with_packages"]

FIXED = ("trust", "runtime", "image")  # what the session is opened with
# what a one-off run takes and a session's call does not (the CLI's `session` is a name for
# the audit log's diffs, not a session to run in: left out)
NOT_IN_A_SESSION = {"memory_mb": "--memory", "network": "--allow-host"}


def run_with_packages(
    args: argparse.Namespace,
    code: str | bytes,
    language: str,
    options: dict[str, Any],
    live: Live | None,
    service: Service | None,
) -> ExecutionResult:
    given = [flag for name, flag in NOT_IN_A_SESSION.items() if options.get(name)]
    if given:
        raise InputError(
            f"--pip runs the program in a session, which does not take {', '.join(given)}"
        )
    call = {k: v for k, v in options.items() if k in CALL_OPTIONS}
    fixed = {k: options[k] for k in FIXED if options.get(k) is not None}
    if service is not None:
        body = options_to_wire(code, language, call)
        del body["language"]  # the session's
        return _remote(service, args.pip, language, body, fixed, live)
    from hazmat.cli.common import policy
    from hazmat.packages.requirements import check_requirements
    from hazmat.policy import parse_trust
    from hazmat.sandbox import Sandbox

    with Sandbox(policy(args), pool=False) as sandbox:
        level = parse_trust(fixed.get("trust") or sandbox.policy.default_trust)
        # refused before a container starts for it
        check_requirements(args.pip, sandbox.policy.packages, level.value, language)
        with sandbox.session(language, caller=args.caller, **fixed) as session:
            _say(session.install(args.pip).note)
            return session.run(code, on_output=live, **call)


def _remote(
    service: Service,
    packages: list[str],
    language: str,
    body: dict[str, Any],
    fixed: dict[str, Any],
    live: Live | None,
) -> ExecutionResult:
    if "trust" not in fixed and service.default_trust is not None:
        fixed = {**fixed, "trust": service.default_trust}
    sid = service.post("/v1/sessions", {"language": language, **fixed})["id"]
    try:
        _say(service.post(f"/v1/sessions/{sid}/packages", {"packages": packages})["note"])
        return result_from_wire(service.post(f"/v1/sessions/{sid}/runs?output=base64", body, live))
    finally:
        service.delete(f"/v1/sessions/{sid}")


def _say(note: str) -> None:
    print(f"hazmat: {note}", file=sys.stderr, flush=True)
