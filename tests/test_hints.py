"""Notes for programs that import a package their image does not have (stderr as seen)."""

from __future__ import annotations

import pytest

from hazmat.images.recipes import RECIPES
from hazmat.run.missing_package import missing_package_note

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
        "image has it (image='python-data', or --image python-data)"
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
    assert f"`hazmat images build --name NAME {build}`" in note
    assert "trust.<level>.allow_images" in note


def test_go_and_unrelated_failures() -> None:
    note = missing_package_note("go", GO_IMAGE, GO)
    assert note == (
        f"package github.com/google/uuid is not in {GO_IMAGE} (Go's standard library only "
        "(modules are not fetched))"
    )
    assert missing_package_note("javascript", NODE, "Cannot find module './lib'") is None
    assert missing_package_note("python", PYTHON, "ValueError: no module") is None
    assert missing_package_note("python", "own/image:1", PY_TRACE.format(mod="x")) == (
        "'x' is not in own/image:1; build an image with it once: `hazmat images build --name "
        "NAME --from python --pip x`, and allow NAME in the policy "
        "(trust.<level>.allow_images; docs/images.md)"
    )
