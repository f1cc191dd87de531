"""Notes for programs that import a package their image does not have (stderr as seen)."""

from __future__ import annotations

import pytest

from hazmat.images.recipes import RECIPES
from hazmat.run.missing_package import missing_package_note
from hazmat.run.offline import offline_note

PYTHON, DATA = RECIPES["python"].ref, RECIPES["python-data"].ref
NODE, GO_IMAGE = RECIPES["node"].ref, RECIPES["go"].ref

PY_TRACE = (
    'Traceback (most recent call last):\n  File "/work/main.py", line 1, in <module>\n'
    "    from {mod}.x import y\nModuleNotFoundError: No module named '{mod}'\n"
)
NODE_CJS = "Error: Cannot find module 'lodash/fp'\nRequire stack:\n- /work/main.js\n"
NODE_ESM = (
    "Error [ERR_MODULE_NOT_FOUND]: Cannot find package '@scope/pkg' imported from /work/main.mjs\n"
)
GO = 'main.go:2:8: cannot find package "github.com/google/uuid" in any of:\n\t/usr/lib/go\n'


def test_a_data_library_on_the_plain_image_points_at_python_data() -> None:
    note = missing_package_note("python", PYTHON, PY_TRACE.format(mod="pandas"))
    assert note == (
        f"'pandas' is not in {PYTHON} (Python's standard library only); the python-data "
        "image has it: run the code again with image='python-data' (or --image python-data)."
    )


@pytest.mark.parametrize(
    ("language", "image", "stderr", "start", "build"),
    [
        (
            "python",
            PYTHON,
            PY_TRACE.format(mod="requests"),
            "'requests'",
            "--from python --pip requests",
        ),
        (
            "python",
            DATA,
            PY_TRACE.format(mod="torch"),
            f"'torch' is not in {DATA} (numpy",
            "--from python-data --pip torch",
        ),
        (
            "javascript",
            NODE,
            NODE_CJS,
            f"'lodash' is not in {NODE}",
            "--from node --npm lodash",
        ),
        ("typescript", NODE, NODE_ESM, "'@scope/pkg'", "--from node --npm @scope/pkg"),
    ],
)
def test_other_packages_get_the_command_that_builds_an_image_with_them(
    language: str, image: str, stderr: str, start: str, build: str
) -> None:
    note = missing_package_note(language, image, stderr)
    assert note is not None and note.startswith(start)
    assert "the sandbox has no network, so it cannot be installed from the program" in note
    assert f"`hazmat images build --name NAME {build}`" in note
    assert "trust.<level>.allow_images" in note


def test_go_and_unrelated_failures() -> None:
    note = missing_package_note("go", GO_IMAGE, GO)
    assert note == (
        f"package github.com/google/uuid is not in {GO_IMAGE} (Go's standard library only "
        "(modules are not fetched)); the sandbox has no network, so it cannot be installed "
        "from the program: write the code without it."
    )
    assert missing_package_note("javascript", NODE, "Cannot find module './lib'") is None
    assert missing_package_note("python", PYTHON, "ValueError: no module") is None
    assert missing_package_note("python", "own/image:1", PY_TRACE.format(mod="x")) == (
        "'x' is not in own/image:1; the sandbox has no network, so it cannot be installed from "
        "the program: write the code without it. For the operator: build an image with it "
        "once, `hazmat images build --name NAME --from python --pip x`, and allow NAME in the "
        "policy (trust.<level>.allow_images; docs/images.md)."
    )


@pytest.mark.parametrize(
    "stderr",
    [
        "urllib.error.URLError: <urlopen error [Errno -3] Temporary failure in name resolution>",
        "[cause]: Error: getaddrinfo ENOTFOUND data.example.invalid",
        "error: externally-managed-environment\n\n× This environment is externally managed",
        "curl: (6) Could not resolve host: data.example.invalid",
    ],
)
def test_a_program_that_reached_for_the_network_is_told_there_is_none(stderr: str) -> None:
    note = offline_note(stderr, ())
    assert note is not None and note.startswith("The sandbox has no network")
    allowed = offline_note(stderr, ("pypi.internal", "*.corp.internal"))
    assert allowed is not None and "only these hosts" in allowed
    assert "pypi.internal, *.corp.internal" in allowed


def test_other_failures_get_no_network_note() -> None:
    assert offline_note("ConnectionRefusedError: [Errno 111] Connection refused", ()) is None
    assert offline_note("ZeroDivisionError: division by zero", ()) is None
