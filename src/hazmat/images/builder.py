"""Build hazmat's images from Debian packages, with no container registry involved.

Each image is `debootstrap --variant=minbase --include=<packages>` into a scratch folder, a
language-specific step (esbuild for TypeScript, a prebuilt standard library for Go), then
hardening (setuid/setgid bits stripped, docs and package caches removed) and `docker import`
with labels. Needs root and debootstrap; the node image also needs `npm` on the host.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import marshal
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hazmat._exceptions import ImageBuildError, InfraError
from hazmat.backends.container.engine import Engine, map_docker_errors
from hazmat.images.cache import DEFAULT_CACHE, ImageCache
from hazmat.images.chroot import Progress, run_tool
from hazmat.images.custom import MANIFEST
from hazmat.images.debian import debian_mirror, unmount_below
from hazmat.images.recipes import (
    RECIPES,
    SUITES,
    ImageRecipe,
    check_integrity,
    recipes_for,
)

__all__ = [
    "RECIPES",
    "ImageBuilder",
    "ImageRecipe",
    "ImageStatus",
    "check_integrity",
    "recipe_digest",
    "recipes_for",
]

LABEL_PREFIX = "org.hazmat.image"
DIGEST_LABEL = f"{LABEL_PREFIX}.recipe"
# Saving, loading and importing an image of several hundred MB is one API call each.
IMAGE_API_TIMEOUT_S = 900
_PHASES = {
    "Retrieving": "downloading packages",
    "Extracting": "extracting",
    "Installing": "installing the base system",
    "Unpacking": "unpacking",
    "Configuring": "configuring",
}
_STRIP = (
    "usr/share/doc",
    "usr/share/man",
    "usr/share/info",
    "usr/share/locale",
    "var/cache/apt",
    "var/lib/apt/lists",
    "var/log",
)


@dataclass(frozen=True)
class ImageStatus:
    recipe: ImageRecipe
    present: bool
    image_id: str = ""
    size_mb: float = 0.0
    built: str = ""
    version: str = ""
    base: str = ""  # an image of the user's: the hazmat image it was built from
    adds: str = ""  # ... and the packages it adds
    digest: str = ""  # the recipe digest it was built from (its label; "" before labels)

    @property
    def current(self) -> bool:
        """Present and built from the recipe as it is now (not only under the same tag)."""
        return self.present and self.digest == recipe_digest(self.recipe)

    @property
    def languages(self) -> tuple[str, ...]:
        return RECIPES[self.base].languages if self.base in RECIPES else self.recipe.languages


class ImageBuilder:
    """Builds and lists hazmat's images on one engine."""

    def __init__(
        self,
        engine: Engine | None = None,
        *,
        cache_dir: Path = Path("/var/cache/hazmat/debootstrap"),
        image_cache: Path | None = DEFAULT_CACHE,
        work_dir: Path = Path("/var/tmp"),
        progress: Progress = print,
    ) -> None:
        self.engine = engine or Engine(timeout=IMAGE_API_TIMEOUT_S)
        self.cache_dir = cache_dir
        self.image_cache = ImageCache(image_cache) if image_cache else None
        self.work_dir = work_dir
        self.progress = progress

    def status(self, recipe: ImageRecipe) -> ImageStatus:
        with map_docker_errors():
            found = self.engine.api.images(name=recipe.ref)
        if not found:
            return ImageStatus(recipe, present=False)
        labels: dict[str, str] = found[0].get("Labels") or {}
        return ImageStatus(
            recipe,
            present=True,
            image_id=str(found[0]["Id"]).removeprefix("sha256:")[:12],
            size_mb=found[0].get("Size", 0) / 1e6,
            built=labels.get(f"{LABEL_PREFIX}.built", ""),
            version=labels.get(f"{LABEL_PREFIX}.version", ""),
            digest=labels.get(DIGEST_LABEL, ""),
        )

    def ensure(self, recipe: ImageRecipe) -> str:
        """Make the engine hold the image of this recipe as it is now: keep it when current,
        else load it from the image cache, else build it. Returns what was done."""
        status = self.status(recipe)
        if status.current:
            self._say(recipe, f"{recipe.ref} is present and current; skipped")
            return "present"
        if status.present:
            self._say(recipe, f"{recipe.ref} was built from another recipe: replacing it")
        digest = recipe_digest(recipe)
        cache = self.image_cache
        if cache is not None and cache.has(_cache_key(recipe), digest):
            started = time.monotonic()
            try:
                key, label = _cache_key(recipe), lambda: self.status(recipe).digest
                cache.load(self.engine, key, digest, label)
            except ImageBuildError as exc:
                self._say(recipe, f"{exc}; building instead")
            else:
                took = time.monotonic() - started
                self._say(recipe, f"loaded {recipe.ref} from {cache.folder} in {took:.0f}s")
                self._drop_replaced(recipe, status.image_id, self.status(recipe).image_id)
                return "loaded"
        self.build(recipe)
        return "built"

    def custom(self) -> list[ImageStatus]:
        """The images of the user's (built with --name/--from) on this engine."""
        with map_docker_errors():
            found = self.engine.api.images(filters={"label": f"{LABEL_PREFIX}.from"})
        statuses = []
        for image in found:
            labels: dict[str, str] = image.get("Labels") or {}
            base = labels.get(f"{LABEL_PREFIX}.from", "")
            name = labels.get(f"{LABEL_PREFIX}.name", "")
            suite = labels.get(f"{LABEL_PREFIX}.suite", "")
            if base not in RECIPES or suite not in SUITES or not name:
                continue
            adds = "; ".join(
                f"{key} {labels[f'{LABEL_PREFIX}.{key}']}"
                for key in ("apt", "pip", "npm")
                if labels.get(f"{LABEL_PREFIX}.{key}")
            )
            statuses.append(
                ImageStatus(
                    replace(RECIPES[base].on(suite), name=name),
                    present=True,
                    image_id=str(image["Id"]).removeprefix("sha256:")[:12],
                    size_mb=image.get("Size", 0) / 1e6,
                    built=labels.get(f"{LABEL_PREFIX}.built", ""),
                    version=labels.get(f"{LABEL_PREFIX}.version", ""),
                    base=base,
                    adds=adds,
                )
            )
        return sorted(statuses, key=lambda s: s.recipe.ref)

    def build(self, recipe: ImageRecipe) -> str:
        """Build one image and return its id. Replaces an existing image with the same tag."""
        _require_tools(recipe)
        self.engine.info()  # fail early, before a minute of debootstrap, if the engine is down
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        scratch = Path(tempfile.mkdtemp(prefix=f"hazmat-{recipe.name}-", dir=self.work_dir))
        started = time.monotonic()
        try:
            rootfs = scratch / "rootfs"
            self._debootstrap(recipe, rootfs)
            if recipe.extra:
                recipe.extra(rootfs, scratch, self.progress)
            self._harden(recipe, rootfs)
            previous = self.status(recipe).image_id
            image_id = self._import(recipe, rootfs, scratch / "rootfs.tar")
            self._drop_replaced(recipe, previous, image_id)
        finally:
            unmount_below(scratch)
            shutil.rmtree(scratch, ignore_errors=True)
        self._say(
            recipe, f"built {recipe.ref} ({image_id[:19]}) in {time.monotonic() - started:.0f}s"
        )
        self._keep(recipe)
        return image_id

    def _keep(self, recipe: ImageRecipe) -> None:
        """Save a new image of one of hazmat's own recipes to the image cache."""
        if self.image_cache is None or recipe.name not in RECIPES:
            return
        try:
            path = self.image_cache.save(
                self.engine, recipe.ref, _cache_key(recipe), recipe_digest(recipe)
            )
        except (OSError, InfraError) as exc:  # the image is built; only the cache failed
            self._say(recipe, f"not cached: {exc}")
            return
        self._say(recipe, f"cached as {path} ({path.stat().st_size / 1e6:.0f} MB)")

    def _drop_replaced(self, recipe: ImageRecipe, previous: str, new_id: str) -> None:
        """Remove the image the new build replaced, unless a container still uses it."""
        if not previous or new_id.removeprefix("sha256:").startswith(previous):
            return
        try:
            with map_docker_errors():
                self.engine.api.remove_image(previous)
            self._say(recipe, f"removed the image it replaces ({previous})")
        except InfraError as exc:
            self._say(recipe, f"kept the image it replaces ({previous}): {exc}")

    def _say(self, recipe: ImageRecipe, text: str) -> None:
        self.progress(f"[{recipe.name}] {text}")

    def _debootstrap(self, recipe: ImageRecipe, rootfs: Path) -> None:
        mirror = debian_mirror()
        cmd = [
            "debootstrap",
            "--variant=minbase",
            f"--include={','.join(recipe.packages)}",
            f"--cache-dir={self.cache_dir}",
            recipe.suite,
            str(rootfs),
        ]
        if mirror:
            cmd.append(mirror)
        self._say(recipe, f"debootstrap {recipe.suite} with {', '.join(recipe.packages)}")
        self._run_logged(recipe, cmd)

    def _run_logged(self, recipe: ImageRecipe, cmd: list[str]) -> None:
        """Run debootstrap, reporting each of its main phases once, with timings."""
        tail: list[str] = []
        seen: set[str] = set()
        started = time.monotonic()
        with subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace"
        ) as proc:
            assert proc.stdout is not None
            for line in proc.stdout:
                tail = ([*tail, line.rstrip()])[-20:]
                words = line.split()
                phase = _PHASES.get(words[1]) if len(words) >= 2 and words[0] == "I:" else None
                if phase and phase not in seen:
                    seen.add(phase)
                    self._say(recipe, f"  {phase} ({time.monotonic() - started:.0f}s)")
        if proc.returncode != 0:
            raise ImageBuildError(
                f"{cmd[0]} failed with exit status {proc.returncode}:\n" + "\n".join(tail)
            )

    def _harden(self, recipe: ImageRecipe, rootfs: Path) -> None:
        stripped = 0
        for path in rootfs.rglob("*"):
            if path.is_file() and not path.is_symlink() and path.stat().st_mode & 0o6000:
                path.chmod(path.stat().st_mode & ~0o6000)
                stripped += 1
        for rel in _STRIP:
            target = rootfs / rel
            if target.is_dir():
                shutil.rmtree(target)
                target.mkdir()
        # the working directory's mount point: runc gives a tmpfs mounted over a folder that
        # folder's mode, so a bench's working directory (root's, backends/verify.py) is
        # writable only if this one is 1777; a run's is the program's whatever the mode
        (rootfs / "work").mkdir(exist_ok=True)
        (rootfs / "work").chmod(0o1777)
        resolv = rootfs / "etc/resolv.conf"  # debootstrap copies the host's; runs have no DNS
        resolv.unlink(missing_ok=True)
        resolv.write_text("")
        self._say(
            recipe,
            f"hardened: setuid/setgid bits removed from {stripped} files, docs and caches dropped",
        )

    def _import(self, recipe: ImageRecipe, rootfs: Path, tarball: Path) -> str:
        self._say(recipe, "packing and importing")
        run_tool(
            ["tar", "--numeric-owner", "--xattrs", "-C", str(rootfs), "-cf", str(tarball), "."]
        )
        changes = [
            f'LABEL {LABEL_PREFIX}.version="{recipe.ref.rpartition(":")[2]}"',
            f'LABEL {LABEL_PREFIX}.name="{recipe.name}"',
            f'LABEL {LABEL_PREFIX}.built="{datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")}"',
            f'LABEL {LABEL_PREFIX}.packages="{" ".join(recipe.packages)}"',
            f'LABEL {LABEL_PREFIX}.suite="{recipe.suite}"',
            f'LABEL {DIGEST_LABEL}="{recipe_digest(recipe)}"',
            "ENV PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8",
            "USER 65534:65534",
            "WORKDIR /work",
            'CMD ["/bin/sh"]',
            *(f"ENV {setting}" for setting in recipe.env),
            *_manifest_labels(rootfs),
        ]
        repository, tag = recipe.ref.split(":")
        with map_docker_errors():
            result: Any = self.engine.api.import_image_from_file(
                str(tarball), repository=repository, tag=tag, changes=changes
            )
            found = self.engine.api.images(name=recipe.ref)
        if not found:
            raise ImageBuildError(f"docker import did not produce {recipe.ref}: {result}")
        return str(found[0]["Id"])


