"""Which image a run gets: the policy's default for its language and trust level, or one the
caller chose per run from the images that level allows.

A short name (`python-data`, or the name of an image built with `hazmat images build --name`)
means `hazmat/<name>:<IMAGE_VERSION>`; anything with a `/` or a `:` is a full reference. A
caller may choose the level's default, one of hazmat's own variants of the language's image
(`python-data` for Python), or an image the level lists in `allow_images`; anything else is
refused before anything runs, so a caller can never pick an image the policy did not name.
"""

from __future__ import annotations

from hazmat._exceptions import InputError, quoted
from hazmat.languages import IMAGE_VERSION, Language
from hazmat.policy import Policy, TrustLevel

__all__ = ["VARIANTS", "allowed_images", "default_image", "image_ref", "resolve_image"]

# hazmat's own images that can stand in for a language's default one
VARIANTS: dict[str, tuple[str, ...]] = {"python": ("python-data",)}


def image_ref(name: str) -> str:
    """The full reference for an image name (`python-data` -> `hazmat/python-data:2`)."""
    name = name.strip()
    if "/" in name or ":" in name:
        return name
    return f"hazmat/{name}:{IMAGE_VERSION}"


def default_image(policy: Policy, level: TrustLevel, lang: Language) -> str:
    settings = policy.settings(level)
    chosen = settings.images.get(lang.name) or policy.images.get(lang.name) or lang.image
    return image_ref(chosen)


def allowed_images(policy: Policy, level: TrustLevel, lang: Language) -> list[str]:
    """Every image a run of `lang` at `level` may ask for, default first."""
    refs = [default_image(policy, level, lang), lang.image]
    refs += [image_ref(name) for name in VARIANTS.get(lang.name, ())]
    refs += [image_ref(name) for name in policy.settings(level).allow_images]
    return list(dict.fromkeys(refs))


def resolve_image(policy: Policy, level: TrustLevel, lang: Language, requested: str | None) -> str:
    """The image for a run; `requested` (the caller's choice) must be one the level allows."""
    if requested is None:
        return default_image(policy, level, lang)
    if not isinstance(requested, str) or not requested.strip():
        raise InputError(f"image must be a non-empty image name, not {quoted(requested)}")
    if any(ord(c) < 33 or ord(c) == 127 for c in requested):
        raise InputError(f"image name {quoted(requested)} has spaces or control characters")
    ref = image_ref(requested)
    allowed = allowed_images(policy, level, lang)
    if ref not in allowed:
        raise InputError(
            f"image {quoted(requested)} is not allowed for {lang.name} at trust level "
            f"{level.value!r} (allowed: {', '.join(allowed)}; a policy adds more with "
            f"trust.{level.value}.allow_images)"
        )
    return ref
