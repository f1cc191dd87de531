"""The build step's own budget (Go, TypeScript), on the real engine under runc and runsc."""

from __future__ import annotations

import pytest

from hazmat import Outcome, Sandbox
from hazmat.backends.docker import DockerBackend
from hazmat.backends.engine import Engine
from hazmat.policy_file import parse_policy

pytestmark = pytest.mark.docker

# net/http links a large binary: its build takes far longer than a tenth of a second
HEAVY_GO = (
    'package main\n\nimport (\n\t"fmt"\n\t"net/http"\n)\n\n'
    "func main() {\n\tfmt.Println(http.StatusTeapot)\n}\n"
)


def test_the_programs_time_limit_starts_after_its_build(sandbox: Sandbox, runtime: str) -> None:
    # half a second for the program; its build (seconds under runsc) does not count
    result = sandbox.run(HEAVY_GO, "go", runtime=runtime, timeout=0.5)
    assert result.outcome is Outcome.OK, result.error
    assert result.stdout == "418\n"
    assert result.compile_ms is not None and result.compile_ms > 0


def test_a_build_past_its_budget_is_a_compile_timeout(engine: Engine, runtime: str) -> None:
    policy = parse_policy({"trust": {"untrusted": {"compile_timeout_s": 0.1}}})
    with Sandbox(policy, backend=DockerBackend(engine)) as sandbox:
        result = sandbox.run(HEAVY_GO, "go", runtime=runtime)
    assert result.outcome is Outcome.COMPILE_TIMEOUT
    assert result.exit_code == 124 and result.stdout == ""
    assert result.error == (
        "compilation was stopped at its time limit of 0.1 s (compile_timeout_s); "
        "the program did not run"
    )


def test_a_go_run_links_its_build_cache_to_the_images_compiled_std(sandbox: Sandbox) -> None:
    # without the image's compiled standard library, building fmt alone takes seconds
    probe = (
        'package main\n\nimport (\n\t"fmt"\n\t"os"\n\t"path/filepath"\n)\n\n'
        "func main() {\n"
        '\tlinks, _ := filepath.Glob("/tmp/.gocache/*/*")\n'
        "\tn := 0\n"
        "\tfor _, l := range links {\n"
        "\t\tif fi, err := os.Lstat(l); err == nil && fi.Mode()&os.ModeSymlink != 0 {\n"
        "\t\t\tn++\n\t\t}\n\t}\n"
        "\tfmt.Println(n > 1000)\n}\n"
    )
    result = sandbox.run(probe, "go", runtime="runc")
    assert (result.outcome, result.stdout) == (Outcome.OK, "true\n"), result.stderr
