"""The compiled agent: the single-run agent and the session agent as one process each
(backends/inside/agent.c, and agent_session.c after it: `hazmat-agent session`), for both
tiers.

It speaks the protocols of backends/agent/single.py and session_agent.py byte for byte, so the host
cannot tell it from the shell agents; what it saves is on the sandbox's side. It reads the job from
stdin in large reads and passes what follows its own part on to the program's stdin, a pipe it
holds, where the shell reads a byte per system call (25-45 us each under gVisor's ptrace platform);
it takes the program's uid itself, with no setpriv; and it does the stage and collect scripts' work
itself: it writes the input files with the program's uid and gid as its effective ones (before
anything of the program's has run) and reads the output files in a fork that has taken the program's
uid for good and wiped the nonce, so no `head`, `wc` or shell runs per file. Only what is a shell
command by nature runs in /bin/sh: the language's setup, build step, runner start and run command,
the last replacing itself with the program. A session's agent (session_agent.py says what a
session's container does) does the same for each call, and reads the host's stop words itself while
a call runs; a session's kept interpreter and warm runner, tar and a kept build's cleaning stay
processes of the program's.

It is built on this host with its C compiler (Debian's gcc, statically linked), once per
source: the binary is kept in the OCI tier's folder under the source's digest, and each
sandbox of the tier gets it mounted read-only beside tini (`AGENT_PATH`), as the
engine mounts tini. The Docker backend mounts it too when its engine runs on this machine (the
binary in this user's cache, `hazmat._cache.cache_folder`); a remote engine cannot see the
host's files, and an engine that cannot mount it (a confined one) makes the backend fall back.
Without a C compiler both use the shell agents, and `hazmat doctor` says so.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from hazmat.backends.agent.single import RELAY_PORT
from hazmat.backends.inside import program

__all__ = ["AGENT_PATH", "AGENT_SOURCE", "compiled_agent", "why_not_compiled"]

log = logging.getLogger(__name__)

# the single-run agent with its parts, then the session agent's loop over them
AGENT_SOURCE = program(
    "agent.c", RELAY_PORT=str(RELAY_PORT), RELAY_HEX=f"{RELAY_PORT:04X}"
) + program("agent_session.c")
AGENT_PATH = "/sbin/hazmat-agent"  # where a sandbox sees it (tini is /sbin/docker-init)
COMPILERS = ("gcc", "cc")
_FLAGS = ("-static", "-O2", "-Wall", "-Werror", "-x", "c")
_COMPILE_S = 120


def compiled_agent(folder: Path) -> Path | None:
    """The agent's binary for this source under `folder`/agent, built if it is not there (also
    when it was removed since: a cleared cache); None when it cannot be built here
    (`why_not_compiled` says why)."""
    binary = _build(folder)[0]
    if binary is not None and not os.access(binary, os.X_OK):
        _build.cache_clear()
        binary = _build(folder)[0]
    return binary


def why_not_compiled(folder: Path) -> str | None:
    """Why sandboxes use the shell agents, or None when the compiled one is ready."""
    return _build(folder)[1]


@functools.cache
def _build(folder: Path) -> tuple[Path | None, str | None]:
    digest = hashlib.sha256(AGENT_SOURCE.encode()).hexdigest()[:24]
    binary = folder / "agent" / digest / "hazmat-agent"
    if os.access(binary, os.X_OK):
        return binary, None
    compiler = next((found for name in COMPILERS if (found := shutil.which(name))), None)
    if compiler is None:
        return _without("no C compiler on this host to build the compiled agent (apt install gcc)")
    binary.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=".hazmat-agent-", dir=binary.parent)
    os.close(fd)
    try:
        done = subprocess.run(
            [compiler, *_FLAGS, "-o", temp, "-"],
            input=AGENT_SOURCE.encode(),
            capture_output=True,
            timeout=_COMPILE_S,
            check=False,
        )
        if done.returncode != 0:
            error = done.stderr.decode(errors="replace").strip().splitlines()
            return _without(
                f"{compiler} could not build the compiled agent: {error[-1] if error else '?'}"
            )
        os.chmod(temp, 0o755)
        os.replace(temp, binary)  # whole, or not at all: another process may build it too
    except (OSError, subprocess.SubprocessError) as exc:
        return _without(f"could not build the compiled agent: {exc}")
    finally:
        Path(temp).unlink(missing_ok=True)
    return binary, None


def _without(why: str) -> tuple[None, str]:
    log.warning("sandboxes use the shell agents: %s", why)
    return None, why
