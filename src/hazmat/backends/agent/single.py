"""The agent: a POSIX shell script that runs inside the container and receives the job on stdin
(backends/inside/: prologue.sh and agent.sh, with stage.sh and collect.sh; this module hands
them out as `AGENT_SCRIPT`, `STAGE_SCRIPT` and `COLLECT_SCRIPT`).

Nothing of the job travels in argv or touches the image's filesystem: the host writes one
payload to the container's attached stdin, and the job is unpacked into the working directory
(a tmpfs). Two identities share the container. The agent runs as root inside it with four
capabilities (SETUID, SETGID, SETPCAP to start the program's processes under another uid, KILL
to signal and end them) and nothing else; it alone reads the job's first line, which holds the
per-run nonce. Everything of the program's (the runner, the unpacking, the build step, the
program, the collection of output files) runs through `setpriv` as the run's own uid, with no
capability and an empty bounding set: it cannot read the agent's memory, signal it or learn
the nonce, so it cannot forge the markers below. The payload is::

    hazmat 7 <nwant> <max_file_bytes> <nonce> <max_total_bytes> <max_own_bytes>\\n
    <name>\\n                                   one per output file the caller asked for, and
                                                the runner's display file (an absolute path,
                                                capped by max_own_bytes: displays.py)
    <json_size> <sh_size>\\n                     from here on read as the program's uid
    <json_size bytes> <sh_size bytes>           the program's env and args, twice (may be empty)
    <nfiles>\\n
    <size> <name>\\n<size bytes>                one per input file (the source file first)
    go\\n                                       a language with a build step: once it is done
    <the program's stdin, until EOF>

The container is started before the job exists (a warm pool hands it out later), so the agent
first says it is ready: if the language has a runner (backends/agent/runners.py), the agent starts
it in the background and the runner prints `hazmat-ready` once its interpreter is up; otherwise
the agent prints that line itself. A runner of a language without a build step reads the rest
of the job itself once signalled (SIGUSR2), so that no process is started on the way to the
program (a fork and exec costs about 1 ms under runc and 6-11 ms under runsc); otherwise a
stage script (`STAGE_SCRIPT`) unpacks the files, runs the build step, and then either exits
for the agent to signal the runner or becomes the language's run command. The env and args
reach the program alone: as JSON (`{"env": {...}, "args": [...]}`) for a runner, which applies
them just before it runs the program, and as a shell snippet quoted by the host (`export
NAME='value'` and `set -- 'arg' ...`) sourced just before the run command. Input files may
sit in folders (`data/in.csv`); the folders are made as the files are unpacked. The program
gets the rest of stdin.

A language with a build step (Go, TypeScript) has it run by the stage script in its `unpack`
phase; the agent then prints a marker with the build's status, which ends the host's compile
budget (`compile_timeout_s`) and starts the program's own time limit::

    --hazmat-built-<nonce>-- <status>\\n

and, when the build succeeded, waits for the host's `go` line: the build step has a memory
budget of its own (`compile_memory_mb`, for compilers that need more than the program), the
container starts with it, and the host sets the program's own limit on the container's cgroup
before it sends `go` and the program's stdin. Then, when there is no runner, the agent runs
the stage script again in its `run` phase. Before saying it is ready the agent also runs the
language's own setup as the program (`HAZMAT_PREPARE`: Go links the image's prebuilt build
cache into /tmp) and, for a run with a network allowlist (`HAZMAT_EGRESS`, the path of the
proxy socket mounted into the container), starts socat as the program's uid to relay
127.0.0.1:3128 to that socket, waiting until the kernel lists the port as listening.

When the program has ended the agent kills every process left (`kill -9 -1`: all but itself
and PID 1, all of them the program's uid); if output files were asked for (or hazmat's own
display file exists: no section otherwise), it writes after the program's stdout a marker
carrying the nonce, and `COLLECT_SCRIPT`, run as the program's uid once nothing of the
program runs, writes one record per file (paths may contain `/`)::

    --hazmat-files-<nonce>--\\n
    file <size> <name>\\n<size bytes>  |  missing 0 <name>\\n  |  too_large <size> <name>\\n
    |  over_total <size> <name>\\n   (the files before it came to max_total_bytes: not sent)

and last the end marker with the program's exit status (128 + signal when killed by one), on
stdout and on stderr::

    --hazmat-end-<nonce>-- <status>\\n

The host stops reading at the end marker, takes its last reading of the container's cgroup
(the agent stops itself after the marker, so the container is still there to read) and
removes the container; anything printed after the marker is discarded. The agent needs only
`sh`, `setpriv`, `head`, `wc`, `mkdir`, `env` and `sed` (and `socat`, `grep` and `sleep` for
a run with an allowlist), so it runs in any Debian-like image.
Single runs on the OCI tier, and on the Docker backend with a local engine, get the same agent
compiled (backends/agent/compiled.py): the same protocol, read in large reads, with the
program's stdin passed on through a pipe, and the stage and collect scripts' work done in that
one process (and a fork of it).
The host still believes nothing it cannot check: time, output size and memory (OOM) are
judged by the host and the engine, sizes and names in file records are checked again
(`parse_files`), and any bytes give a result, never an exception.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Sequence
from typing import TYPE_CHECKING

from hazmat.backends.inside import program

__all__ = [
    "AGENT_SCRIPT",
    "COLLECT_SCRIPT",
    "PROLOGUE",
    "RELAY_PORT",
    "STAGE_SCRIPT",
    "built_marker",
    "end_marker",
    "file_marker",
    "files_cap",
    "job_header",
    "parse_end",
]

if TYPE_CHECKING:
    from hazmat.backends.base import Program
    from hazmat.policy import Limits

PROTOCOL_VERSION = 7

# How both agents begin (this one and the session's, session_agent.py). The program's stderr
# is kept on fd 3; the agent's own fd 2 goes nowhere, so the shell's job messages ("Killed")
# never mix into the program's output. `drop` is what runs anything of the program's: its own
# uid, no capability at all, so it cannot read the agent's memory, signal it or write its
# files, and the nonce stays with the agent. `prepare` is the language's own setup before the
# job exists (Go seeds its build cache), run as the program.
PROLOGUE = program("prologue.sh")

RELAY_PORT = 3128  # the loopback port in the container where the allowlist proxy is reached
AGENT_SCRIPT = PROLOGUE + program(
    "agent.sh", RELAY_PORT=str(RELAY_PORT), RELAY_HEX=f"{RELAY_PORT:04X}"
)

# The part of the job that is the program's, run as its uid: the env and args, the input
# files, the build step and (without a runner) the program itself. Its own stderr goes nowhere
# (fd 3 is the program's), so the shell's job messages never reach the output.
STAGE_SCRIPT = program("stage.sh")

# The output files, read as the program's uid once none of its processes is left; each at most
# max_file_bytes, and all together at most max_total_bytes (names of one file count each).
COLLECT_SCRIPT = program("collect.sh")


def file_marker(nonce: str) -> bytes:
    """The line the agent prints between the program's stdout and the output files."""
    return f"--hazmat-files-{nonce}--\n".encode()


