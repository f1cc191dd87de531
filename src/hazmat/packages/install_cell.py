"""Runs as a call in a Python session's kept interpreter, in a namespace of its own (hazmat/
packages/install.py sends it; it is never imported): pip installs the package files the host
sent into .hazmat-install/ (checked against their hashes on the host) into /tmp/.packages, a
place on an exec tmpfs from which compiled extensions load, without its index and without
dependencies (the host worked them out). The interpreter finds them at once; its subprocesses
through PYTHONPATH (backends/inside/repl.py puts both in place when it starts)."""

import importlib
import os
import shutil
import subprocess
import sys

here = os.path.abspath(".hazmat-install")
target = "/tmp/.packages"
files = sorted(os.path.join(here, name) for name in os.listdir(here) if name.endswith(".whl"))
options = [
    "--no-index",
    "--no-deps",
    "--no-compile",
    "--upgrade",
    "--quiet",
    "--disable-pip-version-check",
    "--no-warn-script-location",
    "--target",
    target,
]
try:
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", *options, *files],
        capture_output=True,
        text=True,
        env={**os.environ, "HOME": "/tmp", "PIP_NO_CACHE_DIR": "1"},
    )
finally:
    shutil.rmtree(here, ignore_errors=True)
if done.returncode:
    sys.stderr.write(done.stdout + done.stderr)
    raise SystemExit(done.returncode)
if target not in sys.path:
    sys.path.insert(1, target)
importlib.invalidate_caches()
