"""Images of your own: one of hazmat's images plus Debian, Python and npm packages, installed
once at build time so that runs need no network.

`hazmat images build --name stats --from python-data --pip statsmodels --apt python3-yaml`
builds `hazmat/stats:2` the same way hazmat's own images are built (debootstrap, the base
image's own step, hardening, `docker import`), with three more steps:

- Debian packages join the base image's list in debootstrap;
- Python packages are installed by the image's own pip, run in the image's root filesystem
  (so it sees the Debian packages already there and installs only what is missing), from the
  package index the host's pip is configured with;
- npm packages are installed by the host's npm into `/node_modules`, where both `require` and
  `import` find them from `/work`, with install scripts disabled (no package code runs at
  build time; packages that need a native build step are not supported).

What was installed, with exact versions, is written to `/usr/share/hazmat/manifest.json` in the
image and to its labels, and the build prints the command that rebuilds it with every Python
and npm package pinned. The image is then chosen per run (`--image stats`) where the policy's
trust level allows it (`trust.<level>.allow_images: [stats]`).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from hazmat._exceptions import ImageBuildError
from hazmat.images.chroot import Progress, in_chroot, run_tool
from hazmat.images.recipes import RECIPES, ImageRecipe, Step

__all__ = ["MANIFEST", "CustomImage", "host_pip_index", "parse_labels"]

MANIFEST = "/usr/share/hazmat/manifest.json"
_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,62}$")
_APT = re.compile(r"^[a-z0-9][a-z0-9+.-]+$")  # Debian policy 5.6.1
# a requirement: a distribution name, optional extras, an optional version clause
_PIP = re.compile(
    r"^[A-Za-z0-9][A-Za-z0-9._-]*(\[[A-Za-z0-9._,-]+\])?"
    r"((==|>=|<=|~=|!=|<|>)[A-Za-z0-9.*+!-]+(,(==|>=|<=|~=|!=|<|>)[A-Za-z0-9.*+!-]+)*)?$"
)
_NPM = re.compile(r"^(@[a-z0-9][a-z0-9._-]*/)?[a-z0-9][a-z0-9._-]*(@[A-Za-z0-9.^~<>=|*+ -]+)?$")
_CONFIG_KEYS = ("index-url", "extra-index-url", "trusted-host", "timeout", "retries", "cert")
_HOST_CA = "/tmp/hazmat-host-ca.pem"  # the host pip's CA bundle, for the build only


@dataclass(frozen=True)
class CustomImage:
    """An image of the user's: a base image of hazmat's and the packages it adds."""

    name: str
    base: str
    apt: tuple[str, ...] = ()
    pip: tuple[str, ...] = ()
    npm: tuple[str, ...] = ()

    @classmethod
    def of(
        cls,
        name: str,
        base: str,
        apt: Iterable[str] = (),
        pip: Iterable[str] = (),
        npm: Iterable[str] = (),
    ) -> CustomImage:
        """Checked: a clear ImageBuildError names the first bad part."""
        if not _NAME.match(name):
            raise ImageBuildError(
                f"image name {name!r} must be 1-63 lower-case letters, digits, '.', '_' or '-'"
            )
        if name in RECIPES:
            raise ImageBuildError(f"{name!r} is one of hazmat's own images; choose another name")
        if base not in RECIPES:
            raise ImageBuildError(f"unknown base image {base!r} (known: {', '.join(RECIPES)})")
        image = cls(
            name,
            base,
            _checked(apt, _APT, "Debian"),
            _checked(pip, _PIP, "Python"),
            _checked(npm, _NPM, "npm"),
        )
        if not (image.apt or image.pip or image.npm):
            raise ImageBuildError("name at least one package to add (--apt, --pip or --npm)")
        if image.pip and not RECIPES[base].name.startswith("python"):
            raise ImageBuildError(f"--pip needs a Python base image, not {base!r}")
        if image.npm and base != "node":
            raise ImageBuildError(f"--npm needs the node base image, not {base!r}")
        return image

    def recipe(self, suite: str | None = None) -> ImageRecipe:
        base = RECIPES[self.base] if suite is None else RECIPES[self.base].on(suite)
        extra_packages = self.apt + (("python3-pip",) if self.pip else ())
        return replace(
            base,
            name=self.name,
            packages=tuple(dict.fromkeys(base.packages + extra_packages)),
            extra=_steps(self, base.extra),
            host_tools=base.host_tools + (("npm",) if self.npm else ()),
            summary=f"{base.summary}; adds {self.describe()}",
        )

    def describe(self) -> str:
        parts = [
            f"{kind} {' '.join(names)}"
            for kind, names in (("apt", self.apt), ("pip", self.pip), ("npm", self.npm))
            if names
        ]
        return "; ".join(parts)


def _checked(values: Iterable[str], pattern: re.Pattern[str], what: str) -> tuple[str, ...]:
    out: list[str] = []
    for value in values:
        if not isinstance(value, str) or not pattern.match(value):
            raise ImageBuildError(f"{value!r} is not a {what} package name (one per flag)")
        out.append(value)
    return tuple(dict.fromkeys(out))


def _steps(image: CustomImage, base_step: Step | None) -> Step:
    def step(rootfs: Path, scratch: Path, progress: Progress) -> None:
        if base_step is not None:
            base_step(rootfs, scratch, progress)
        manifest: dict[str, object] = {"name": image.name, "from": image.base}
        manifest["apt"] = _apt_versions(rootfs, image.apt)
        if image.pip:
            manifest["pip"] = _pip_install(rootfs, scratch, image, progress)
        if image.npm:
            manifest["npm"] = _npm_install(rootfs, scratch, image, progress)
        target = rootfs / MANIFEST.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(manifest, indent=2) + "\n")
        progress(f"[{image.name}] rebuild exactly with: {rebuild_command(manifest)}")

    return step


def _apt_versions(rootfs: Path, names: Sequence[str]) -> list[str]:
    if not names:
        return []
    out = in_chroot(rootfs, "dpkg-query", "-W", "-f=${Package}=${Version}\\n", *names)
    return out.split()


def host_pip_index() -> dict[str, str]:
    """The host pip's index settings (index-url, extra-index-url, trusted-host, cert, ...) as
    PIP_* variables, from `pip config list` and the environment; file:// indexes, which the
    image cannot see, are dropped. `PIP_CERT` is a path on the host."""
    proc = subprocess.run(
        ["python3", "-m", "pip", "config", "list"], capture_output=True, text=True, check=False
    )
    found: dict[str, str] = {}
    for line in proc.stdout.splitlines():
        key, _, value = line.partition("=")
        option = key.rpartition(".")[2]
        if option in _CONFIG_KEYS:
            found[option] = value.strip().strip("'\"")
    for option in _CONFIG_KEYS:
        env = os.environ.get("PIP_" + option.upper().replace("-", "_"))
        if env:
            found[option] = env
    settings: dict[str, str] = {}
    for option, value in found.items():
        kept = value
        if option.endswith("index-url"):
            kept = " ".join(u for u in value.split() if u.startswith(("http://", "https://")))
            if not kept:
                continue
        settings["PIP_" + option.upper().replace("-", "_")] = kept
    for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY"):
        if os.environ.get(name):
            settings[name] = os.environ[name]
    return settings


def _pip_install(rootfs: Path, scratch: Path, image: CustomImage, progress: Progress) -> list[str]:
    progress(f"[{image.name}] pip install {' '.join(image.pip)} (the image's own pip)")
    report = "/tmp/hazmat-pip-report.json"
    env = {"PIP_DISABLE_PIP_VERSION_CHECK": "1", **host_pip_index()}
    host_ca = rootfs / _HOST_CA.lstrip("/")
    if "PIP_CERT" in env:  # the host trusts its own CA bundle: so does this build, not the image
        try:
            host_ca.write_bytes(Path(env["PIP_CERT"]).read_bytes())
        except OSError as exc:
            raise ImageBuildError(f"cannot read the host pip's CA bundle: {exc}") from None
        env["PIP_CERT"] = _HOST_CA
    try:
        in_chroot(
            rootfs,
            "python3",
            "-m",
            "pip",
            "install",
            "--break-system-packages",
            "--root-user-action=ignore",
            "--no-cache-dir",
            "--no-input",
            "--progress-bar=off",
            "--report",
            report,
            "--",
            *image.pip,
            env=env,
        )
    except ImageBuildError as exc:
        raise ImageBuildError(f"pip could not install {' '.join(image.pip)}: {exc}") from None
    finally:
        host_ca.unlink(missing_ok=True)
    data = json.loads((rootfs / report.lstrip("/")).read_text())
    (rootfs / report.lstrip("/")).unlink()
    pins = sorted(
        f"{item['metadata']['name']}=={item['metadata']['version']}"
        for item in data.get("install", [])
    )
    progress(f"[{image.name}] pip installed {', '.join(pins) or 'nothing new'}")
    return pins


def _npm_install(rootfs: Path, scratch: Path, image: CustomImage, progress: Progress) -> list[str]:
    progress(f"[{image.name}] npm install {' '.join(image.npm)} into /node_modules")
    try:
        run_tool(
            [
                "npm",
                "install",
                "--prefix",
                str(rootfs),
                "--ignore-scripts",
                "--omit=dev",
                "--no-audit",
                "--no-fund",
                "--no-save",
                "--",
                *image.npm,
            ],
            cwd=scratch,
        )
    except ImageBuildError as exc:
        raise ImageBuildError(f"npm could not install {' '.join(image.npm)}: {exc}") from None
    lock = rootfs / "node_modules" / ".package-lock.json"
    packages = json.loads(lock.read_text()).get("packages", {}) if lock.exists() else {}
    pins = sorted(
        f"{path.rpartition('node_modules/')[2]}@{meta['version']}"
        for path, meta in packages.items()
        if path.count("node_modules/") == 1 and "version" in meta
    )
    for leftover in ("package.json", "package-lock.json"):
        (rootfs / leftover).unlink(missing_ok=True)
    progress(f"[{image.name}] npm installed {', '.join(pins)}")
    return pins


def rebuild_command(manifest: dict[str, object]) -> str:
    words = [
        "hazmat",
        "images",
        "build",
        "--name",
        str(manifest["name"]),
        "--from",
        str(manifest["from"]),
    ]
    for kind, key in (("--apt", "apt"), ("--pip", "pip"), ("--npm", "npm")):
        values = manifest.get(key) or []
        assert isinstance(values, list)
        for value in values:
            words += [kind, str(value).split("=")[0] if key == "apt" else str(value)]
    return shlex.join(words)


def parse_labels(labels: dict[str, str], prefix: str) -> dict[str, str]:
    """The custom-image labels of an image (`from`, `apt`, `pip`, `npm`), when it has them."""
    return {
        key: labels[f"{prefix}.{key}"]
        for key in ("from", "apt", "pip", "npm")
        if f"{prefix}.{key}" in labels
    }
