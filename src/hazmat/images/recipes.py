"""What goes into each of hazmat's images, and the steps after debootstrap that need more.

An image is a Debian suite, a list of Debian packages and optionally one step of its own
(esbuild for TypeScript, a prebuilt Go build cache, a warmed matplotlib). The current images
come from Debian 13 (trixie) and carry tag 2; the Debian 12 (bookworm) images, tag 1, can
still be built with `hazmat images build --suite bookworm` and chosen in a policy.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import platform
import shutil
import tarfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from types import MappingProxyType

from hazmat._exceptions import ImageBuildError
from hazmat.backends.inside import program
from hazmat.images.chroot import Progress, in_chroot, run_tool
from hazmat.images.toolchains import (
    GCC_INPUTS,
    JAVA_INPUTS,
    prepare_gcc,
    prepare_java,
)
from hazmat.languages import DEFAULT_SUITE, LANGUAGES, PRELOAD_FILE, SUITES
from hazmat.languages.go import GO_CACHE

__all__ = [
    "DEFAULT_SUITE",
    "RECIPES",
    "SUITES",
    "ImageRecipe",
    "check_integrity",
    "in_chroot",
    "recipes_for",
    "run_tool",
]

Step = Callable[[Path, Path, Progress], None]

ESBUILD_VERSION = "0.28.2"
# npm itself, for a session's installs (hazmat/packages/): its tarball bundles its own
# dependencies, so it is unpacked as it is, checked first against this integrity (Debian's
# npm package depends on virtual packages debootstrap cannot resolve)
NPM_VERSION = "10.9.9"
NPM_INTEGRITY = (
    "sha512-1g+6jLQvaIuB4zwvHL7yrXuXcWZwDsCtBX8bbWDqbvJSSr9nPiDDWTHNgwXR27iIcTTW7v3A57hDW9RYv2W4Yg=="
)
# npm's own integrity field (sha512 of the package tarball) for each platform package, pinned
# here: the tarball is checked before anything in it is written to the image or run.
ESBUILD_INTEGRITY = {
    "x64": "sha512-4xTZr1FUmSoQW4XIWmit3tzQrUTZM+N3P0XV8xROKYF50XfI7xeO90+1bZvNwxIufQ9hDQVRJH5Y"
    "hgPVF8A/HQ==",
    "arm64": "sha512-pW4AC0P3it8c7do9MVM4p51FzHzdM/TZrerurgRcHJ2WTa1VQ1CIq18xncfpBJw4ojkiZZrKW2y"
    "IBWBP92j6Ug==",
}


@dataclass(frozen=True)
class ImageRecipe:
    """What goes into one image, and which languages use it."""

    name: str
    packages: tuple[str, ...]
    extra: Step | None = None  # a step after debootstrap: (rootfs, scratch, progress)
    host_tools: tuple[str, ...] = ()  # what `extra` needs on the building host
    suite: str = DEFAULT_SUITE
    env: tuple[str, ...] = ()  # NAME=value, set in the image
    summary: str = ""
    variant_of: str = ""  # a variant of another image (python-data of python): same languages
    inputs: tuple[str, ...] = ()  # what `extra` reads besides its own code: it is in the digest

    @property
    def ref(self) -> str:
        return f"hazmat/{self.name}:{SUITES[self.suite]}"

    @property
    def languages(self) -> tuple[str, ...]:
        """The languages that run in this image by default."""
        ref = f"hazmat/{self.variant_of}:{SUITES[self.suite]}" if self.variant_of else self.ref
        return tuple(n for n, lang in LANGUAGES.items() if lang.image == ref)

    def on(self, suite: str) -> ImageRecipe:
        """The same recipe on another Debian suite."""
        if suite not in SUITES:
            raise ImageBuildError(f"unknown suite {suite!r} (known: {', '.join(SUITES)})")
        return replace(self, suite=suite)


def recipes_for(names: Iterable[str], suite: str = DEFAULT_SUITE) -> list[ImageRecipe]:
    """Recipes named by image (`node`) or by language (`typescript`), in build order."""
    chosen: list[ImageRecipe] = []
    for name in names:
        found = RECIPES.get(name) or next(
            (r for r in RECIPES.values() if name in r.languages), None
        )
        if found is None:
            known = ", ".join(sorted({*RECIPES, *LANGUAGES}))
            raise ImageBuildError(f"no image recipe for {name!r} (known: {known})")
        if found.on(suite) not in chosen:
            chosen.append(found.on(suite))
    return chosen


def install_esbuild(rootfs: Path, scratch: Path, progress: Progress) -> None:
    """TypeScript: install esbuild's static binary, fetched with npm from its registry and
    checked against the pinned integrity hash before it is unpacked or run."""
    arch = {"x86_64": "x64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())
    package = f"@esbuild/linux-{arch}@{ESBUILD_VERSION}"
    if arch not in ESBUILD_INTEGRITY:
        raise ImageBuildError(f"no pinned integrity hash for {package}: add it to recipes.py")
    progress(f"[node] npm pack {package}")
    out = run_tool(["npm", "pack", package, "--silent"], cwd=scratch).strip().splitlines()
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
    version = run_tool(["chroot", str(rootfs), "/usr/local/bin/esbuild", "--version"]).strip()
    progress(f"[node] esbuild {version} installed")
    install_npm(rootfs, scratch, progress)


def install_npm(rootfs: Path, scratch: Path, progress: Progress) -> None:
    """npm, unpacked whole into /usr/lib/hazmat-npm (its tarball bundles its dependencies)
    once its integrity is checked, with /usr/local/bin/npm starting it with the image's node."""
    package = f"npm@{NPM_VERSION}"
    progress(f"[node] npm pack {package}")
    out = run_tool(["npm", "pack", package, "--silent"], cwd=scratch).strip().splitlines()
    tarball = scratch / out[-1]
    check_integrity(tarball, NPM_INTEGRITY, package)
    home = rootfs / "usr/lib/hazmat-npm"
    with tarfile.open(tarball) as tar:
        for member in tar.getmembers():
            name = member.name.removeprefix("package/")
            if member.name == name or ".." in Path(name).parts:
                raise ImageBuildError(f"{package}: unexpected member {member.name!r}")
            if member.isdir():
                continue
            source = tar.extractfile(member)
            if source is None or not (member.isfile()):
                raise ImageBuildError(f"{package}: {member.name!r} is not a plain file")
            target = home / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(source.read())
            target.chmod(0o755 if member.mode & 0o111 else 0o644)
    wrapper = rootfs / "usr/local/bin/npm"
    wrapper.write_text('#!/bin/sh\nexec node /usr/lib/hazmat-npm/bin/npm-cli.js "$@"\n')
    wrapper.chmod(0o755)
    version = run_tool(["chroot", str(rootfs), "/usr/local/bin/npm", "--version"]).strip()
    progress(f"[node] npm {version} installed")


