"""A Bash session's shell, kept between calls like a terminal (see session_agent.py).

The session agent starts it as the session's uid, once, in the working directory, and talks to
it through the same two FIFOs as Python's interpreter: a line with the mode on `go`, the
call's exit status back on `done`. For each call the shell unpacks the job the agent kept (as
a child process, with the agent's own unpack script), applies the call's env and args, and
sources main.sh from the working directory with the call's stdin. So what a call leaves in the
shell is there for the next one, as in a terminal: the current directory (`cd`), variables and
exported ones, functions and aliases. Background jobs are not: the agent ends every process
of a call before its end marker. Each call has its own arguments (`$1`...) and stdin. As in a
terminal, `exit` ends the shell, and so does a failing command under `set -e`: the next call
starts a new one in the working directory, with the files and without the variables (the
agent says so on stderr). The options `-e`, `-u` and `pipefail` are turned off after each call
that survives them, so one call's `set -e` does not end the shell in a later one.

Its code is backends/inside/shell_session.bash, a template: `shell_repl` fills it in.
"""

from __future__ import annotations

import shlex

from hazmat.backends.inside import fill, read

__all__ = ["shell_repl"]

_SHELL = read("shell_session.bash")


def shell_repl(unpack: str, workdir: str) -> str:
    """The shell's code, with the agent's unpack script and the working directory in it."""
    return fill(_SHELL, UNPACK=shlex.quote(unpack), WORKDIR=shlex.quote(workdir))
