"""What a session asks to install, checked before anything is fetched: the policy lets its
level install, and each entry is a plain requirement, never a URL, a path, a git reference or
one of pip's or npm's options. Python: a name, extras and a version range (`seaborn==0.13.2`,
`requests>=2.31`); JavaScript and TypeScript: an npm name and a version or range
(`lodash@4.17.21`, `@scope/pkg@^1.2`)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from packaging.requirements import InvalidRequirement, Requirement

from hazmat._exceptions import InputError, InstallRefused, quoted
from hazmat.package_policy import SOURCES, PackageSettings

__all__ = ["check_requirements"]

MOST_CHARS = 200
# npm's names (lower case, URL-safe, an optional scope) and a version, tag or range: no
# protocol (`git+`, `file:`, `npm:` aliases, URLs) gets through
_NPM_NAME = r"(?:@[a-z0-9][a-z0-9._~-]*/)?[a-z0-9][a-z0-9._~-]*"
_NPM = re.compile(rf"({_NPM_NAME})(?:@([A-Za-z0-9.^~<>=|*+ -]{{1,100}}))?")
EXAMPLE = {"python": "'six==1.17.0'", "npm": "'lodash@4.17.21'"}


def check_requirements(
    asked: object, settings: PackageSettings, level: str, language: str
) -> tuple[str, ...]:
    """The requirements to give pip or npm; `InstallRefused` (with what the caller may do
    instead) or `InputError` naming the entry that is wrong."""
    source = settings.source(language)
    if source is None or level not in settings.levels:
        raise InstallRefused(_refusal(settings, level, language))
    example = EXAMPLE[source.kind]
    if isinstance(asked, str | bytes) or not isinstance(asked, Sequence) or not asked:
        raise InputError(f"packages: expected a non-empty list of requirements like {example}")
    if len(asked) > settings.max_packages:
        raise InstallRefused(
            f"packages: {len(asked)} asked, at most {settings.max_packages} may be installed at "
            "once (policy packages.max_packages); install fewer at a time"
        )
    check = _python if source.kind == "python" else _npm
    return tuple(dict.fromkeys(check(_text(entry, example)) for entry in asked))


def _text(entry: object, example: str) -> str:
    if not isinstance(entry, str) or not entry.strip():
        raise InputError(f"packages: expected requirement strings, got {quoted(entry)}")
    if len(entry) > MOST_CHARS or entry.lstrip().startswith("-"):
        raise InputError(
            f"packages: {quoted(entry)} is not a requirement (a name and a version, like "
            f"{example}; options are not taken)"
        )
    return entry.strip()


def _python(entry: str) -> str:
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


def _npm(entry: str) -> str:
    if ":" in entry or "/" in entry.lstrip("@").partition("/")[2]:
        raise InstallRefused(
            f"packages: {quoted(entry)} names a URL, a path or a repository: packages come "
            "from the service's registry only; ask for it by name and version"
        )
    found = _NPM.fullmatch(entry)
    if found is None:
        raise InputError(
            f"packages: {quoted(entry)} is not an npm package name with an optional version "
            "(like 'lodash@4.17.21' or '@scope/pkg@^1.2')"
        )
    return entry


def _refusal(settings: PackageSettings, level: str, language: str) -> str:
    kinds = [kind for kind, (_, languages) in SOURCES.items() if language in languages]
    if not kinds:
        return (
            f"packages cannot be installed in a {language} session (only Python, JavaScript "
            "and TypeScript sessions install packages); use what the image has"
        )
    if settings.source(language) is None:
        kind = kinds[0]
        key = f"packages.{kind}.{SOURCES[kind][0]}"
        return (
            f"packages cannot be installed here (the policy names no {kind} source: {key}); "
            "use the standard library and the packages the image has"
        )
    return (
        f"sessions at trust level {level!r} may not install packages here (policy "
        "packages.levels); use the standard library and the packages the image has"
    )
