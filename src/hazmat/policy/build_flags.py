"""Compiler flags a run may ask for, from its trust level's allowlist (`build_flags`).

Judges set a task's flags (`-O2`, `-std=c++17`, `-lm`, `-DONLINE_JUDGE`); hazmat takes them
only from a list the policy allows per level and language, never arbitrary ones: a flag can
read files (`@file`, `-include`), load plugins or write where it should not. Each allowed flag is
one word of letters, digits and `_+=.,:-` starting with `-`, so the build's shell takes it as
one argument whatever it holds, and none makes the toolchain load or run code the source does
not name (`LOADS_CODE`): no allowlist may hold such a flag, whatever the policy says. The flags
go at the end of the compiler's command line, after hazmat's own: the last `-std` and `-O` win,
and libraries come after the sources.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

from hazmat._exceptions import InputError, PolicyError, UnknownLanguage, quoted
from hazmat.languages import Language, get_language

__all__ = [
    "DEFAULT_BUILD_FLAGS",
    "FLAG_LANGUAGES",
    "LOADS_CODE",
    "build_command",
    "check_allowlist",
    "check_flags",
    "flag_problem",
]

# the languages whose build command ends with the compiler's own arguments
FLAG_LANGUAGES = ("c", "cpp")
_FLAG = re.compile(r"-[A-Za-z0-9][A-Za-z0-9_+=.,:-]*")
# The beginnings of the flags that make gcc or clang load or run code the source does not name:
# plugins (`-fplugin=x.so`, `-fplugin-arg-*`, clang's `-fpass-plugin=`, `-load`, `-mllvm`),
# the programs and files the driver runs or reads as its own (`-B` the tools' folder,
# `-wrapper`, `-specs=`, `-cc1`), a sub-tool's own arguments passed through (`-Xclang`,
# `-Xlinker`, `-Wl,`, `-Wa,`, `-Wp,`: a linker plugin, a dynamic loader), a linker script
# (`-T`), search paths for libraries and headers (`-L`, `-I`, and every `-i...`: `-include`,
# `-imacros`, `-isystem`, `-iquote`, `-isysroot`, `-iplugindir`), and compiled modules
# (`-fmodule-mapper=`, which can start a program, `-fmodule-file=`). `--sysroot` and every
# other `--` flag are not one of hazmat's words at all.
LOADS_CODE = (
    "-fplugin", "-fpass-plugin", "-load", "-mllvm", "-B", "-wrapper", "-specs", "-cc1",
    "-X", "-Wl,", "-Wa,", "-Wp,", "-T", "-L", "-I", "-i", "-fmodule", "-fprebuilt-module",
    "-fcompare-debug",  # its value is a second compilation's flags (-fcompare-debug=-fplugin=)
)  # fmt: skip
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
    if flag.startswith(LOADS_CODE):
        return (
            f"{quoted(flag)} makes the compiler load or run code the source does not name "
            "(a plugin, a tool, a spec file, a linker script, a search path, a forced "
            "include, a sub-tool's own arguments): no level may allow it"
        )
    return None


def check_allowlist(given: Mapping[Any, object]) -> Mapping[str, tuple[str, ...]]:
    """A level's allowlist, by language name (an alias names a language too), each flag
    checked (`flag_problem`); `PolicyError` naming the key of the first problem: a key that
    is no language or one that takes no flags, a language named twice (`c++` beside `cpp`),
    a list that is not one, a flag that is not allowed anywhere."""
    checked: dict[str, tuple[str, ...]] = {}
    keys: dict[str, object] = {}
    for key, listed in given.items():
        name = _flag_language(key)
        if name in keys:
            raise PolicyError(f"{key}: names {name}, as the key {quoted(keys[name])} does")
        keys[name] = key
        if isinstance(listed, str) or not isinstance(listed, Sequence):
            raise PolicyError(f"{key}: expected a list of flags")
        for flag in listed:
            problem = flag_problem(flag)
            if problem:
                raise PolicyError(f"{key}: {problem}")
        checked[name] = tuple(listed)
    return MappingProxyType(checked)


def _flag_language(key: object) -> str:
    if not isinstance(key, str):
        raise PolicyError(f"{quoted(key)}: a language's name must be a string")
    try:
        name = get_language(key).name
    except UnknownLanguage as exc:
        raise PolicyError(f"{key}: {exc}") from None
    if name not in FLAG_LANGUAGES:
        only = ", ".join(FLAG_LANGUAGES)
        raise PolicyError(f"{key}: {name} takes no compiler flags (only {only})")
    return name


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
