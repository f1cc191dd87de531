"""Images known by their recipe's digest, not their tag, and kept in a cache by that digest
(a real engine; a tiny image imported for the purpose, never one of hazmat's own)."""

from __future__ import annotations

import io
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from hazmat._exceptions import ImageBuildError
from hazmat.backends.container.engine import Engine
from hazmat.images.builder import DIGEST_LABEL, ImageBuilder, ImageRecipe, recipe_digest

pytestmark = pytest.mark.docker

TINY = ImageRecipe("hazmat-test-tiny", ("nothing",))
OTHER = ImageRecipe("hazmat-test-tiny", ("something-else",))
MADE_HERE = "org.hazmat.test.image-cache"


def _import(engine: Engine, recipe: ImageRecipe, digest: str) -> str:
    """An image of one file under the recipe's tag, labelled with `digest`."""
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w") as tar:
        info = tarfile.TarInfo("hello")
        info.size = 2
        tar.addfile(info, io.BytesIO(b"hi"))
    repository, tag = recipe.ref.split(":")
    changes = [f'LABEL {DIGEST_LABEL}="{digest}"', f"LABEL {MADE_HERE}=1"]
    engine.api.import_image_from_data(data.getvalue(), repository, tag, changes=changes)
    return str(engine.api.inspect_image(recipe.ref)["Id"])


@pytest.fixture
def builder(engine: Engine, tmp_path: Path) -> Iterator[ImageBuilder]:
    said: list[str] = []
    yield ImageBuilder(engine, image_cache=tmp_path / "cache", progress=said.append)
    for found in engine.api.images(all=True, filters={"label": MADE_HERE}):  # untagged too
        engine.api.remove_image(found["Id"], force=True)


def test_an_image_under_the_same_tag_from_another_recipe_is_stale(
    builder: ImageBuilder, engine: Engine
) -> None:
    assert not builder.status(TINY).present
    _import(engine, TINY, recipe_digest(OTHER))  # what an older hazmat left under the tag
    status = builder.status(TINY)
    assert status.present and not status.current
    _import(engine, TINY, recipe_digest(TINY))
    assert builder.status(TINY).current
    assert builder.ensure(TINY) == "present"  # nothing to do


def test_the_cache_gives_a_new_engine_the_image_for_the_same_digest(
    builder: ImageBuilder, engine: Engine
) -> None:
    assert builder.image_cache is not None
    cache, digest = builder.image_cache, recipe_digest(TINY)
    image_id = _import(engine, TINY, digest)
    saved = cache.save(engine, TINY.ref, "tiny", digest)
    assert saved.is_file() and cache.has("tiny", digest)
    engine.api.remove_image(image_id, force=True)
    assert not builder.status(TINY).present
    assert cache.load(engine, "tiny", digest, lambda: builder.status(TINY).digest)
    assert builder.status(TINY).current and builder.status(TINY).image_id == image_id[7:19]
    assert not cache.load(engine, "tiny", recipe_digest(OTHER), lambda: "")  # none saved


def test_a_cached_file_that_holds_another_recipes_image_is_refused_and_removed(
    builder: ImageBuilder, engine: Engine
) -> None:
    assert builder.image_cache is not None
    cache = builder.image_cache
    _import(engine, TINY, recipe_digest(OTHER))
    forged = cache.save(engine, TINY.ref, "tiny", recipe_digest(TINY))  # a file renamed by hand
    with pytest.raises(ImageBuildError, match="did not hold the image for recipe"):
        cache.load(engine, "tiny", recipe_digest(TINY), lambda: builder.status(TINY).digest)
    assert not forged.exists()


def test_saving_keeps_one_file_per_image_and_suite(builder: ImageBuilder, engine: Engine) -> None:
    assert builder.image_cache is not None
    cache = builder.image_cache
    _import(engine, TINY, "a" * 24)
    first = cache.save(engine, TINY.ref, "tiny-trixie", "a" * 24)
    kept = cache.save(engine, TINY.ref, "tiny-bookworm", "c" * 24)
    second = cache.save(engine, TINY.ref, "tiny-trixie", "b" * 24)
    assert not first.exists() and second.exists() and kept.exists()