def built_marker(nonce: str) -> bytes:
    """What the agent prints once a build step has ended, before its exit status."""
    return f"--hazmat-built-{nonce}-- ".encode()


def end_marker(nonce: str) -> bytes:
    """What the agent prints before the exit status, once everything else is written."""
    return f"--hazmat-end-{nonce}-- ".encode()


_STATUS = re.compile(rb"[0-9]{1,3}")
_RECORD = re.compile(rb"(file|missing|too_large|over_total) ([0-9]{1,15}) ([^\n]+)")


def parse_end(tail: bytes | bytearray) -> int | None:
    """The exit status in the bytes after the end marker, once its line is complete; -1 for
    anything but one to three ASCII digits. Never raises, whatever the bytes."""
    line, newline, _ = bytes(tail).partition(b"\n")
    if not newline:
        return None
    return int(line) if _STATUS.fullmatch(line) else -1


def job_header(program: Program) -> bytes:
    """Everything of a job before the program's stdin (the format above)."""
    as_json, as_sh = _env_args(program)
    parts = [
        f"hazmat {PROTOCOL_VERSION} {len(program.wanted)} {program.max_file_bytes} "
        f"{program.nonce} {program.total_cap} {program.own_cap}\n".encode()
    ]
    parts.extend(name.encode() + b"\n" for name in program.wanted)
    parts.extend((f"{len(as_json)} {len(as_sh)}\n".encode(), as_json, as_sh))
    parts.append(f"{len(program.files)}\n".encode())
    for name, data in program.files.items():
        parts.append(f"{len(data)} ".encode() + name.encode() + b"\n")
        parts.append(data)
    return b"".join(parts)