def check_integrity(path: Path, integrity: str, what: str) -> None:
    """Refuse `path` unless its hash is `integrity` (npm's `sha512-<base64>` form)."""
    algorithm, _, expected = integrity.partition("-")
    digest = hashlib.new(algorithm, path.read_bytes()).digest()
    got = f"{algorithm}-{base64.b64encode(digest).decode()}"
    if not hmac.compare_digest(got, integrity) or not expected:
        raise ImageBuildError(f"{what}: integrity check failed (expected {integrity}, got {got})")


GO_PREBUILT = ("github.com/stretchr/testify/assert", "github.com/stretchr/testify/require")


def prebuild_go(rootfs: Path, scratch: Path, progress: Progress) -> None:
    """Go: compile the standard library (and testify) for CGO_ENABLED=0 once, at build time,
    into a build cache kept in the image (Go 1.20 and later keep no compiled std in GOROOT: a
    run seeds its own writable cache from this one). Older Go also installs it into
    GOROOT/pkg."""
    env = dict(LANGUAGES["go"].env)
    env["GOCACHE"] = GO_CACHE
    progress("[go] compiling the standard library into the image's build cache")
    in_chroot(rootfs, "go", "build", "std", env=env)
    in_chroot(rootfs, "go", "install", "std", env=env)
    # graders' tests import testify (Debian's package, in GOPATH): compiled once here too
    progress("[go] compiling testify into the build cache")
    in_chroot(rootfs, "go", "build", *GO_PREBUILT, env=env)
    cache = rootfs / GO_CACHE.lstrip("/")
    for name in ("trim.txt", "README", "testexpire.txt"):
        (cache / name).unlink(missing_ok=True)
    files = sum(1 for path in cache.rglob("*") if path.is_file())
    progress(f"[go] build cache: {files} files")


# Run by the Python runner before it says it is ready (see runners.py): the imports a data
# program makes are paid for before the job arrives, and matplotlib finds its font list
# (backends/inside/data_preload.py, put into the python-data image).
DATA_PRELOAD = program("data_preload.py")


