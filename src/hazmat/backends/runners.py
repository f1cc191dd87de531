"""Runners: an interpreter started with the container, idle until the agent says "go".

A runner is what makes a pre-started container fast: the interpreter has already paid for its
own start when the job arrives. The agent starts it in the background at container start; it
prints `hazmat-ready` on stdout (the host takes nothing from a container before that line),
then waits for SIGUSR2. The agent sends the signal once the job's files are in place; the
runner then removes hazmat's variables from its environment and runs the program in itself,
as `python3 main.py` or `node main.js` would: same argv, `__main__` / `require.main`, exit
status and tracebacks (minus the runner's own frame). Everything after that is the agent's:
it waits for the runner, kills what the program left behind, collects the output files and
prints the end marker.

The runner shares the program's process and uid, so nothing it could say is trusted; it says
nothing after "ready" anyway.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

__all__ = ["READY_LINE", "RUNNERS"]

READY_LINE = b"hazmat-ready\n"

PYTHON = r"""
import os, signal, sys
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR2})
os.write(1, b"hazmat-ready\n")
signal.sigwait({signal.SIGUSR2})
signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGUSR2})
def _hazmat_prepare():
    import builtins, importlib.machinery, types
    for name in [k for k in os.environ if k.startswith("HAZMAT_")]:
        del os.environ[name]
    path = os.path.abspath(sys.argv[1])
    sys.argv[:] = sys.argv[1:]
    sys.path[0] = os.path.dirname(path)
    main = types.ModuleType("__main__")
    main.__file__ = path
    main.__cached__ = None
    main.__builtins__ = builtins
    main.__loader__ = importlib.machinery.SourceFileLoader("__main__", path)
    sys.modules["__main__"] = main
    with open(path, "rb") as f:
        source = f.read()
    try:
        code = compile(source, path, "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as exc:
        sys.excepthook(type(exc), exc, None)
        sys.exit(1)
    return main.__dict__, code
def _hazmat_flush():
    # what python3 does after running a file (and not after -c): flush, ignoring errors
    for name in ("stderr", "stdout"):
        try:
            getattr(sys, name).flush()
        except Exception:
            pass
_hazmat_globals, _hazmat_code = _hazmat_prepare()
del _hazmat_prepare
try:
    exec(_hazmat_code, _hazmat_globals)
except SystemExit:
    _hazmat_flush()
    raise
except BaseException as _hazmat_exc:
    _hazmat_flush()
    sys.excepthook(type(_hazmat_exc), _hazmat_exc, _hazmat_exc.__traceback__.tb_next)
    sys.exit(1)
else:
    _hazmat_flush()
"""

NODE = r"""
(() => {
  const fs = require('fs');
  // a signal listener alone does not keep node running
  const idle = setInterval(() => {}, 2147483647);
  process.on('SIGUSR2', function hazmatStart() {
    process.removeListener('SIGUSR2', hazmatStart);
    clearInterval(idle);
    for (const name of Object.keys(process.env)) {
      if (name.startsWith('HAZMAT_')) delete process.env[name];
    }
    const entry = require('path').resolve(process.argv[1]);
    process.argv[1] = entry;
    process.execArgv.length = 0;
    require('module').runMain(entry);
  });
  fs.writeSync(1, 'hazmat-ready\n');
})();
"""

# name -> (shell command line the agent starts in the background, with the entry file appended
# by the language spec; the runner's code, passed in HAZMAT_RUNNER)
RUNNERS: Mapping[str, tuple[str, str]] = MappingProxyType(
    {
        "python": ('exec python3 -c "$HAZMAT_RUNNER"', PYTHON),
        "node": ('exec node -e "$HAZMAT_RUNNER"', NODE),
    }
)
