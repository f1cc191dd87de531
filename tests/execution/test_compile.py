"""The build step's own budget (time and memory), on the real engine under runc and runsc."""

from __future__ import annotations

import pytest

from hazmat import PRESETS, Outcome, Sandbox
from hazmat.backends.base import RUNSC_MEMORY_MB
from hazmat.backends.container.engine import Engine
from hazmat.backends.docker.driver import DockerBackend
from hazmat.policy.file import parse_policy
from hazmat.testing import as_asked

pytestmark = [pytest.mark.docker, pytest.mark.oci, pytest.mark.matrix]

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
    with Sandbox(as_asked(policy), backend=DockerBackend(engine)) as sandbox:
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


def macro_bomb(levels: int, literal: str) -> str:
    """A C program whose preprocessing expands one string literal 10**levels times: the
    compiler's memory grows with the tokens, the binary with the literal's bytes."""
    lines = [f'#define A0 "{literal}"']
    lines += [f"#define A{i} " + " ".join([f"A{i - 1}"] * 10) for i in range(1, levels + 1)]
    lines += [f"const char *s = A{levels};", "int main(void) { return s[0] != 'x'; }"]
    return "\n".join(lines) + "\n"


def with_limits(engine: Engine, runtime: str, code: str, **limits: object) -> object:
    policy = parse_policy({"trust": {"untrusted": limits}})
    with Sandbox(as_asked(policy), backend=DockerBackend(engine)) as sandbox:
        return sandbox.run(
            code, "c", runtime=runtime, override_reason="a compiler bomb, on purpose, in a test"
        )


# a million tokens: gcc 14 peaks at about 270 MB (measured: 270 under runc, 288 under runsc)
MILLION_TOKENS = macro_bomb(6, "x")


def test_a_build_has_a_memory_budget_of_its_own(engine: Engine, runtime: str) -> None:
    # the same build: past a 128 MB budget, within 512 MB
    shared = with_limits(engine, runtime, MILLION_TOKENS, memory_mb=128, compile_memory_mb=0)
    assert shared.outcome is Outcome.MEMORY_LIMIT, shared
    assert shared.error == (
        "the build step was killed at its memory limit of 128 MB (compile_memory_mb); the "
        "program did not run"
    )
    own = with_limits(engine, runtime, MILLION_TOKENS, memory_mb=128, compile_memory_mb=512)
    assert (own.outcome, own.exit_code) == (Outcome.OK, 0), own
    # the result's peak is its program's, from its go: the compiler's (over 128 MB) is not in it
    assert own.peak_memory_bytes is not None and own.peak_memory_bytes < 128 * 1024 * 1024


C_HOG = """#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(void) {
    for (int mb = 16;; mb += 16) {
        char *p = malloc(16 << 20);
        if (!p) return 3;
        memset(p, 1, 16 << 20);
        printf("%d\\n", mb);
        fflush(stdout);
    }
}
"""


def test_the_program_gets_its_own_memory_limit_after_the_build(
    sandbox: Sandbox, runtime: str
) -> None:
    strict = PRESETS["strict"]
    assert strict.build_memory_mb > strict.memory_mb  # the container starts with the larger
    result = sandbox.run(C_HOG, "c", runtime=runtime, override_reason="a memory hog, in a test")
    assert (result.outcome, result.exit_code) == (Outcome.MEMORY_LIMIT, 137), result
    assert result.error == f"the program was killed at its memory limit of {strict.memory_mb} MB"
    # the program's limit, not the build's: the watermark may pass it by a few pages, as the
    # kernel forces the charges of a task it is already killing (mm/memcontrol.c, try_charge);
    # under gVisor the cgroup's limit is a backstop RUNSC_MEMORY_MB above the program's
    most = strict.memory_mb + (RUNSC_MEMORY_MB if runtime == "runsc" else 0)
    assert int(result.stdout.split()[-1]) < most
    assert result.peak_memory_bytes is not None
    assert result.peak_memory_bytes <= (most + 1) * 1024 * 1024


def test_what_the_build_leaves_must_fit_the_programs_limit(engine: Engine, runtime: str) -> None:
    # a 64 MB binary in the tmpfs, which no reclaim can free, and a 48 MB program budget
    code = macro_bomb(6, "x" * 64)
    result = with_limits(engine, runtime, code, memory_mb=48, compile_memory_mb=1024, tmpfs_mb=128)
    assert result.outcome is Outcome.MEMORY_LIMIT, result
    assert result.error is not None
    assert result.error.startswith("what the build left (")
    assert result.error.endswith(
        "did not fit in the program's memory limit of 48 MB; the program did not run"
    )
