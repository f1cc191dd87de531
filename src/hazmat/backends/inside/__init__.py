"""What runs inside the sandbox, as the files in this folder, and the one way they are filled in.

Every program hazmat sends into a container (or puts into an image) is a file here, in its
own language, read with `importlib.resources` by the module that hands it out under the same
name as before:

    prologue.sh         how both agents begin                 agent.PROLOGUE
    agent.sh            the single-run agent, after it        agent.AGENT_SCRIPT
    stage.sh            unpack, build, run as the program     agent.STAGE_SCRIPT
    collect.sh          the output files' records             agent.COLLECT_SCRIPT
    session.sh          the session agent, after it           session_agent.SESSION_SCRIPT
    session_unpack.sh   one call's job, unpacked              session_agent.SESSION_UNPACK
    shell_session.bash  a Bash session's shell                shell_session.shell_repl
    display.py          the displays (both Pythons embed it)  display_runner.DISPLAY
    python_runner.py    Python's runner                       runners.PYTHON
    repl.py             a Python session's interpreter        session_repl.REPL
    node_runner.js      Node's runner                         runners.NODE
    ruby_runner.rb      Ruby's runner                         runners.RUBY
    HazmatJavac.java    the warm javac (in the Java image)    toolchains.JAVAC_SERVER_SOURCE
    data_preload.py     python-data's preload (in its image)  recipes.DATA_PRELOAD

What reaches the container is the file's bytes, with its placeholders filled by `fill`: none
of these programs is ever imported or run on the host. A placeholder is `@NAME@` (capitals,
digits, `_`), replaced by the value given for NAME. Where a bare placeholder would not parse
in the file's language, a whole line stands in for it: a line that ends in the comment
`# @NAME@` is replaced, all of it, by the value (python_runner.py and repl.py import display.py's
function on such a line, so that linters see where the name comes from). `fill` refuses a
placeholder without a value and a value without a placeholder.

The bytes of every assembled program are pinned by tests/backends/inside_digests.json
(tests/backends/test_inside_files.py); the files are linted by `make lint` (scripts/lint-inside.sh:
ShellCheck, `node --check`, `javac`, `ruby -c`; ruff and mypy read the Python files as they
read all of src/).
"""

from __future__ import annotations

import re
from importlib.resources import files

__all__ = ["PLACEHOLDER", "fill", "placeholders", "program", "read"]

PLACEHOLDER = re.compile(r"@([A-Z][A-Z0-9_]*)@")
# a whole line standing in for a placeholder, or a placeholder within a line
_SLOT = re.compile(
    r"^[^\n@]*#[ \t]*@(?P<line>[A-Z][A-Z0-9_]*)@[ \t]*$|@(?P<word>[A-Z][A-Z0-9_]*)@",
    re.MULTILINE,
)


def read(name: str) -> str:
    """The text of the file `name` in this folder, as it is (placeholders and all)."""
    return files(__name__).joinpath(name).read_text(encoding="utf-8")


def placeholders(text: str) -> set[str]:
    """The names of the placeholders in `text`."""
    return set(PLACEHOLDER.findall(text))


def fill(text: str, **values: str) -> str:
    """`text` with each placeholder replaced by its value, in one pass (a value is never read
    for placeholders). Raises ValueError if a placeholder has no value or a value is not used."""
    found = placeholders(text)
    missing, unused = sorted(found - values.keys()), sorted(values.keys() - found)
    if missing or unused:
        raise ValueError(f"template placeholders: no value for {missing}, not used: {unused}")
    return _SLOT.sub(lambda slot: values[slot["line"] or slot["word"]], text)


def program(name: str, **values: str) -> str:
    """The file `name` with its placeholders filled: how a module loads a program it hands
    out, so that a placeholder left without a value fails when the module is imported."""
    return fill(read(name), **values)
