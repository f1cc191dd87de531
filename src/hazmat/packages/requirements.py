"""What a session asks to install, checked before anything is fetched: the policy lets its
level install, and each entry is a plain requirement, never a URL, a path, a git reference or
one of pip's or npm's options. Python: a PEP 508 name, extras and PEP 440 version
specifiers (`seaborn==0.13.2`, `requests>=2.31`); no `===` (its version is any string, a path
to pip) and no name pip reads as a file (`six.tar.gz`, `x.whl`). JavaScript and TypeScript: a
name by npm's rules and a semver version or range, or a dist-tag (`lodash@4.17.21`,
`@scope/pkg@^1.2`, `x@latest`); never what npm reads as a path (`x@.`, `x@..`, `x@~/y`,
`x.tgz`).
Printable ASCII only: no NUL, no control character."""

from __future__ import annotations

import re
from collections.abc import Sequence

from packaging.requirements import InvalidRequirement, Requirement

from hazmat._exceptions import InputError, InstallRefused, quoted
from hazmat.policy.packages import SOURCES, PackageSettings

__all__ = ["NPM_NAME", "check_requirements"]

MOST_CHARS = 200
PRINTABLE = re.compile(r"[ -~]+")
# what pip reads as a file to build or unpack rather than a name (pip's ARCHIVE_EXTENSIONS)
ARCHIVES = (".whl", ".zip", ".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz", ".tar.xz", ".txz",
            ".tlz", ".tar.lz", ".tar.lzma")  # fmt: skip
# npm's names (validate-npm-package-name: lower case, URL-safe, no leading `.` or `_`, an
# optional scope), and after `@` a semver range (node-semver's grammar) or a dist-tag, which
# starts with a letter: no protocol (`git+`, `file:`, `npm:` aliases, URLs) and no path
_NPM_PART = r"[a-z0-9][a-z0-9._-]*"
NPM_NAME = rf"(?:@{_NPM_PART}/)?{_NPM_PART}"  # also what a download's plan may name
_SEMVER_PART = r"(?:0|[1-9][0-9]*|[xX*])"
_SEMVER_TAIL = r"(?:-[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?"
_SEMVER = rf"v?{_SEMVER_PART}(?:\.{_SEMVER_PART}(?:\.{_SEMVER_PART}{_SEMVER_TAIL})?)?"
_COMPARATOR = rf"(?:(?:<=|>=|<|>|=|~>?|\^) *)?{_SEMVER}"
_RANGE_SET = rf"{_SEMVER} +- +{_SEMVER}|{_COMPARATOR}(?: +{_COMPARATOR})*"
_RANGE = rf"(?:{_RANGE_SET})(?: *\|\| *(?:{_RANGE_SET}))*"
_TAG = r"[A-Za-z][A-Za-z0-9._-]*"
_NPM = re.compile(rf"({NPM_NAME})(?:@({_RANGE}|{_TAG}))?")
NPM_NAME_MOST = 214
NPM_RESERVED = frozenset({"node_modules", "favicon.ico"})
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
    if not PRINTABLE.fullmatch(entry):
        raise InputError(
            f"packages: {quoted(entry)} is not a requirement: only printable ASCII is taken "
            "(no NUL, no control character)"
        )
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
    if any(spec.operator == "===" for spec in requirement.specifier):
        raise InputError(
            f"packages: {quoted(entry)}: `===` is not taken (it matches any string); use "
            "`==` and a version"
        )
    if any(text.lower().endswith(ARCHIVES) for text in (requirement.name, entry)):
        raise InputError(
            f"packages: {quoted(entry)} is a file name, not a package's: ask for the package "
            "by name and version (like 'six==1.17.0')"
        )
    return str(requirement)


def _npm(entry: str) -> str:
    if ":" in entry or "/" in entry.lstrip("@").partition("/")[2]:
        raise InstallRefused(
            f"packages: {quoted(entry)} names a URL, a path or a repository: packages come "
            "from the service's registry only; ask for it by name and version"
        )
    if entry.lower().endswith(ARCHIVES):  # npm reads `x.tgz` and `x@y.tgz` as files
        raise InputError(
            f"packages: {quoted(entry)} is a file name, not a package's: ask for the package "
            "by name and version (like 'lodash@4.17.21')"
        )
    found = _NPM.fullmatch(entry)
    if found is None or len(found[1]) > NPM_NAME_MOST or found[1] in NPM_RESERVED:
        raise InputError(
            f"packages: {quoted(entry)} is not an npm package name with an optional version, "
            "range or tag (like 'lodash@4.17.21', '@scope/pkg@^1.2' or 'pkg@latest')"
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
