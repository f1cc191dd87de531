"""Built images kept on disk by their recipe's digest, so that a new engine gets them back
without building them again, and a tag alone can never stand in for a recipe.

`docker save` of a freshly built image goes to `<dir>/<key>-<digest>.tar`, the key being the
image's name and Debian suite (one file per key: an older digest's file is removed). `load`
gives an engine the image for exactly that digest, and checks that what it loaded carries the
digest's label before it is used.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from hazmat._exceptions import ImageBuildError, InfraError
from hazmat.backends.container.engine import Engine, map_docker_errors

__all__ = ["DEFAULT_CACHE", "ImageCache"]

DEFAULT_CACHE = Path("/var/cache/hazmat/images")
_CHUNK = 1 << 20


class ImageCache:
    """Saved images in one folder, by key (name and suite) and recipe digest."""

    def __init__(self, folder: Path = DEFAULT_CACHE) -> None:
        self.folder = folder

    def path(self, key: str, digest: str) -> Path:
        return self.folder / f"{key}-{digest}.tar"

    def has(self, key: str, digest: str) -> bool:
        return self.path(key, digest).is_file()

    def save(self, engine: Engine, ref: str, key: str, digest: str) -> Path:
        """Write the image `ref` to the cache under `digest`; drop the key's older files."""
        self.folder.mkdir(parents=True, exist_ok=True)
        target = self.path(key, digest)
        partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
        try:
            with map_docker_errors(ref), partial.open("wb") as out:
                for chunk in engine.api.get_image(ref, chunk_size=_CHUNK):
                    out.write(chunk)
            partial.replace(target)
        finally:
            partial.unlink(missing_ok=True)
        for older in self.folder.glob(f"{key}-*.tar"):
            if older != target and older.name.removeprefix(f"{key}-")[:-4].isalnum():
                older.unlink(missing_ok=True)
        return target

    def load(self, engine: Engine, key: str, digest: str, digest_of: Callable[[], str]) -> bool:
        """Load the saved image for `digest` into `engine`; False when none is saved.

        `digest_of` reads the digest label of what the engine now has under the image's tag:
        a file whose image does not carry `digest` (edited, or saved by hand) is removed and
        refused, so the caller builds instead."""
        source = self.path(key, digest)
        if not source.is_file():
            return False
        try:
            with map_docker_errors(), source.open("rb") as data:
                engine.api.load_image(data, quiet=True)
        except InfraError as exc:
            source.unlink(missing_ok=True)
            raise ImageBuildError(f"loading {source} failed, so it was removed: {exc}") from exc
        if digest_of() != digest:
            source.unlink(missing_ok=True)
            raise ImageBuildError(f"{source} did not hold the image for recipe {digest}: removed")
        return True
