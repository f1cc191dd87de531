"""`hazmat images build|list|export`: hazmat's images from Debian packages, and images of your
own built from one of them (docs/images.md); `export` prepares their root file systems for the
direct OCI tier (backends/oci/rootfs.py)."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from hazmat._exceptions import InputError

if TYPE_CHECKING:
    from hazmat.images.builder import ImageStatus

__all__ = ["add"]


def add(sub: Any) -> None:
    images = sub.add_parser("images", help="build or list hazmat's images")
    images_sub = images.add_subparsers(dest="images_command", required=True, metavar="COMMAND")
    _add_build(images_sub)
    listing = images_sub.add_parser("list", help="show hazmat's images")
    listing.add_argument("--json", action="store_true", help="print the images as JSON")
    listing.set_defaults(handler=_list)
    export = images_sub.add_parser(
        "export",
        help="prepare read-only root file systems of the images for the OCI tier "
        "(policy `backend: oci`, or `auto` where it runs); done on first use otherwise",
    )
    export.add_argument(
        "--lang", action="append", default=[], metavar="LANG",
        help="only the image of this language (repeatable); default: every present image",
    )  # fmt: skip
    export.add_argument(
        "--prune", action="store_true",
        help="also delete prepared file systems of images the engine no longer has",
    )  # fmt: skip
    export.add_argument(
        "--if-default", action="store_true",
        help="only where the default policy's `backend: auto` picks the OCI tier on this "
        "machine (what `make images` runs, so that a first run pays no export)",
    )  # fmt: skip
    export.set_defaults(handler=_export)


def _add_build(images_sub: Any) -> None:
    build = images_sub.add_parser("build", help="build images from Debian packages (needs root)")
    build.add_argument(
        "--lang",
        action="append",
        default=[],
        metavar="L",
        help="only the image for this language or image name (repeatable)",
    )
    build.add_argument(
        "--missing",
        action="store_true",
        help="only images that are absent or built from another recipe (from the image cache "
        "in /var/cache/hazmat/images when it has them)",
    )
    build.add_argument(
        "--suite",
        choices=("trixie", "bookworm"),
        default="trixie",
        help="Debian suite: trixie (tag 2, the default) or bookworm (the old tag 1 images)",
    )
    _add_own(build)
    build.set_defaults(handler=_build)


def _add_own(build: argparse.ArgumentParser) -> None:
    own = build.add_argument_group(
        "an image of your own (docs/images.md): --name NAME --from BASE and packages"
    )
    own.add_argument("--name", metavar="NAME", help="build hazmat/NAME from a base image")
    own.add_argument("--from", dest="base", metavar="BASE", help="python, python-data or node")
    for flag, what in (
        ("apt", "a Debian package"),
        ("pip", "a Python requirement"),
        ("npm", "an npm package"),
    ):
        own.add_argument(
            f"--{flag}", action="append", default=[], metavar="P", help=f"{what} (repeatable)"
        )


def _build(args: argparse.Namespace) -> int:
    from hazmat.images.builder import RECIPES, ImageBuilder, recipes_for
    from hazmat.images.custom import CustomImage

    own = args.name or args.base or args.apt or args.pip or args.npm
    if own and (args.lang or args.missing):
        raise InputError("--name/--from build one image of your own; drop --lang and --missing")
    if own and not (args.name and args.base):
        raise InputError("an image of your own needs both --name NAME and --from BASE")
    builder = ImageBuilder()
    if own:
        image = CustomImage.of(args.name, args.base, args.apt, args.pip, args.npm)
        recipe = image.recipe(args.suite)
        builder.build(recipe)
        print(f"use it with --image {image.name}, after allowing it in the policy:")
        print(f"  trust: {{<level>: {{allow_images: [{image.name}]}}}}")
        return 0
    names = args.lang or list(RECIPES)
    for recipe in recipes_for(names, args.suite):
        if args.missing:
            builder.ensure(recipe)  # kept if current, else from the image cache, else built
        else:
            builder.build(recipe)
    return 0


def _list(args: argparse.Namespace) -> int:
    from hazmat.images.builder import RECIPES, ImageBuilder

    builder = ImageBuilder()
    statuses = [builder.status(recipe) for recipe in RECIPES.values()]
    own = builder.custom()
    if args.json:
        print(json.dumps([_row(s) for s in statuses + own]))
        return 0
    _print_table(statuses + own)
    return 0 if all(s.current for s in statuses) else 1


def _export(args: argparse.Namespace) -> int:
    import time

    from hazmat.backends.oci.rootfs import RootFs
    from hazmat.images.builder import RECIPES, ImageBuilder
    from hazmat.languages import get_language

    if args.if_default:
        from hazmat.backends.oci.prerequisites import choice
        from hazmat.policy import Policy

        picked = choice(Policy().backend)
        if picked.tier != "oci":
            print(f"nothing to export: the default tier here is {picked.tier} ({picked.why})")
            return 0
    builder = ImageBuilder()
    rootfs = RootFs(builder.engine)
    if args.lang:
        refs = list(dict.fromkeys(get_language(name).image for name in args.lang))
    else:
        refs = [s.recipe.ref for s in map(builder.status, RECIPES.values()) if s.present]
    for ref in refs:
        began = time.monotonic()
        root = rootfs.path(ref)
        print(f"{ref}: {root} ({time.monotonic() - began:.1f} s)", flush=True)
    if args.prune:
        for folder in rootfs.remove_unused():
            print(f"removed {folder} (its image is gone)")
    return 0


def _row(s: ImageStatus) -> dict[str, Any]:
    return {
        "image": s.recipe.ref,
        "present": s.present,
        "id": s.image_id,
        "size_mb": round(s.size_mb, 1),
        "built": s.built,
        "version": s.version,
        "current": s.current if not s.base else None,
        "languages": list(s.languages),
        "from": s.base or None,
        "adds": s.adds or None,
    }


def _print_table(statuses: list[ImageStatus]) -> None:
    print(f"{'IMAGE':<24} {'LANGUAGES':<24} {'ID':<13} {'SIZE':>8}  BUILT")
    for s in statuses:
        langs = ", ".join(s.languages)
        if s.present:
            print(f"{s.recipe.ref:<24} {langs:<24} {s.image_id:<13} {s.size_mb:>6.0f}MB  {s.built}")
            if s.base:
                print(f"{'':<24} from {s.base}, adds {s.adds}")
            elif not s.current:
                print(f"{'':<24} (stale: built from another recipe; hazmat images build --missing)")
        else:
            hint = f"(missing: hazmat images build --lang {s.recipe.name})"
            print(f"{s.recipe.ref:<24} {langs:<24} {hint}")
