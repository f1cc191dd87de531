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

IMAGE_VERSION = "2"  # the tag of the current images (Debian 13); tag 1 is Debian 12's
# The Go image's build cache with the standard library compiled (backends/recipes.py)
GO_CACHE = "/usr/lib/hazmat/gocache"
# Python code an image may carry that the runner executes before it says it is ready
PRELOAD_FILE = "/etc/hazmat/preload.py"


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
    # A shell command run as the program's uid in /tmp before the job exists (in the pool,
    # ahead of time); its failure is ignored.
    prepare: str = ""
    # The source file's name for a module system other than the default (JavaScript and
    # TypeScript: "esm", "commonjs"); the build step and the runner tell them apart by it.
    module_sources: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def source_names(self) -> tuple[str, ...]:
        """Every name the program's source file may have (none is free for an input file)."""
        return (self.source_name, *self.module_sources.values())

    def source_for(self, module: str | None) -> str:
        """The source file's name for a module system (None: the language's default)."""
        return self.module_sources.get(module or "", self.source_name)


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
            module_sources=MappingProxyType({"esm": "main.mjs", "commonjs": "main.cjs"}),
        ),
        "typescript": Language(
            name="typescript",
            image=f"hazmat/node:{IMAGE_VERSION}",
            source_name="main.ts",
            extensions=(".ts", ".mts", ".cts"),
            # main.mts is bundled as an ES module (main.mjs), main.ts and main.cts as CommonJS
            build=(
                "if [ -f main.mts ]; then set -- main.mts esm mjs;"
                " elif [ -f main.cts ]; then set -- main.cts cjs js;"
                " else set -- main.ts cjs js; fi;"
                ' exec esbuild "$1" --bundle --platform=node --format="$2" --packages=external'
                ' --log-level=warning --outfile="/tmp/.hazmat-build/main.$3"'
            ),
            run="exec node /tmp/.hazmat-build/main.js",
            runner="node",
            entry="/tmp/.hazmat-build/main.js",
            aliases=("ts",),
            module_sources=MappingProxyType({"esm": "main.mts", "commonjs": "main.cts"}),
        ),
        "go": Language(
            name="go",
            image=f"hazmat/go:{IMAGE_VERSION}",
            source_name="main.go",
            extensions=(".go",),
            # -s -w: no symbol table or DWARF; panics keep file:line (from pclntab) and the
            # link is ~100 ms shorter at half a CPU (docs/benchmarks.md)
            build="go build -ldflags='-s -w' -o /tmp/.hazmat-build/main ./*.go",
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
            # a writable build cache that links to the image's compiled standard library
            prepare=(
                f"[ -d {GO_CACHE} ] && mkdir -p .gocache && cp -rs {GO_CACHE}/. .gocache/"
                " && date +%s > .gocache/trim.txt"
            ),
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
