"""Running a hostile probe on the real engine and reading what it printed (test_abuse.py,
test_identity.py). Most probes are rated BLOCKED by the static assessment; they run on a
written override, because what is tested is the container, whatever the assessment misses."""

from __future__ import annotations

import textwrap

from hazmat import ExecutionResult, Sandbox

OVERRIDE = "abuse test: the container must contain this whatever the assessment says"


def run(sandbox: Sandbox, runtime: str, code: str, **kwargs: object) -> ExecutionResult:
    kwargs.setdefault("override_reason", OVERRIDE)
    return sandbox.run(textwrap.dedent(code), runtime=runtime, **kwargs)  # type: ignore[arg-type]


def lines(result: ExecutionResult) -> dict[str, str]:
    """`KEY value` lines printed by a probe, as a dict."""
    pairs = (line.split(" ", 1) for line in result.stdout.splitlines() if " " in line)
    return {key: value for key, value in pairs}
