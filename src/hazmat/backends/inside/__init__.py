"""What runs inside the sandbox, as the files in this folder, and the one way they are filled in.

Every program hazmat sends into a container (or puts into an image) is a file here, in its
own language, read with `importlib.resources` by the module of backends/agent/ (or images/)
that hands it out under the name below:

    prologue.sh         how both agents begin                 single.PROLOGUE
    agent.sh            the single-run agent, after it        single.AGENT_SCRIPT
    stage.sh            unpack, build, run as the program     single.STAGE_SCRIPT
    collect.sh          the output files' records             single.COLLECT_SCRIPT
    session.sh          the session agent, after it           session_agent.SESSION_SCRIPT
    session_unpack.sh   one call's job, unpacked; a kept      session_agent.SESSION_UNPACK
                        build's cleaning between tests
    agent.c             the single-run agent, compiled (the   compiled.AGENT_SOURCE
                        four above in one process)
    agent_session.c     the session agent, compiled, after    compiled.AGENT_SOURCE
                        it (session.sh, and session_unpack.sh
                        but its modes clean, again, restore)
    shell_session.bash  a Bash session's shell                shell_session.shell_repl
    python_display.py   the displays (both Pythons embed it)  python_parts.DISPLAY
    preload.py          an image's warm-up (both embed it)    python_parts.PRELOAD
    python_runner.py    Python's runner                       runners.PYTHON
    repl.py             a Python session's interpreter        session_repl.REPL
    node_runner.js      Node's runner                         runners.NODE
    ruby_runner.rb      Ruby's runner                         runners.RUBY
    HazmatJavac.java    the warm javac (in the Java image)    toolchains.JAVAC_SERVER_SOURCE
    HazmatRunner.java   Java's tests' runner (in the image)   toolchains.JAVA_RUNNER_SOURCE
    data_preload.py     python-data's preload (in its image)  recipes.DATA_PRELOAD

What reaches the container is the file's bytes, with its placeholders filled by `fill`
(hazmat/template.py, the one templating mechanism: `@NAME@`, or a whole line ending in `# @NAME@`
where a bare placeholder would not parse; python_runner.py and repl.py import python_display.py's
and preload.py's functions on such lines, so that linters see where the name comes from): none
of these programs is ever imported or run on the host.

The bytes of every assembled program are pinned by tests/backends/inside_digests.json
(tests/backends/test_inside_files.py); the files are linted by `make lint` (scripts/lint-inside.sh:
ShellCheck, `node --check`, `javac`, `ruby -c`; ruff and mypy read the Python files as they
read all of src/).
"""

from __future__ import annotations

from importlib.resources import files

from hazmat.template import PLACEHOLDER, fill, placeholders

__all__ = ["PLACEHOLDER", "fill", "placeholders", "program", "read"]


def read(name: str) -> str:
    """The text of the file `name` in this folder, as it is (placeholders and all)."""
    return files(__name__).joinpath(name).read_text(encoding="utf-8")


def program(name: str, **values: str) -> str:
    """The file `name` with its placeholders filled: how a module loads a program it hands
    out, so that a placeholder left without a value fails when the module is imported."""
    return fill(read(name), **values)
