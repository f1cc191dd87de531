"""The languages: one module each in this package (python.py, go.py, ...), over the shared
base here, as DMOJ's `executors/` has them.

A language's module holds one `LANGUAGE = Language(...)`: its image and source file name, how to
build and run it, the analysers that assess it, the images it brings (their Debian packages),
the names other systems give it, and its own constants. A language with files of its own (an
analyser it brings, the code of its session's interpreter) is a folder: its `__init__.py`
holds the `LANGUAGE`, beside them (r/). This package finds the modules itself (`LANGUAGES`, in
each one's `rank`), so a new language is its module, plus its image's steps in images/ when its
image needs more than packages, and its tests.

`build` and `run` are shell command lines that the agent runs in the working directory; a
non-zero exit of `build` is a compile error and the program does not run. A language with a
`runner` (backends/agent/runners.py) has its interpreter started with the container, before the
job exists; it then runs `entry` instead of `run`.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import PurePath
from types import MappingProxyType

from hazmat._exceptions import UnknownLanguage, quoted

__all__ = [
    "LANGUAGES",
    "ImageSpec",
    "Language",
    "Repl",
    "SelfTest",
    "get_language",
    "language_for_path",
]

# Debian suite -> the tag hazmat's images built from it carry (images/recipes.py builds them)
SUITES: Mapping[str, str] = MappingProxyType({"trixie": "2", "bookworm": "1"})
DEFAULT_SUITE = "trixie"
IMAGE_VERSION = SUITES[DEFAULT_SUITE]  # the tag of the current images (Debian 13)
# The images beside each language's own: the data image (`image: python-data`)
EXTRA_IMAGES = ("python-data",)
# Where compiled languages put their build (a tmpfs that allows exec: Language.exec_tmp)
BUILD_DIR = "/tmp/.hazmat-build"
# Python code an image may carry that the runner executes before it says it is ready
PRELOAD_FILE = "/etc/hazmat/preload.py"


@dataclass(frozen=True)
class ImageSpec:
    """An image a language brings that is Debian packages alone: images/recipes.py builds it
    (with what every image gets, the relay to the allowlist proxy). An image that needs steps
    of its own (a prebuilt cache, an archive) has its recipe written in images/recipes.py."""

    name: str  # the image is hazmat/<name>:<IMAGE_VERSION>
    packages: tuple[str, ...]
    summary: str  # one line on what it holds, as `hazmat images list` shows it


@dataclass(frozen=True)
class SelfTest:
    """A language's own test, which the conformance suite runs in it under every runtime and
    tier (tests/execution/test_languages.py): `greet` reads a word from stdin and prints
    `hello <word>`; `streams` writes `out` to stdout and `err` to stderr and exits with
    status 3; `compile_error`, for a language with a build step, is code that does not build
    and a word of the compiler's message about it."""

    greet: str
    streams: str
    compile_error: tuple[str, str] | None = None


