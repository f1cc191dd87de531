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
"""

from __future__ import annotations

import shlex

__all__ = ["shell_repl"]

_SHELL = r"""
exec 7</tmp/.hazmat-session/go 8>/tmp/.hazmat-session/done
for __hazmat_name in $(compgen -e); do
    case $__hazmat_name in HAZMAT_*) unset "$__hazmat_name" ;; esac
done
unset __hazmat_name OLDPWD
__hazmat_unpack=@UNPACK@
__hazmat_workdir=@WORKDIR@
while IFS= read -r __hazmat_mode <&7; do
    sh -c "$__hazmat_unpack" unpack "$__hazmat_workdir" </tmp/.hazmat-session/job 3>&2
    __hazmat_status=$?
    if [ "$__hazmat_status" -eq 0 ] && [ "$__hazmat_mode" = run ]; then
        set --
        . /tmp/.hazmat-job.sh
        rm -f /tmp/.hazmat-job.sh /tmp/.hazmat-job.json
        . "$__hazmat_workdir/main.sh" </tmp/.hazmat-stdin
        __hazmat_status=$?
        set +e +u +o pipefail
    fi
    printf '%s\n' "$__hazmat_status" >&8
done
exit 0
"""


def shell_repl(unpack: str, workdir: str) -> str:
    """The shell's code, with the agent's unpack script and the working directory in it."""
    return _SHELL.replace("@UNPACK@", shlex.quote(unpack)).replace(
        "@WORKDIR@", shlex.quote(workdir)
    )
