"""Runners: an interpreter started with the container, idle until the agent says "go".

A runner is what makes a pre-started container fast: the interpreter has already paid for its
own start when the job arrives. The agent starts it in the background at container start; it
prints `hazmat-ready` on stdout (the host takes nothing from a container before that line),
then waits for SIGUSR2. The agent sends the signal once it has read the job's first lines;
without a build step the runner then reads the rest of the job from stdin (the env and args
as JSON, the input files), with one the agent has done so (its stage script, or the compiled
agent itself) and left the env and args in /tmp/.hazmat-job.json. The runner removes hazmat's
variables from its environment and runs the program in itself, as `python3 main.py` or
`node main.js` would: same argv, `__main__` / `require.main`, exit status, and tracebacks
without any frame of the runner. The program's own environment and arguments are applied just
before it starts.
Everything after that is the agent's: it waits for the runner, kills what the program left
behind, collects the output files and prints the end marker.

The runner shares the program's process and uid (never the agent's), so nothing it could say
is trusted; it says nothing after "ready" anyway.

Their code is in backends/inside/: python_runner.py (with python_parts.py's `PRELOAD` and
`DISPLAY` in it), node_runner.js and ruby_runner.rb.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from hazmat.backends.agent.python_parts import DISPLAY, PRELOAD
from hazmat.backends.inside import program

__all__ = ["READY_LINE", "RUNNERS"]

READY_LINE = b"hazmat-ready\n"

PYTHON = program("python_runner.py", DISPLAY=DISPLAY.strip("\n"), PRELOAD=PRELOAD)

NODE = program("node_runner.js")

RUBY = program("ruby_runner.rb")

# name -> (shell command line the agent starts in the background, with the entry file appended
# by the language spec; the runner's code, passed in HAZMAT_RUNNER)
RUNNERS: Mapping[str, tuple[str, str]] = MappingProxyType(
    {
        "python": ('exec python3 -c "$HAZMAT_RUNNER"', PYTHON),
        # V8 sizes its heap from the host's memory, not the cgroup's: without a limit of its
        # own, a program at the memory limit thrashes in GC until the wall clock runs out
        "node": (
            "printf '%s' \"$HAZMAT_RUNNER\" > /tmp/.hazmat-runner.js &&"
            ' exec node --max-old-space-size="$HAZMAT_HEAP_MB" /tmp/.hazmat-runner.js',
            NODE,
        ),
        "ruby": ('exec ruby -e "$HAZMAT_RUNNER"', RUBY),
    }
)