def prepare_data(rootfs: Path, scratch: Path, progress: Progress) -> None:
    """python-data: build matplotlib's font list once, and install the runner's preload."""
    progress("[python-data] building matplotlib's font list")
    seed = "/usr/share/hazmat/matplotlib"
    in_chroot(
        rootfs,
        "python3",
        "-c",
        "import matplotlib.pyplot as p, numpy, pandas, scipy, sklearn; p.plot([1, 2]); "
        "p.savefig('/tmp/probe.png')",
        env={"MPLCONFIGDIR": seed, "MPLBACKEND": "Agg"},
    )
    preload = rootfs / PRELOAD_FILE.lstrip("/")
    preload.parent.mkdir(parents=True, exist_ok=True)
    preload.write_text(DATA_PRELOAD)
    shutil.rmtree(rootfs / "tmp", ignore_errors=True)
    (rootfs / "tmp").mkdir(mode=0o1777)
    (rootfs / "tmp").chmod(0o1777)


# The relay from the container's loopback to the allowlist proxy's unix socket (egress/),
# started by the agent only for runs with an allowlist.
RELAY = ("socat",)

DATA_PACKAGES = (
    "python3-numpy",
    "python3-pandas",
    "python3-matplotlib",
    "python3-scipy",
    "python3-sklearn",
)

# The images whose recipe is more than packages: their steps are here
_WITH_STEPS: Mapping[str, ImageRecipe] = MappingProxyType(
    {
        "node": ImageRecipe(
            "node",
            ("nodejs", *RELAY),
            extra=install_esbuild,  # and npm, which a session's install resolves with
            host_tools=("npm",),
            inputs=(
                ESBUILD_VERSION, *sorted(ESBUILD_INTEGRITY.values()), NPM_VERSION, NPM_INTEGRITY
            ),
            summary="Node.js, esbuild and npm (JavaScript, TypeScript)",
        ),
        "go": ImageRecipe(
            "go",
            ("golang-go", "golang-github-stretchr-testify-dev", *RELAY),
            extra=prebuild_go,
            inputs=(
                GO_CACHE,
                *GO_PREBUILT,
                *sorted(f"{k}={v}" for k, v in LANGUAGES["go"].env.items()),
            ),
            summary="Go, std prebuilt for CGO_ENABLED=0; testify for graders' tests",
        ),
        "python-data": ImageRecipe(
            "python-data",
            ("python3", "python3-pip", *DATA_PACKAGES, *RELAY),
            extra=prepare_data,
            inputs=(PRELOAD_FILE, DATA_PRELOAD),
            env=("MPLBACKEND=Agg", "MPLCONFIGDIR=/tmp/.matplotlib"),
            summary="Python with numpy, pandas, matplotlib (Agg), scipy, scikit-learn",
            variant_of="python",
        ),
        "gcc": ImageRecipe(
            "gcc",
            ("gcc", "g++", "libc6-dev", "libboost-dev", "libssl-dev", *RELAY),
            extra=prepare_gcc,
            inputs=GCC_INPUTS,
            summary="gcc and g++ (C17, C++20), Boost headers, OpenSSL, testlib.h; "
            "bits/stdc++.h precompiled",
        ),
        "java": ImageRecipe(
            "java",
            ("default-jdk-headless", *RELAY),
            extra=prepare_java,
            inputs=JAVA_INPUTS,
            summary="the default JDK (headless), with javac's classes archived",
        ),
    }
)


def _recipes() -> Mapping[str, ImageRecipe]:
    """Every image: those a language brings as packages alone (its module's `images` in
    languages/), with the relay, and those with steps of their own (`_WITH_STEPS`), in the
    languages' order."""
    simple = {
        spec.name: ImageRecipe(spec.name, (*spec.packages, *RELAY), summary=spec.summary)
        for lang in LANGUAGES.values()
        for spec in lang.images
    }
    both = {**simple, **_WITH_STEPS}
    order = [lang.image.partition(":")[0].removeprefix("hazmat/") for lang in LANGUAGES.values()]

    def place(name: str) -> tuple[int, int]:  # a variant (python-data) right after its base
        base = both[name].variant_of or name
        return (order.index(base) if base in order else len(order), base != name)

    return MappingProxyType({name: both[name] for name in sorted(both, key=place)})


RECIPES: Mapping[str, ImageRecipe] = _recipes()
