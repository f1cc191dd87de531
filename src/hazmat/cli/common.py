"""What several commands share: the program-source options of `run` and `assess`, reading a
file the command line names, the policy file, and the key store of `serve`, `mcp` and `keys`."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from hazmat._exceptions import InputError
from hazmat.languages import LANGUAGES, Language, get_language, language_for_path
from hazmat.policy import Policy, TrustLevel

if TYPE_CHECKING:
    from hazmat.tenant_keys import KeyStore

__all__ = [
    "INTERNAL_ERROR",
    "add_source",
    "key_store",
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
    parser.add_argument(
        "--trust",
        choices=[t.value for t in TrustLevel],
        help="trust level, which picks limits and runtime (default: the policy's, untrusted)",
    )
    parser.add_argument("--policy", type=Path, metavar="FILE", help="YAML policy file")


def program(args: argparse.Namespace) -> tuple[str | bytes, Language, str | None]:
    """The code, its language and a session name (the script's path) from FILE or -c."""
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
        raise InputError(f"cannot read {what} {str(path)!r}: {exc.strerror or exc}") from None


def policy(args: argparse.Namespace) -> Policy:
    """The policy of `--policy FILE`, else the built-in one."""
    if not args.policy:
        return Policy()
    from hazmat.policy_file import load_policy  # here: PyYAML costs `hazmat --help` 10 ms

    return load_policy(args.policy)


def weaker_runtime(args: argparse.Namespace) -> bool:
    """runc asked for at a level that runs under runsc: allowed here (the machine's owner
    decides), never to a service's key, so such work stays in this process."""
    if args.runtime != "runc":
        return False
    chosen = policy(args)
    return chosen.settings(args.trust or chosen.default_trust).runtime.value == "runsc"


def key_store(args: argparse.Namespace) -> KeyStore:
    """The key store of `--keys FILE`, else the default one."""
    from hazmat.tenant_keys import KeyStore, default_keys_path

    return KeyStore(args.keys or default_keys_path())
