"""What a session asks to install, checked before anything is fetched: the policy lets its
level install, and each entry is a plain requirement (a name, extras and a version range:
`seaborn==0.13.2`, `requests>=2.31`), never a URL, a path or one of pip's options."""

from __future__ import annotations

from collections.abc import Sequence

from packaging.requirements import InvalidRequirement, Requirement

from hazmat._exceptions import InputError, InstallRefused, quoted
from hazmat.package_policy import PackageSettings

__all__ = ["check_requirements"]

MOST_CHARS = 200


def check_requirements(
    asked: object, settings: PackageSettings, level: str, language: str
) -> tuple[str, ...]:
    """The requirements to give pip, each as packaging writes it; `InstallRefused` (with what
    the caller may do instead) or `InputError` naming the entry that is wrong."""
    if not settings.allows(level, language):
        raise InstallRefused(_refusal(settings, level, language))
    if isinstance(asked, str | bytes) or not isinstance(asked, Sequence) or not asked:
        raise InputError("packages: expected a non-empty list of requirements like 'six==1.17.0'")
    if len(asked) > settings.max_packages:
        raise InstallRefused(
            f"packages: {len(asked)} asked, at most {settings.max_packages} may be installed at "
            "once (policy packages.max_packages); install fewer at a time"
        )
    return tuple(dict.fromkeys(_check(entry) for entry in asked))


def _check(entry: object) -> str:
    if not isinstance(entry, str) or not entry.strip():
        raise InputError(f"packages: expected requirement strings, got {quoted(entry)}")
    if len(entry) > MOST_CHARS or entry.lstrip().startswith("-"):
        raise InputError(
            f"packages: {quoted(entry)} is not a requirement (a name and a version range, "
            "like 'six==1.17.0'; pip's options are not taken)"
        )
    try:
        requirement = Requirement(entry)
    except InvalidRequirement as exc:
        raise InputError(f"packages: {quoted(entry)} is not a requirement: {exc}") from None
    if requirement.url:
        raise InstallRefused(
            f"packages: {quoted(entry)} names a URL: packages come from the service's index "
            "only; ask for it by name and version"
        )
    if requirement.marker:
        raise InputError(f"packages: {quoted(entry)}: environment markers are not taken")
    return str(requirement)


def _refusal(settings: PackageSettings, level: str, language: str) -> str:
    if language != "python":
        return (
            f"packages cannot be installed in a {language} session (only Python sessions "
            "install packages); use what the image has"
        )
    if settings.index is None:
        return (
            "packages cannot be installed here (the policy names no package index: "
            "packages.python.index); use the standard library and the packages the image has"
        )
    return (
        f"sessions at trust level {level!r} may not install packages here (policy "
        "packages.levels); use the standard library and the packages the image has"
    )
