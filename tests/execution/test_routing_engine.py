"""The risk picks the runtime, on the real engine: code assessed HIGH at a runc level really runs
under gVisor, LOW code under runc (the pipeline's logic: tests/run/test_routing.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hazmat import Outcome, Policy, Runtime, Sandbox
from hazmat.backends.container.engine import Engine
from hazmat.backends.docker.driver import DockerBackend

pytestmark = [pytest.mark.docker, pytest.mark.runsc]

KERNEL = "print(open('/proc/version').read().strip())"  # the kernel the program talks to


def test_high_code_at_a_runc_level_really_runs_under_gvisor(engine: Engine) -> None:
    host = Path("/proc/version").read_text().strip()
    with Sandbox(Policy(), backend=DockerBackend(engine)) as sandbox:
        low = sandbox.run(KERNEL, trust="trusted")
        high = sandbox.run(f"import subprocess\n{KERNEL}", trust="trusted")
    assert low.outcome is Outcome.OK and high.outcome is Outcome.OK, (low.error, high.error)
    assert low.runtime is Runtime.RUNC and low.runtime_reason is None
    assert low.stdout.strip() == host  # runc: the host's own kernel
    assert high.assessment is not None and high.assessment.level.value == "HIGH"
    assert high.runtime is Runtime.RUNSC and high.runtime_reason is not None
    assert high.stdout.strip() != host  # gVisor's Sentry answers, not the host's kernel