@dataclass(frozen=True)
class Repl:
    """The interpreter a session keeps between calls, so that what one call defines is there for
    the next (backends/agent/session_agent.py). Its code is the language's own (`code`, as R's
    session.R), or one of hazmat's interpreters, named by `hazmat` (backends/agent/
    session_agent.py's `HAZMAT_REPLS`: Python's "python", Bash's "shell"), which live in
    backends/inside/ and are filled in there.

    The session agent starts it once, as the session's uid, in the working directory, with
    `command` (a shell line: its code is "$3") and stdin from /dev/null. It then opens the FIFO
    /tmp/.hazmat-session/go for reading and then /tmp/.hazmat-session/done for writing, and
    for each line read from `go` (the mode: `run`, `files`, `save` or `load`): for `run` and
    `files` unpacks the call's job (/tmp/.hazmat-session/job, in the format session_agent.py
    gives: the env and args, the input files, the call's stdin), for `run` applies the env and
    args and runs the source file with the call's stdin; for `save` (before a pause) it may
    keep its variables in the working directory and for `load` (after the resume) load them,
    saying which as a line of JSON on stdout (sessions/pausing.py), or do nothing; and it
    writes the call's exit status as a line to `done`. `signal` interrupts a call whose time is
    up; between calls it must do nothing."""

    command: str
    code: str = ""
    name: str = "interpreter"  # what the agent's notes call it when it ends
    signal: str = "INT"
    hazmat: str = ""  # one of hazmat's own interpreters, in place of `code`

    def __post_init__(self) -> None:
        if bool(self.code) == bool(self.hazmat):
            raise ValueError("a Repl has its own code or names one of hazmat's, not both")


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
    # A program that prints 1: what `hazmat doctor` and `hazmat bench` run in this language.
    hello: str = ""
    # A program that prints the version of what runs it (its interpreter's, its compiler's;
    # TypeScript's is esbuild's, which strips the types): the first dotted number it prints is
    # what Piston's runtimes list shows (server/protocols/piston.py)
    version: str = ""
    # Its place in lists (help texts, the MCP tools' words): python, the default, first
    rank: int = 100
    # The in-process analysers that assess it (assess/child.py), in order. None: its
    # assessment is incomplete, so never LOW (docs/assessment.md)
    analysers: tuple[str, ...] = ()
    # The images it brings whose recipe is packages alone (ImageSpec)
    images: tuple[ImageSpec, ...] = ()
    # The names other systems give it: "polygon" -> the source-type prefixes of Polygon's
    # packages (grade/polygon.py); "sandbox_fusion", "piston" -> the names those protocols'
    # clients send, "judge0" -> Judge0 CE's language ids (server/protocols/: the first is the
    # one a list of languages shows)
    names: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: MappingProxyType({}))
    # The open files its program needs to start, whatever the level's `nofile` (R checks for
    # more than the strict level's 128): its containers get at least this many
    min_nofile: int = 0
    # An analyser the language brings itself (its folder's, "module:class", named in
    # `analysers` by its `name`): the assessment's child loads it (assess/child.py)
    own_analyser: str = ""
    # Whether its program shows displays (displays.py): the runner's (Python's, Node's), or
    # the language's own code writing them to DISPLAY_FILE
    displays: bool = False
    # The interpreter a session keeps, when the language brings one (Python's and Bash's are
    # backends/'s)
    repl: Repl | None = None
    self_test: SelfTest | None = None  # every language has one (tests/languages/ checks)
    # What a model reads of it in the tools' descriptions (hazmat.tools, server/mcp_tools.py):
    # its name as people write it; with a `repl`, what a session keeps between calls beside
    # its files; with `displays`, how its program shows charts and rich values
    title: str = ""
    keeps: str = ""
    shows: str = ""
    # What its runtime writes on stderr when the program runs out of memory by itself (an
    # error it raises or an abort, not the kernel's kill): a failed run that says it is
    # memory_limit, as judges call a JVM's OutOfMemoryError (run/results.py)
    out_of_memory: tuple[str, ...] = ()

    @property
    def source_names(self) -> tuple[str, ...]:
        """Every name the program's source file may have (none is free for an input file)."""
        return (self.source_name, *self.module_sources.values())

    def source_for(self, module: str | None) -> str:
        """The source file's name for a module system (None: the language's default)."""
        return self.module_sources.get(module or "", self.source_name)

    def out_of_memory_line(self, stderr: bytes) -> str | None:
        """The line of `stderr`'s end (its last 16 KiB) in which the runtime says the program
        ran out of memory (`out_of_memory`), the last such; None when none says so."""
        if not self.out_of_memory:
            return None
        for line in reversed(stderr[-16384:].decode("utf-8", "replace").splitlines()):
            if any(said in line for said in self.out_of_memory):
                return line.strip()
        return None


def _found() -> Mapping[str, Language]:
    """Every module of this package that holds a `LANGUAGE`, in their ranks."""
    found = []
    here = __path__[0]
    names = sorted(
        n.removesuffix(".py")
        for n in os.listdir(here)
        if n[0] not in "_." and (n.endswith(".py") or os.path.isfile(f"{here}/{n}/__init__.py"))
    )
    for name in names:  # os.listdir, not pkgutil: this is on the CLI's start-up path
        language = getattr(importlib.import_module(f"{__name__}.{name}"), "LANGUAGE", None)
        if isinstance(language, Language):
            found.append(language)
    found.sort(key=lambda lang: (lang.rank, lang.name))
    return MappingProxyType({lang.name: lang for lang in found})


LANGUAGES: Mapping[str, Language] = _found()
_BY_ALIAS = {alias: lang for lang in LANGUAGES.values() for alias in (lang.name, *lang.aliases)}


def get_language(name: str) -> Language:
    """The language called `name` (or one of its aliases, such as `py` or `ts`)."""
    lang = _BY_ALIAS.get(name.strip().lower()) if isinstance(name, str) else None
    if lang is None:
        known = ", ".join(sorted(LANGUAGES))
        raise UnknownLanguage(f"unknown language {quoted(name)} (known: {known})")
    return lang


def language_for_path(path: str | PurePath) -> Language:
    """The language a file's extension names."""
    suffix = PurePath(path).suffix.lower()
    for lang in LANGUAGES.values():
        if suffix in lang.extensions:
            return lang
    raise UnknownLanguage(
        f"cannot tell the language of {quoted(str(path))} from its extension; pass --lang"
    )


def standard_images() -> frozenset[str]:
    """The names of the images `hazmat images build` makes (`hazmat/<name>:<tag>`): each
    language's, and the extra ones (tests/images/test_images.py checks them against the recipes)."""
    names = {lang.image.partition(":")[0].removeprefix("hazmat/") for lang in LANGUAGES.values()}
    return frozenset(names | set(EXTRA_IMAGES))