def _env_args(program: Program) -> tuple[bytes, bytes]:
    """The env and args for a runner (JSON) and for the agent's shell (quoted here)."""
    if not program.env and not program.args and not program.displays:
        return b"", b""
    job: dict[str, object] = {"env": dict(program.env), "args": list(program.args)}
    if program.displays:
        job["displays"] = dict(program.displays)
    as_json = json.dumps(job)
    lines = [f"export {name}={shlex.quote(value)}" for name, value in program.env.items()]
    lines.append("set -- " + " ".join(shlex.quote(arg) for arg in program.args))
    return as_json.encode(), ("\n".join(lines) + "\n").encode()


def files_cap(limits: Limits, wanted: int, own: int = 0) -> int:
    """How many bytes of file records the host reads from a container at most: every file at
    its largest, but never more than the download's total (plus each record's head), and
    hazmat's own file (`own` bytes: the displays)."""
    mine = own + 4096 if own else 0
    return min(wanted * limits.max_file_bytes, limits.max_download_bytes) + wanted * 4096 + mine


def parse_files(
    blob: bytes | bytearray | None,
    want: Sequence[str],
    max_file_bytes: int,
    max_total_bytes: int,
    own_cap: int = 0,
) -> tuple[dict[str, bytes], list[str]]:
    """Read the agent's file records. Returns the files found and notes on the rest.

    The program can write these bytes (it runs in the container beside the agent), so nothing
    in them is believed beyond what the host checks: sizes are ASCII digits, names are ones
    the caller asked for (each once), no file over `max_file_bytes` is collected, and the files
    together stop at `max_total_bytes` (so hard links to one file cannot multiply what is
    sent), whatever the records say. A name that begins with "/" is hazmat's own (the runner's
    display file): capped by `own_cap`, not counted in the total, and not missed when absent.
    Any input gives a result, never an exception."""
    files: dict[str, bytes] = {}
    notes: list[str] = []
    if blob is None:
        asked = sum(1 for name in want if not name.startswith("/"))
        return files, [
            f"output files not collected: the program did not finish ({asked} asked)"
        ] if asked else []
    view = bytes(blob)
    wanted = {name.encode(): name for name in want}
    seen: set[str] = set()
    pos = total = 0
    while pos < len(view):
        end = view.find(b"\n", pos)
        match = _RECORD.fullmatch(view, pos, end) if end >= 0 else None
        name = wanted.get(match.group(3)) if match else None
        if match is None or name is None or name in seen:
            notes.append("output files section is malformed; files after this point dropped")
            break
        seen.add(name)
        kind, size = match.group(1), int(match.group(2))
        pos = end + 1
        own = name.startswith("/")
        what = "the displays were" if own else f"output file {name!r}"
        cap = own_cap if own else max_file_bytes
        if kind == b"file" and size > cap:
            notes.append(f"{what} not collected: {size} bytes is over the limit ({cap})")
            break  # its bytes follow and cannot be skipped safely past a lie
        if kind == b"file" and not own and total + size > max_total_bytes:
            notes.append(
                f"output file {name!r} not collected: the files would come to more than "
                f"{max_total_bytes} bytes together (max_download_bytes)"
            )
            break
        if kind == b"file" and pos + size <= len(view):
            files[name] = view[pos : pos + size]
            pos += size
            total += 0 if own else size
        elif kind == b"too_large":
            notes.append(f"{what} not collected: {size} bytes is over the limit")
        elif kind == b"over_total":
            notes.append(
                f"output file {name!r} not collected: the files would come to more than "
                f"{max_total_bytes} bytes together (max_download_bytes)"
            )
        elif kind == b"missing":
            if not own:
                notes.append(
                    f"output file {name!r} not collected: not a regular file in the working "
                    "directory"
                )
        else:
            notes.append("output files section is malformed; files after this point dropped")
            break
    return files, notes
