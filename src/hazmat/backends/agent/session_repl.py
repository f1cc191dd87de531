"""The interpreter kept between calls of a Python session (backends/agent/session_agent.py starts
it as the session's uid; sessions/).

It reads each call's job from the session agent, runs the code as a notebook cell would (the
last expression's value printed, or shown when it has a rich representation: python_parts.py),
and answers on the agent's pipe. For a pause it pickles what it can of its variables into the
working directory (`save`) and names the rest; a resumed session's new interpreter loads them
(`load`). Its code, backends/inside/repl.py (with python_parts.py's `PRELOAD` and `DISPLAY` in
it), runs inside the sandbox: the host reads only the agent's report.
"""

from __future__ import annotations

from hazmat.backends.agent.python_parts import DISPLAY, PRELOAD
from hazmat.backends.inside import program

__all__ = ["REPL"]

REPL = program("repl.py", DISPLAY=DISPLAY.strip("\n"), PRELOAD=PRELOAD)
