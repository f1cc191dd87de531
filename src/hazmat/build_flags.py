"""Compiler flags a run may ask for, from its trust level's allowlist (`build_flags`).

Judges set a task's flags (`-O2`, `-std=c++17`, `-lm`, `-DONLINE_JUDGE`); hazmat takes them
only from a list the policy allows per level and language, never arbitrary ones: a flag can
read files (`@file`, `-include`), load plugins or write where it should not. Each allowed flag is
one word of letters, digits and `_+=.,:-` starting with `-`, so the build's shell takes it as
one argument whatever it holds. The flags go at the end of the compiler's command line, after
hazmat's own: the last `-std` and `-O` win, and libraries come after the sources.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from types import MappingProxyType

from hazmat._exceptions import InputError, quoted
from hazmat.languages import Language

__all__ = [
    "DEFAULT_BUILD_FLAGS",
    "FLAG_LANGUAGES",
    "build_command",
    "check_flags",
    "flag_problem",
]

# the languages whose build command ends with the compiler's own arguments
FLAG_LANGUAGES = ("c", "cpp")
_FLAG = re.compile(r"-[A-Za-z0-9][A-Za-z0-9_+=.,:-]*")
_COMMON = (
    *(f"-O{level}" for level in ("0", "1", "2", "3", "s")),
    "-lm", "-pthread", "-lpthread", "-DONLINE_JUDGE", "-DEVAL", "-Wall", "-Wextra", "-w",
)  # fmt: skip
DEFAULT_BUILD_FLAGS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "c": (*_COMMON, *(f"-std={s}" for s in ("c99", "c11", "c17", "gnu99", "gnu11", "gnu17"))),
        "cpp": (
            *_COMMON,
            *(f"-std={k}++{v}" for k in ("c", "gnu") for v in ("11", "14", "17", "20")),
        ),
    }
)


def flag_problem(flag: object) -> str | None:
    """Why `flag` cannot be in an allowlist; None when it can."""
    if not isinstance(flag, str) or not _FLAG.fullmatch(flag):
        return (
            f"{quoted(flag)} is not a compiler flag hazmat passes (one word: '-' then "
            "letters, digits and _+=.,:-)"
        )
    return None


def check_flags(
    language: str, flags: object, allowed: Mapping[str, Sequence[str]], where: str
) -> tuple[str, ...]:
    """`flags` as a tuple, when each is in `allowed[language]` (`where` names the policy key
    the allowlist is, for the error); InputError naming the first that is not."""
    if flags is None:
        return ()
    if isinstance(flags, str) or not isinstance(flags, Sequence):
        raise InputError(f"build_flags must be a list of strings, not {type(flags).__name__}")
    if not flags:
        return ()
    if language not in FLAG_LANGUAGES:
        raise InputError(
            f"build_flags: {language} takes no compiler flags (only {', '.join(FLAG_LANGUAGES)})"
        )
    permitted = allowed.get(language, ())
    for flag in flags:
        if not isinstance(flag, str) or flag not in permitted:
            raise InputError(
                f"build_flags: {quoted(flag)} is not allowed for {language} at this level "
                f"(policy {where}.{language}: {' '.join(permitted) or 'none'})"
            )
    return tuple(flags)


def build_command(lang: Language, flags: Sequence[str]) -> str:
    """The language's build command with `flags` after its own (checked ones only)."""
    return " ".join((lang.build, *flags)) if flags else lang.build
