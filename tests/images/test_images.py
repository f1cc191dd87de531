"""Image building's own checks (no engine): what is fetched from a registry is pinned."""

from __future__ import annotations

import base64
import hashlib
import re
from pathlib import Path

import pytest

from hazmat._exceptions import ImageBuildError
from hazmat.images.custom import CustomImage, host_pip_index, rebuild_command
from hazmat.images.recipes import (
    DEFAULT_SUITE,
    ESBUILD_INTEGRITY,
    RECIPES,
    SUITES,
    check_integrity,
)


def _integrity(data: bytes) -> str:
    return "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()


def test_a_fetched_tarball_must_match_its_pinned_hash(tmp_path: Path) -> None:
    tarball = tmp_path / "esbuild.tgz"
    tarball.write_bytes(b"the real package")
    pinned = _integrity(b"the real package")
    check_integrity(tarball, pinned, "esbuild")  # accepted
    tarball.write_bytes(b"the real packagf")  # one byte changed on the way
    with pytest.raises(ImageBuildError, match="esbuild: integrity check failed"):
        check_integrity(tarball, pinned, "esbuild")
    with pytest.raises(ImageBuildError, match="integrity check failed"):
        check_integrity(tarball, "sha512-", "esbuild")


def test_every_pinned_esbuild_is_a_sha512_integrity() -> None:
    assert set(ESBUILD_INTEGRITY) == {"x64", "arm64"}
    for value in ESBUILD_INTEGRITY.values():
        algorithm, _, digest = value.partition("-")
        assert algorithm == "sha512" and len(base64.b64decode(digest)) == 64


# Images of the user's own (custom_images.py): what is refused before anything is fetched.


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("Bad Name", "python", (), ("six",)), "lower-case letters"),
        (("python-data", "python", (), ("six",)), "one of hazmat's own images"),
        (("mine", "perl", (), ("six",)), "unknown base image 'perl'"),
        (("mine", "python", (), ()), "name at least one package"),
        (("mine", "python", (), ("--index-url=http://x.invalid/",)), "not a Python package"),
        (("mine", "python", (), ("six; rm -rf /",)), "not a Python package"),
        (("mine", "python", ("-oDpkg::Pre-Invoke=x",), ()), "not a Debian package"),
        (("mine", "node", (), ("six",)), "--pip needs a Python base image"),
        (("mine", "python", (), (), ("lodash",)), "--npm needs the node base image"),
        (("mine", "node", (), (), ("--registry=http://x.invalid/",)), "not a npm package"),
    ],
)
def test_a_custom_image_spec_is_checked_before_anything_is_fetched(
    args: tuple, message: str
) -> None:
    name, base, apt, pip, *npm = args
    with pytest.raises(ImageBuildError, match=re.escape(message)):
        CustomImage.of(name, base, apt, pip, npm[0] if npm else ())


def test_a_custom_image_adds_to_its_base_recipe() -> None:
    image = CustomImage.of("stats", "python-data", ["python3-yaml"], ["six>=1.16,<2"])
    recipe = image.recipe()
    assert recipe.ref == f"hazmat/stats:{SUITES[DEFAULT_SUITE]}"
    assert (
        recipe.packages[: len(RECIPES["python-data"].packages)] == RECIPES["python-data"].packages
    )
    assert recipe.packages[-1] == "python3-yaml" and recipe.packages.count("python3-pip") == 1
    assert recipe.env == RECIPES["python-data"].env  # the Agg backend carries over
    assert recipe.languages == ("python",)
    assert image.recipe("bookworm").ref == f"hazmat/stats:{SUITES['bookworm']}"


def test_the_rebuild_command_pins_what_was_installed() -> None:
    manifest = {
        "name": "stats",
        "from": "python",
        "apt": ["python3-yaml=6.0.2-1+b2"],
        "pip": ["six==1.17.0"],
    }
    assert rebuild_command(manifest) == (
        "hazmat images build --name stats --from python --apt python3-yaml --pip six==1.17.0"
    )


def test_the_build_uses_the_hosts_network_indexes_but_not_its_local_ones(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PIP_INDEX_URL", "https://index.invalid/simple")
    monkeypatch.setenv("PIP_EXTRA_INDEX_URL", "file:///opt/wheels https://extra.invalid/simple")
    settings = host_pip_index()
    assert settings["PIP_INDEX_URL"] == "https://index.invalid/simple"
    assert settings["PIP_EXTRA_INDEX_URL"] == "https://extra.invalid/simple"
    monkeypatch.setenv("PIP_EXTRA_INDEX_URL", "file:///opt/wheels")
    assert "PIP_EXTRA_INDEX_URL" not in host_pip_index()


def _other_step(rootfs: Path, scratch: Path, progress: object) -> None:
    """A build step that differs from every recipe's own."""


def test_the_recipe_digest_changes_with_anything_that_changes_the_image() -> None:
    from dataclasses import replace

    from hazmat.images.builder import recipe_digest

    node = RECIPES["node"]
    digest = recipe_digest(node)
    assert len(digest) == 24 and digest == recipe_digest(replace(node))  # stable
    changed = {
        "packages": replace(node, packages=(*node.packages, "jq")),
        "suite": node.on("bookworm"),
        "step": replace(node, extra=_other_step),
        "inputs": replace(node, inputs=("esbuild 0.0.1",)),
        "env": replace(node, env=("A=1",)),
    }
    digests = {what: recipe_digest(recipe) for what, recipe in changed.items()}
    assert digest not in digests.values()
    assert len(set(digests.values())) == len(digests)
    # the host tools only build it: the image is the same
    assert recipe_digest(replace(node, host_tools=("npm", "tar"))) == digest


def test_every_language_runs_in_an_image_that_images_build_makes() -> None:
    """The language table names its images itself (languages.IMAGE_VERSION); the recipes make
    them (languages.SUITES). The two must agree, or runs ask for a tag nothing builds; and the
    run path's missing-image message (which never imports the recipes) names what they make."""
    from hazmat.languages import LANGUAGES, standard_images

    built = {recipe.ref for recipe in RECIPES.values()}
    assert {language.image for language in LANGUAGES.values()} <= built
    assert {name for recipe in RECIPES.values() for name in recipe.languages} == set(LANGUAGES)
    assert set(RECIPES) == standard_images()
