"""Build hazmat's images from Debian packages, with no container registry involved.

Each image is `debootstrap --variant=minbase --include=<packages>` into a scratch folder, a
language-specific step (esbuild for TypeScript, a prebuilt standard library for Go), then
hardening (setuid/setgid bits stripped, docs and package caches removed) and `docker import`
with labels. Needs root and debootstrap; the node image also needs `npm` on the host.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import platform
import shutil
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import MappingProxyType
from typing import Any

from hazmat._exceptions import ImageBuildError, InfraError
from hazmat.backends.debian import debian_mirror, unmount_below
from hazmat.backends.engine import Engine, map_docker_errors
from hazmat.languages import IMAGE_VERSION, LANGUAGES

__all__ = ["RECIPES", "ImageBuilder", "ImageRecipe", "ImageStatus", "recipes_for"]

Progress = Callable[[str], None]

SUITE = "bookworm"
ESBUILD_VERSION = "0.28.2"
# npm's own integrity field (sha512 of the package tarball) for each platform package, pinned
# here: the tarball is checked before anything in it is written to the image or run.
ESBUILD_INTEGRITY = {
    "x64": "sha512-4xTZr1FUmSoQW4XIWmit3tzQrUTZM+N3P0XV8xROKYF50XfI7xeO90+1bZvNwxIufQ9hDQVRJH5Y"
    "hgPVF8A/HQ==",
    "arm64": "sha512-pW4AC0P3it8c7do9MVM4p51FzHzdM/TZrerurgRcHJ2WTa1VQ1CIq18xncfpBJw4ojkiZZrKW2y"
    "IBWBP92j6Ug==",
}
LABEL_PREFIX = "org.hazmat.image"
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
class ImageRecipe:
    """What goes into one image, and which languages use it."""

    name: str
    packages: tuple[str, ...]
    # A step after debootstrap: (rootfs, scratch folder, progress) -> None.
    extra: Callable[[Path, Path, Progress], None] | None = None
    host_tools: tuple[str, ...] = ()  # what `extra` needs on the building host

    @property
    def ref(self) -> str:
        return f"hazmat/{self.name}:{IMAGE_VERSION}"

    @property
    def languages(self) -> tuple[str, ...]:
        return tuple(n for n, lang in LANGUAGES.items() if lang.image == self.ref)


def recipes_for(names: Iterable[str]) -> list[ImageRecipe]:
    """Recipes named by image (`node`) or by language (`typescript`), in build order."""
    chosen: list[ImageRecipe] = []
    for name in names:
        found = RECIPES.get(name) or next(
            (r for r in RECIPES.values() if name in r.languages), None
        )
        if found is None:
            known = ", ".join(sorted({*RECIPES, *LANGUAGES}))
            raise ImageBuildError(f"no image recipe for {name!r} (known: {known})")
        if found not in chosen:
            chosen.append(found)
    return chosen


@dataclass(frozen=True)
class ImageStatus:
    recipe: ImageRecipe
    present: bool
    image_id: str = ""
    size_mb: float = 0.0
    built: str = ""
    version: str = ""


class ImageBuilder:
    """Builds and lists hazmat's images on one engine."""

    def __init__(
        self,
        engine: Engine | None = None,
        *,
        cache_dir: Path = Path("/var/cache/hazmat/debootstrap"),
        work_dir: Path = Path("/var/tmp"),
        progress: Progress = print,
    ) -> None:
        self.engine = engine or Engine()
        self.cache_dir = cache_dir
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
        )

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
        return image_id

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
            SUITE,
            str(rootfs),
        ]
        if mirror:
            cmd.append(mirror)
        self._say(recipe, f"debootstrap {SUITE} with {', '.join(recipe.packages)}")
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
                tail = (tail + [line.rstrip()])[-20:]
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
        (rootfs / "work").mkdir(exist_ok=True)
        self._say(
            recipe,
            f"hardened: setuid/setgid bits removed from {stripped} files, docs and caches dropped",
        )

    def _import(self, recipe: ImageRecipe, rootfs: Path, tarball: Path) -> str:
        self._say(recipe, "packing and importing")
        _run(["tar", "--numeric-owner", "--xattrs", "-C", str(rootfs), "-cf", str(tarball), "."])
        changes = [
            f'LABEL {LABEL_PREFIX}.version="{IMAGE_VERSION}"',
            f'LABEL {LABEL_PREFIX}.name="{recipe.name}"',
            f'LABEL {LABEL_PREFIX}.built="{datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")}"',
            f'LABEL {LABEL_PREFIX}.packages="{" ".join(recipe.packages)}"',
            f'LABEL {LABEL_PREFIX}.suite="{SUITE}"',
            "ENV PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8",
            "USER 65534:65534",
            "WORKDIR /work",
            'CMD ["/bin/sh"]',
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


def _require_tools(recipe: ImageRecipe) -> None:
    if os.geteuid() != 0:
        raise ImageBuildError("building images needs root (debootstrap and chroot)")
    needed = ["debootstrap", "tar", "chroot", *recipe.host_tools]
    missing = [tool for tool in needed if shutil.which(tool) is None]
    if missing:
        raise ImageBuildError(
            f"building {recipe.ref} needs {', '.join(missing)}: apt-get install {' '.join(missing)}"
        )


def install_esbuild(rootfs: Path, scratch: Path, progress: Progress) -> None:
    """TypeScript: install esbuild's static binary, fetched with npm from its registry and
    checked against the pinned integrity hash before it is unpacked or run."""
    arch = {"x86_64": "x64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())
    package = f"@esbuild/linux-{arch}@{ESBUILD_VERSION}"
    if arch not in ESBUILD_INTEGRITY:
        raise ImageBuildError(f"no pinned integrity hash for {package}: add it to images.py")
    progress(f"[node] npm pack {package}")
    out = _run(["npm", "pack", package, "--silent"], cwd=scratch).strip().splitlines()
    tarball = scratch / out[-1]
    check_integrity(tarball, ESBUILD_INTEGRITY[arch], package)
    with tarfile.open(tarball) as tar:
        member = tar.getmember("package/bin/esbuild")
        source = tar.extractfile(member)
        if source is None:
            raise ImageBuildError(f"{package} has no bin/esbuild")
        target = rootfs / "usr/local/bin/esbuild"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(source.read())
        target.chmod(0o755)
    version = _run(["chroot", str(rootfs), "/usr/local/bin/esbuild", "--version"]).strip()
    progress(f"[node] esbuild {version} installed")


def check_integrity(path: Path, integrity: str, what: str) -> None:
    """Refuse `path` unless its hash is `integrity` (npm's `sha512-<base64>` form)."""
    algorithm, _, expected = integrity.partition("-")
    digest = hashlib.new(algorithm, path.read_bytes()).digest()
    got = f"{algorithm}-{base64.b64encode(digest).decode()}"
    if not hmac.compare_digest(got, integrity) or not expected:
        raise ImageBuildError(f"{what}: integrity check failed (expected {integrity}, got {got})")


def prebuild_go_std(rootfs: Path, scratch: Path, progress: Progress) -> None:
    """Go: prebuild the standard library for CGO_ENABLED=0, so runs compile only main."""
    progress("[go] go install std (CGO_ENABLED=0)")
    proc = rootfs / "proc"
    _run(["mount", "-t", "proc", "proc", str(proc)])
    try:
        _run(
            [
                "chroot",
                str(rootfs),
                "/usr/bin/env",
                "-i",
                "PATH=/usr/bin:/bin",
                "HOME=/tmp",
                "GOCACHE=/tmp/gocache",
                "CGO_ENABLED=0",
                "GO111MODULE=off",
                "go",
                "install",
                "std",
            ]
        )
    finally:
        _run(["umount", "-l", str(proc)])
    shutil.rmtree(rootfs / "tmp/gocache", ignore_errors=True)


def _run(cmd: list[str], cwd: Path | None = None) -> str:
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, errors="replace")
    if proc.returncode != 0:
        raise ImageBuildError(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr.strip()}")
    return proc.stdout


RECIPES: Mapping[str, ImageRecipe] = MappingProxyType(
    {
        "python": ImageRecipe("python", ("python3",)),
        "node": ImageRecipe("node", ("nodejs",), extra=install_esbuild, host_tools=("npm",)),
        "go": ImageRecipe("go", ("golang-go",), extra=prebuild_go_std),
    }
)
