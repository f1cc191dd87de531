"""What several commands share: the program-source options of `run` and `assess`, reading a
file the command line names, the policy file, the key store of `serve`, `mcp` and `keys`, and
what to say when a package hazmat needs cannot be imported."""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterable
from pathlib import Path
from types import FrameType, TracebackType
from typing import TYPE_CHECKING, Any

from hazmat._exceptions import InputError, quoted
from hazmat.languages import LANGUAGES, Language, get_language, language_for_path
from hazmat.options import option
from hazmat.policy import Policy

if TYPE_CHECKING:
    from hazmat.service.tenant_keys import KeyStore

__all__ = [
    "INTERNAL_ERROR",
    "add_option_flags",
    "add_source",
    "broken_dependency",
    "key_store",
    "option_values",
    "policy",
    "program",
    "read",
    "weaker_runtime",
]

INTERNAL_ERROR = 70  # EX_SOFTWARE: an unexpected failure (HAZMAT_DEBUG=1 shows the traceback)


def add_source(parser: argparse.ArgumentParser, what: str) -> None:
    """FILE or -c CODE, --lang, --trust and --policy, for a command that takes a program."""
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("program", nargs="?", metavar="FILE", help=f"the program to {what}")
    source.add_argument("-c", dest="code", metavar="CODE", help="the program, as a string")
    langs = ", ".join(LANGUAGES)
    parser.add_argument("--lang", help=f"one of {langs} (default: from the file's extension)")
    add_option_flags(parser, ["trust"])
    parser.add_argument("--policy", type=Path, metavar="FILE", help="YAML policy file")


def add_option_flags(parser: argparse.ArgumentParser, names: Iterable[str]) -> None:
    """The flags of a run's options `names`, as options/ declares them (`Option.flag`)."""
    for name in names:
        opt = option(name)
        flag = opt.flag
        if flag is None:
            continue
        words = flag.help or f"{opt.help}{_REPEATABLE.get(flag.kind, '')}"
        extra: dict[str, Any] = {"dest": flag.dest or name, "help": words.replace("%", "%%")}
        if flag.metavar:
            extra["metavar"] = flag.metavar
        choices = opt.schema.get("enum") or opt.schema.get("items", {}).get("enum")
        if choices:
            extra["choices"] = choices
        if flag.kind in ("repeat", "pairs", "files"):
            extra |= {"action": "append", "default": []}
        if flag.kind in ("file", "files"):
            extra["type"] = Path
        elif flag.kind == "value" and opt.types != (str,):
            extra["type"] = float if float in opt.types else int
        parser.add_argument(flag.name, **extra)


_REPEATABLE = {"repeat": " (repeatable)", "pairs": " (repeatable)", "files": " (repeatable)"}


def option_values(args: argparse.Namespace, names: Iterable[str]) -> dict[str, Any]:
    """The options `names` as the command line set them (`add_option_flags`): None for one not
    given; a `file` or `files` flag is read by its command."""
    values: dict[str, Any] = {}
    for name in names:
        flag = option(name).flag
        if flag is None or flag.kind in ("file", "files"):
            continue
        given = getattr(args, flag.dest or name)
        if flag.kind == "words":
            given = given.split() if given else None
        elif flag.kind == "pairs":
            given = _pairs(flag.name, given)
        values[name] = given if given != [] else None
    return values


def _pairs(flag: str, pairs: list[str]) -> dict[str, str] | None:
    found = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep:
            raise InputError(f"{flag} {quoted(pair)} must look like NAME=VALUE")
        found[name] = value
    return found or None


def program(args: argparse.Namespace) -> tuple[str | bytes, Language, str | None]:
    """The code, its language and the script's name (its path) from FILE or -c."""
    if args.code is not None:
        return args.code, get_language(args.lang or "python"), None
    path = Path(args.program)
    code = read(path, "program")
    language = get_language(args.lang) if args.lang else language_for_path(path)
    return code, language, str(path.resolve())


def read(path: Path, what: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read {what} {quoted(str(path))}: {exc.strerror or exc}") from None


def policy(args: argparse.Namespace) -> Policy:
    """The policy of `--policy FILE`, else the built-in one."""
    if not args.policy:
        return Policy()
    from hazmat.policy.file import load_policy  # here: PyYAML costs `hazmat --help` 10 ms

    return load_policy(args.policy)


def weaker_runtime(args: argparse.Namespace) -> bool:
    """runc asked for at a level that runs under runsc: allowed here and by the user's own
    local server (the machine's owner decides), never to a service's key, so such work with a
    service set (HAZMAT_URL) stays in this process."""
    if args.runtime != "runc":
        return False
    chosen = policy(args)
    return chosen.settings(args.trust or chosen.default_trust).runtime.value == "runsc"


def key_store(args: argparse.Namespace) -> KeyStore:
    """The key store of `--keys FILE`, else the default one."""
    from hazmat.service.tenant_keys import KeyStore, default_keys_path

    return KeyStore(args.keys or default_keys_path())


def broken_dependency(exc: ImportError, command: str) -> str | None:
    """What to tell the user when `exc` says a package hazmat needs cannot be imported (absent,
    of a version hazmat was not written for, or broken itself): the package, the versions
    hazmat supports and the command that installs one. None when the import that failed was
    hazmat's own (a bug, reported as one)."""
    module = _failed_module(exc)
    top = module.partition(".")[0]
    if not top or top == "hazmat":
        return None
    if top in sys.stdlib_module_names:
        return f"{command} needs Python's module {top!r}, which this Python lacks: {exc}"
    name, wanted = _requirement(top)
    install = f"{sys.executable} -m pip install --force-reinstall '{name}{wanted}'"
    needs = f"the package {name!r}" + (f" ({wanted})" if wanted else "")
    return f"{command} needs {needs}, which cannot be imported: {exc}; install it: {install}"


def _failed_module(exc: ImportError) -> str:
    """The module whose import failed, as hazmat asked for it: the first module past hazmat's
    own frames (a package that is there but fails to import something of its own), else the
    name the error gives (one that is not there at all)."""
    modules = [str(frame.f_globals.get("__name__", "")) for frame in _frames(exc.__traceback__)]
    ours = [i for i, name in enumerate(modules) if name.partition(".")[0] == "hazmat"]
    past = modules[ours[-1] + 1 :] if ours else modules
    theirs = [name for name in past if name and not name.startswith("importlib")]
    return theirs[0] if theirs else exc.name or ""


def _frames(tb: TracebackType | None) -> list[FrameType]:
    frames = []
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    return frames


def _requirement(module: str) -> tuple[str, str]:
    """The distribution that provides `module` and the versions hazmat's metadata asks for
    ("" when hazmat is not installed, as when run from a source tree)."""
    from importlib import metadata

    names = metadata.packages_distributions().get(module) or [_distribution_named(module)]
    try:
        required = metadata.requires("hazmat") or []
    except metadata.PackageNotFoundError:
        required = []
    for line in required:
        found = re.match(r"([A-Za-z0-9._-]+)(\[[^]]*\])?\s*([^;]*)(;.*)?$", line)
        if found is None or "extra ==" in (found.group(4) or ""):
            continue
        for name in names:
            if _normal(found.group(1)) == _normal(name):
                parts = [part.strip() for part in found.group(3).split(",") if part.strip()]
                return found.group(1), ",".join(sorted(parts, key=lambda p: p[0] != ">"))
    return names[0], ""


def _distribution_named(module: str) -> str:
    """A missing module's distribution, by name: the same but for PyYAML, hazmat's one
    dependency imported under another name."""
    return "PyYAML" if module == "yaml" else module


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()