def recipe_digest(recipe: ImageRecipe) -> str:
    """What an image is made of, as a hash: the recipe's fields, the code of its own build
    step and what that step reads, and the code of the steps every image goes through. An
    image labelled with another digest was built by another hazmat (an older recipe under the
    same tag) and must not stand in for this one. The steps' source counts with its comments:
    editing one rebuilds every machine's images (tests/backends/inside_digests.json pins the
    digests, so that it is never by accident)."""
    shared = (ImageBuilder._debootstrap, ImageBuilder._harden, ImageBuilder._import)
    parts = {
        "name": recipe.name,
        "packages": recipe.packages,
        "suite": recipe.suite,
        "env": recipe.env,
        "variant_of": recipe.variant_of,
        "summary": recipe.summary,
        "inputs": recipe.inputs,
        "extra": _code(recipe.extra) if recipe.extra else "",
        "shared": [_code(step) for step in (*shared, _manifest_labels)],
        "strip": _STRIP,
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:24]


def _code(function: Any) -> str:
    """A step's source; its compiled code where the source is not installed (a digest that
    then changes with the Python version, which only rebuilds)."""
    try:
        return inspect.getsource(function)
    except (OSError, TypeError):
        return marshal.dumps(function.__code__).hex()


def _cache_key(recipe: ImageRecipe) -> str:
    return f"{recipe.name}-{recipe.suite}"


def _manifest_labels(rootfs: Path) -> list[str]:
    """A custom image's base and pinned packages, as labels (see custom_images.py)."""
    path = rootfs / MANIFEST.lstrip("/")
    if not path.exists():
        return []
    manifest = json.loads(path.read_text())
    labels = [f'LABEL {LABEL_PREFIX}.from="{manifest["from"]}"']
    for key in ("apt", "pip", "npm"):
        if manifest.get(key):
            labels.append(f'LABEL {LABEL_PREFIX}.{key}="{" ".join(manifest[key])}"')
    return labels


def _require_tools(recipe: ImageRecipe) -> None:
    if os.geteuid() != 0:
        raise ImageBuildError("building images needs root (debootstrap and chroot)")
    needed = ["debootstrap", "tar", "chroot", *recipe.host_tools]
    missing = [tool for tool in needed if shutil.which(tool) is None]
    if missing:
        raise ImageBuildError(
            f"building {recipe.ref} needs {', '.join(missing)}: apt-get install {' '.join(missing)}"
        )
