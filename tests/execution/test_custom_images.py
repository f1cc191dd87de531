"""Images of the user's own, built for real: Debian, Python and npm packages added to one of
hazmat's images at build time (from the registries the host's pip and npm use), then chosen
per run where the policy allows them. Each build takes about half a minute."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from hazmat import Outcome, Sandbox
from hazmat._exceptions import InputError
from hazmat.backends.container.engine import Engine
from hazmat.backends.docker.driver import DockerBackend
from hazmat.images.builder import ImageBuilder
from hazmat.images.custom import CustomImage
from hazmat.policy.file import parse_policy
from hazmat.testing import as_asked

pytestmark = [pytest.mark.docker, pytest.mark.slow]

PY, JS = "hazmat-test-py", "hazmat-test-js"


@pytest.fixture(scope="module")
def built(engine: Engine) -> Iterator[ImageBuilder]:
    lines: list[str] = []
    builder = ImageBuilder(engine, progress=lines.append)
    images = [
        CustomImage.of(PY, "python", apt=["python3-yaml"], pip=["six"]),
        CustomImage.of(JS, "node", npm=["is-number@7"]),
    ]
    try:
        for image in images:
            builder.build(image.recipe())
        assert any(f"[{PY}] pip installed six==" in line for line in lines), lines
        assert any(f"[{JS}] npm installed is-number@7." in line for line in lines), lines
        yield builder
    finally:
        for image in images:
            for found in engine.api.images(name=image.recipe().ref):
                engine.api.remove_image(found["Id"], force=True)


def _sandbox(engine: Engine) -> Sandbox:
    policy = parse_policy({"trust": {"untrusted": {"allow_images": [PY, JS]}}})
    return Sandbox(as_asked(policy), backend=DockerBackend(engine))


def test_python_and_debian_packages_are_in_the_image(built: ImageBuilder, engine: Engine) -> None:
    with _sandbox(engine) as sandbox:
        result = sandbox.run(
            "import json, six, yaml\n"
            "print(yaml.safe_dump({'six': six.__version__ > '1'}).strip())\n"
            "print(json.load(open('/usr/share/hazmat/manifest.json'))['from'])\n",
            "python",
            image=PY,
        )
    assert (result.outcome, result.stdout) == (Outcome.OK, "six: true\npython\n"), result.stderr


@pytest.mark.parametrize(
    ("language", "code"),
    [
        ("javascript", "const n = require('is-number');\nconsole.log(n(5), n('x'))\n"),
        ("javascript", "import n from 'is-number';\nconsole.log(n(5), n('x'))\n"),
        (
            "typescript",
            "import n from 'is-number';\nconst x: string = 'x';\nconsole.log(n(5), n(x))\n",
        ),
    ],
)
def test_npm_packages_load_from_commonjs_esm_and_typescript(
    built: ImageBuilder, engine: Engine, language: str, code: str
) -> None:
    with _sandbox(engine) as sandbox:
        result = sandbox.run(code, language, image=JS)
    assert (result.outcome, result.stdout) == (Outcome.OK, "true false\n"), result.stderr


def test_the_image_is_listed_with_its_pinned_packages(built: ImageBuilder) -> None:
    own = {s.recipe.name: s for s in built.custom()}
    assert own[PY].base == "python" and own[PY].languages == ("python",)
    assert "pip six==" in own[PY].adds and "apt python3-yaml=" in own[PY].adds
    assert own[JS].languages == ("javascript", "typescript")
    assert "npm is-number@7." in own[JS].adds


def test_an_image_the_policy_does_not_allow_is_refused(built: ImageBuilder, engine: Engine) -> None:
    with Sandbox(parse_policy({}), backend=DockerBackend(engine)) as sandbox:
        with pytest.raises(InputError, match=f"image '{PY}' is not allowed"):
            sandbox.run("print(1)", "python", image=PY)
        result = sandbox.run("import six\n", "python")
    assert result.outcome is Outcome.ERROR
    assert "build an image with it once" in json.dumps(result.to_dict())
