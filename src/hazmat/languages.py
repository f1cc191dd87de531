"""One spec per language: its image, its source file name, how to build it and how to run it.

Adding a language is one entry in `LANGUAGES`. `build` and `run` are shell command lines that the
agent runs in the working directory; a non-zero exit of `build` is a compile error and the
program does not run. A language with a `runner` (backends/runners.py) has its interpreter
started with the container, before the job exists; it then runs `entry` instead of `run`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import PurePath
from types import MappingProxyType

from hazmat._exceptions import UnknownLanguage

__all__ = ["LANGUAGES", "Language", "get_language", "language_for_path"]

IMAGE_VERSION = "1"


@dataclass(frozen=True)
class Language:
    """How hazmat runs one language."""

    name: str
    image: str
    source_name: str
    extensions: tuple[str, ...]
    run: str
    build: str = ""
    aliases: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    # Compiled languages run a binary from /tmp, so that tmpfs must allow exec.
    exec_tmp: bool = False
    runner: str = ""
    entry: str = ""


LANGUAGES: Mapping[str, Language] = MappingProxyType(
    {
        "python": Language(
            name="python",
            image=f"hazmat/python:{IMAGE_VERSION}",
            source_name="main.py",
            extensions=(".py",),
            run="exec python3 main.py",
            runner="python",
            entry="main.py",
            aliases=("py", "python3"),
            env=MappingProxyType({"PYTHONDONTWRITEBYTECODE": "1", "PYTHONIOENCODING": "utf-8"}),
        ),
        "javascript": Language(
            name="javascript",
            image=f"hazmat/node:{IMAGE_VERSION}",
            source_name="main.js",
            extensions=(".js", ".mjs", ".cjs"),
            run="exec node main.js",
            runner="node",
            entry="main.js",
            aliases=("js", "node", "nodejs"),
        ),
        "typescript": Language(
            name="typescript",
            image=f"hazmat/node:{IMAGE_VERSION}",
            source_name="main.ts",
            extensions=(".ts", ".mts", ".cts"),
            build=(
                "esbuild main.ts --bundle --platform=node --format=cjs --packages=external"
                " --log-level=warning --outfile=/tmp/.hazmat-build/main.js"
            ),
            run="exec node /tmp/.hazmat-build/main.js",
            runner="node",
            entry="/tmp/.hazmat-build/main.js",
            aliases=("ts",),
        ),
        "go": Language(
            name="go",
            image=f"hazmat/go:{IMAGE_VERSION}",
            source_name="main.go",
            extensions=(".go",),
            build="go build -o /tmp/.hazmat-build/main ./*.go",
            run="exec /tmp/.hazmat-build/main",
            aliases=("golang",),
            env=MappingProxyType(
                {
                    "GOCACHE": "/tmp/.gocache",
                    "GOPATH": "/tmp/go",
                    "GOFLAGS": "-buildvcs=false",
                    "GO111MODULE": "off",
                    "CGO_ENABLED": "0",
                    "GOTOOLCHAIN": "local",
                    "GOPROXY": "off",
                }
            ),
            exec_tmp=True,
        ),
    }
)

_BY_ALIAS = {alias: lang for lang in LANGUAGES.values() for alias in (lang.name, *lang.aliases)}


def get_language(name: str) -> Language:
    """The language called `name` (or one of its aliases, such as `py` or `ts`)."""
    lang = _BY_ALIAS.get(name.strip().lower()) if isinstance(name, str) else None
    if lang is None:
        known = ", ".join(sorted(LANGUAGES))
        raise UnknownLanguage(f"unknown language {name!r} (known: {known})")
    return lang


def language_for_path(path: str | PurePath) -> Language:
    """The language a file's extension names."""
    suffix = PurePath(path).suffix.lower()
    for lang in LANGUAGES.values():
        if suffix in lang.extensions:
            return lang
    raise UnknownLanguage(
        f"cannot tell the language of {str(path)!r} from its extension; pass --lang"
    )
