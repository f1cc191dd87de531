"""The agent: a POSIX shell script that runs inside the container and receives the job on stdin.

Nothing of the job travels in argv or touches the image's filesystem: the host writes one
payload to the container's attached stdin and the agent unpacks it into the working directory
(a tmpfs). The payload is::

    hazmat 1 <nfiles> <nwant> <max_file_bytes> <nonce>\\n
    <size> <name>\\n<size bytes>          one per input file (the source file first)
    <name>\\n                             one per output file the caller asked for
    <the program's stdin, until EOF>

The agent runs the language's build step (if any) and the program with the rest of its stdin,
then kills every process the program left behind (`kill -9 -1`: all processes of this uid
but itself and PID 1), and, if output files were asked for, writes after the program's stdout
a marker carrying the nonce followed by one record per file::

    \\n--hazmat-files-<nonce>--\\n
    file <size> <name>\\n<size bytes>  |  missing 0 <name>\\n  |  too_large <size> <name>\\n

Its exit status is the program's (128 + signal when killed by one). It needs only `sh`, `head`,
`wc` and `cat`, so it runs in any Debian-like image, not just hazmat's own. The program runs as
the same user as the agent, so nothing the agent reports beyond what the engine also sees is
trusted: exit status, OOM and timeouts come from the engine.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

__all__ = ["AGENT_SCRIPT", "Payload", "file_marker"]

PROTOCOL_VERSION = 1

AGENT_SCRIPT = r"""
set -u
# The program's stderr is kept on fd 3; the agent's own fd 2 goes nowhere, so the shell's
# job messages ("Killed") never mix into the program's output.
exec 3>&2 2>/dev/null
die() { printf 'hazmat-agent: %s\n' "$1" >&3; exit 125; }
IFS=' ' read -r magic version nfiles nwant maxfile nonce || die "no job on stdin"
[ "$magic" = hazmat ] && [ "$version" = 1 ] || die "unknown job format"
cd "$HAZMAT_WORKDIR" || die "no working directory"
build=$HAZMAT_BUILD
run=$HAZMAT_RUN
unset HAZMAT_BUILD HAZMAT_RUN HAZMAT_WORKDIR OLDPWD
i=0
while [ "$i" -lt "$nfiles" ]; do
    IFS=' ' read -r size name || die "truncated job"
    head -c "$size" > "./$name" || die "cannot write input file"
    i=$((i + 1))
done
wants=''
i=0
while [ "$i" -lt "$nwant" ]; do
    IFS= read -r name || die "truncated job"
    wants="$wants$name
"
    i=$((i + 1))
done
if [ -n "$build" ]; then
    sh -c 'exec 2>&3 3>&-; eval "$1"' build "$build" </dev/null
    rc=$?
    if [ "$rc" -ne 0 ]; then
        exit "$rc"
    fi
fi
# The child moves its own stderr back: dash applies a command's redirections in the parent
# and prints the job's status ("Killed") while they are still in effect.
sh -c 'exec 2>&3 3>&-; eval "$1"' run "$run"
rc=$?
kill -9 -1 2>/dev/null
if [ "$nwant" -gt 0 ]; then
    printf '\n--hazmat-files-%s--\n' "$nonce"
    printf '%s' "$wants" | while IFS= read -r name; do
        if [ -f "./$name" ] && [ ! -L "./$name" ]; then
            size=$(wc -c < "./$name")
            if [ "$size" -gt "$maxfile" ]; then
                printf 'too_large %s %s\n' "$size" "$name"
            else
                printf 'file %s %s\n' "$size" "$name"
                head -c "$size" "./$name"
            fi
        else
            printf 'missing 0 %s\n' "$name"
        fi
    done
fi
exit "$rc"
"""


def file_marker(nonce: str) -> bytes:
    """The line the agent prints between the program's stdout and the output files."""
    return f"\n--hazmat-files-{nonce}--\n".encode()


@dataclass(frozen=True)
class Payload:
    """One job for the agent: input files (source first), wanted output files, stdin."""

    files: Mapping[str, bytes]
    want: Sequence[str]
    stdin: bytes
    max_file_bytes: int
    nonce: str = ""

    def __post_init__(self) -> None:
        if not self.nonce:
            object.__setattr__(self, "nonce", secrets.token_hex(16))

    def header(self) -> bytes:
        """Everything before the program's stdin."""
        parts = [
            f"hazmat {PROTOCOL_VERSION} {len(self.files)} {len(self.want)} "
            f"{self.max_file_bytes} {self.nonce}\n".encode()
        ]
        for name, data in self.files.items():
            parts.append(f"{len(data)} ".encode() + name.encode() + b"\n")
            parts.append(data)
        parts.extend(name.encode() + b"\n" for name in self.want)
        return b"".join(parts)


def parse_files(
    blob: bytes | bytearray | None, want: Sequence[str]
) -> tuple[dict[str, bytes], list[str]]:
    """Read the agent's file records. Returns the files found and notes on the rest."""
    files: dict[str, bytes] = {}
    notes: list[str] = []
    if blob is None:
        return files, [
            f"output files not collected: the program did not finish ({len(want)} asked)"
        ]
    view = bytes(blob)
    pos = 0
    while pos < len(view):
        end = view.find(b"\n", pos)
        parts = view[pos:end].decode("utf-8", "replace").split(" ", 2) if end >= 0 else []
        if len(parts) != 3 or not parts[1].isdigit() or parts[2] not in want:
            notes.append("output files section is malformed; files after this point dropped")
            break
        kind, size, name = parts[0], int(parts[1]), parts[2]
        pos = end + 1
        if kind == "file" and pos + size <= len(view):
            files[name] = view[pos : pos + size]
            pos += size
        elif kind == "too_large":
            notes.append(f"output file {name!r} not collected: {size} bytes is over the limit")
        elif kind == "missing":
            notes.append(
                f"output file {name!r} not collected: not a regular file in the working directory"
            )
        else:
            notes.append("output files section is malformed; files after this point dropped")
            break
    return files, notes
