"""Which image a run gets, and which a caller may choose (no engine)."""

from __future__ import annotations

import pytest

from hazmat import InputError, Policy, Sandbox
from hazmat.images.recipes import RECIPES
from hazmat.languages import get_language
from hazmat.policy import TrustLevel
from hazmat.policy.file import parse_policy
from hazmat.run.image_choice import allowed_images, resolve_image
from hazmat.testing import RecordingBackend

PY = get_language("python")
PYTHON, DATA = RECIPES["python"].ref, RECIPES["python-data"].ref
TEAM_ML = PYTHON.replace("/python:", "/team-ml:")  # an image of one's own: the same tag
POLICY = parse_policy(
    {
        "images": {"go": "registry.invalid/go:own"},
        "trust": {
            "trusted": {"images": {"python": "python-data"}, "allow_images": ["team-ml"]},
        },
    }
)


def test_the_default_image_comes_from_the_level_then_the_policy_then_the_language() -> None:
    go = get_language("go")
    assert resolve_image(POLICY, TrustLevel.TRUSTED, PY, None) == DATA
    assert resolve_image(POLICY, TrustLevel.UNTRUSTED, PY, None) == PYTHON
    assert resolve_image(POLICY, TrustLevel.UNTRUSTED, go, None) == "registry.invalid/go:own"


def test_a_caller_chooses_only_among_the_images_the_level_allows() -> None:
    assert resolve_image(POLICY, TrustLevel.UNTRUSTED, PY, "python-data") == (DATA)
    assert resolve_image(POLICY, TrustLevel.TRUSTED, PY, "team-ml") == TEAM_ML
    with pytest.raises(InputError, match="'team-ml' is not allowed for python at trust level"):
        resolve_image(POLICY, TrustLevel.UNTRUSTED, PY, "team-ml")
    with pytest.raises(InputError, match="not allowed"):
        resolve_image(POLICY, TrustLevel.UNTRUSTED, get_language("go"), "python-data")
    with pytest.raises(InputError, match="not allowed"):
        resolve_image(POLICY, TrustLevel.TRUSTED, PY, "alpine:latest")
    with pytest.raises(InputError, match="control characters"):
        resolve_image(POLICY, TrustLevel.TRUSTED, PY, "python-data\n")
    assert allowed_images(POLICY, TrustLevel.TRUSTED, PY)[0] == DATA


def test_the_run_gets_the_image_it_chose_and_refuses_one_it_may_not() -> None:
    backend = RecordingBackend()
    with Sandbox(Policy(), backend=backend) as sandbox:
        result = sandbox.run("print(1)", image="python-data")
        assert result.image == DATA
        assert backend.jobs[-1].image == DATA
        with pytest.raises(InputError, match="image 'ubuntu' is not allowed"):
            sandbox.run("print(1)", image="ubuntu")
