"""The sha256 of every program hazmat sends into a sandbox or puts into an image, as
tests/backends/inside_digests.json pins them (tests/backends/test_inside_files.py checks they
still match).

After changing what runs inside the sandbox on purpose (a file in src/hazmat/backends/inside/,
or how a module fills one in), write the new digests and commit them with the change:

    PYTHONPATH=src .venv/bin/python scripts/inside_digests.py --write

Without --write it prints the programs whose bytes differ from the pinned ones (status 1).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

from hazmat.backends.agent import compiled, python_parts, runners, session_agent, session_repl
from hazmat.backends.agent import single as agent
from hazmat.images import recipes, toolchains
from hazmat.images.builder import recipe_digest
from hazmat.images.recipes import RECIPES
from hazmat.languages import LANGUAGES

PINNED = Path(__file__).resolve().parent.parent / "tests" / "backends" / "inside_digests.json"


def programs() -> dict[str, str]:
    """Every program as the sandbox (or the image) gets it, placeholders filled, by name."""
    found = {
        "agent.PROLOGUE": agent.PROLOGUE,
        "agent.AGENT_SCRIPT": agent.AGENT_SCRIPT,
        "agent.STAGE_SCRIPT": agent.STAGE_SCRIPT,
        "agent.COLLECT_SCRIPT": agent.COLLECT_SCRIPT,
        "compiled.AGENT_SOURCE": compiled.AGENT_SOURCE,
        "session_agent.SESSION_SCRIPT": session_agent.SESSION_SCRIPT,
        "session_repl.REPL": session_repl.REPL,
        "python_parts.DISPLAY": python_parts.DISPLAY,
        "python_parts.PRELOAD": python_parts.PRELOAD,
        "runners.PYTHON": runners.PYTHON,
        "runners.NODE": runners.NODE,
        "runners.RUBY": runners.RUBY,
        "toolchains.JAVAC_SERVER_SOURCE": toolchains.JAVAC_SERVER_SOURCE,
        "toolchains.JAVA_RUNNER_SOURCE": toolchains.JAVA_RUNNER_SOURCE,
        "recipes.DATA_PRELOAD": recipes.DATA_PRELOAD,
    }
    # each image's recipe digest: what decides whether a machine's images are rebuilt (the
    # source of the build steps, comments included, is part of it)
    for name, recipe in sorted(RECIPES.items()):
        found[f"recipe_digest({name})"] = recipe_digest(recipe)
    # the build steps that are scripts (hazmat/language_builds/)
    for name in sorted(LANGUAGES):
        if "\n" in (LANGUAGES[name].build or ""):
            found[f"LANGUAGES[{name}].build"] = LANGUAGES[name].build or ""
    # what a language runs as the program before the job (Go's cache, Java's javac, R's profile)
    for name in sorted(LANGUAGES):
        if LANGUAGES[name].prepare:
            found[f"LANGUAGES[{name}].prepare"] = LANGUAGES[name].prepare
    # the templates filled per language: the unpack script, and the interpreter a session keeps
    for name in sorted(LANGUAGES):
        env = session_agent.session_environment(LANGUAGES[name], 256)
        for key in ("HAZMAT_UNPACK_SCRIPT", "HAZMAT_REPL_CODE"):
            if key in env:
                found[f"session_environment({name}).{key}"] = env[key]
    return found


def digests() -> dict[str, str]:
    """The sha256 of each program, by name."""
    return {
        name: hashlib.sha256(text.encode()).hexdigest() for name, text in sorted(programs().items())
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help=f"write {PINNED.name}")
    now = digests()
    if parser.parse_args().write:
        PINNED.write_text(json.dumps(now, indent=2) + "\n")
        print(f"wrote {len(now)} digests to {PINNED}")
        return 0
    pinned = json.loads(PINNED.read_text())
    changed = sorted(k for k in pinned.keys() | now.keys() if pinned.get(k) != now.get(k))
    for name in changed:
        print(f"{name}: pinned {pinned.get(name)}, now {now.get(name)}")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
