"""The session agent: the agent of a container kept for many calls (sessions/). It is the
compiled agent's session mode (`hazmat-agent session`, backends/inside/agent_session.c) where
the compiled agent runs (backends/agent/compiled.py), else backends/inside/session.sh after the
single-run agent's prologue.sh; both use session_unpack.sh for what needs tar, find or ipcrm.

It keeps the single-run agent's rules (backends/agent/single.py): it runs as root inside the
container with four capabilities, everything of the program's runs as the session's own uid with
no capability (through `setpriv`, or the compiled agent's same steps), and only the agent reads
each call's nonce, so only it can write the markers the host believes. What differs is that it
loops: each call is one job on the attached stdin, and the stream stays open between calls::

    hazmat-session 5 <nwant> <max_file_bytes> <nonce> <size> <mode> <max_total_bytes> <own>\\n
    <name>\\n                                   one per output file the caller asked for (and
                                                the display file, capped by <own>: agent.py)
    and then <size> bytes, which the agent keeps in its job file (/tmp/.hazmat-session/job,
    root's, readable by the program) before anything runs, so the stream stays in step:
    <json_size> <sh_size>\\n<json><sh>          the env and args, as for a single run
    <nfiles>\\n
    <size> <name>\\n<size bytes>                one per input file (the source file first)
    <the program's stdin, to the end>

After each call's end marker the agent waits for the host's `next\\n` (sent once the host has
taken the call's last readings of CPU time and memory) before it does anything more: starting
the next call's runner, or a kept build's cleaning for its next test, is no part of the call.
While a call runs (outside a kept build's container) the host may also say `interrupt\\n`, when
the call's time is up or its caller cancelled it, and `kill\\n` when it has still not ended a
grace period later (`SessionSettings.interrupt_grace_s`). The agent reads the stream then too
(the compiled one polls it while it waits for the call; session.sh has a watcher, a subshell,
for it): on `interrupt` it signals the kept interpreter (a KeyboardInterrupt in
Python's cell, a return from Bash's script) and kills every other process of the call; on
`kill` the interpreter too. The call then ends as any other, and the session goes on.

`mode` is `run` (unpack, build, run, collect) or `files` (unpack and collect only: uploads
and downloads); a kept build's container (backends/kept/kept_build.py) also takes `build` (unpack,
build, and archive the working directory and the build folder as the output file the host asks
for, .hazmat-build.tar) and `again` (a test: as the program's uid, empty every mount the
program can write and remove the System V IPC objects; unpack the test's files and the
build's archive; say so with the built marker and wait for the host's `go`, where the test's
clock starts; run, without building, under gVisor in namespaces of its own). A pause
(sessions/) is mode `save`: Python's interpreter pickles what it can of its variables into
the working directory (.hazmat-variables), and the working directory is archived as the output
file
/tmp/.hazmat-save.tar; its resume, in a new container, is mode `restore`: the archive arrives
as the job's stdin and is unpacked into the working directory as the program's uid, and
Python's new interpreter loads the variables (each call's stdout is a one-line JSON report of which
variables were kept). A test's job is framed differently::

    <archive_size>\n<json_size> <sh_size>\n<json><sh><nfiles>\n<files as above>
    <stdin_size>\n<stdin><archive>

The job is kept in a file (session.sh: one process, `head`, per call); the program's files are
unpacked from it as the program's uid, by the compiled agent itself (with the program's uid and gid
as its effective ones) or by session_unpack.sh (each process started in these containers costs about
20 ms under gVisor, so Python's interpreter unpacks the job itself). The working directory and /tmp
are kept between calls (not between a kept build's tests); every process the call started is killed
before its end marker (all but PID 1, the agent and, for Python, the interpreter kept between calls;
in a kept build's container all but PID 1 and the agent, at once), so nothing of one call runs into
the next.

Python keeps its variables: the agent starts an interpreter (`REPL`, as the session's uid) at
container start and, for each call, writes the mode to a FIFO it holds open (/tmp/.hazmat-
session/go, root's); the interpreter unpacks the job file and runs main.py in the same
namespace every time, like a notebook cell (the value of a final expression is printed), and
writes the call's exit status to a second FIFO (done). If the interpreter dies (`os._exit`, the
memory limit), the agent sees the FIFO end, reports the status, and starts a new one on the
next call: the files stay, the variables are gone, and the program's stderr says so. The code
can only confuse its own session through these FIFOs: the markers still come from the agent.

JavaScript and TypeScript keep no state, but each call's node is started before the call: once
a call has ended (and its processes are gone) the agent starts the language's runner
(backends/agent/runners.py) as the session's uid, with the runner's code, the ready line sent to a
FIFO of the agent's (/tmp/.hazmat-session/ready) and the call's stdin to be read from the file
the unpack script writes. A run call, once unpacked and built, signals it, and the runner runs
the program as `node main.js` would. If it is not there or not ready (it died), the call runs
`node` as before.
"""

from __future__ import annotations

from collections.abc import Callable

from hazmat.backends.agent.runners import RUNNERS
from hazmat.backends.agent.session_repl import REPL
from hazmat.backends.agent.shell_session import shell_repl
from hazmat.backends.agent.single import PROLOGUE, job_header
from hazmat.backends.base import Program
from hazmat.backends.container.settings_check import WORKDIR
from hazmat.backends.inside import fill, program, read
from hazmat.languages import Language
from hazmat.languages.java import JAVA_RUN_FLAGS, JAVA_RUNNER_JAR
from hazmat.policy.build_flags import build_command

__all__ = [
    "NEXT",
    "SESSION_SCRIPT",
    "STOP_WORDS",
    "kept_interpreter",
    "session_environment",
    "session_header",
    "unclean_marker",
]

SESSION_VERSION = 5
NEXT = b"next\n"  # the host has taken a call's last readings: the agent may go on
# the host's words while a call runs: its time is up (the interpreter interrupted, the call's
# other processes killed), then it has not ended within the grace period (the interpreter too)
STOP_WORDS = (b"interrupt\n", b"kill\n")
# A kept build's test under gVisor: the program in user, IPC and network namespaces of its own, so
# that System V and POSIX IPC objects, abstract sockets and TCP's TIME_WAIT end with it (gVisor
# lets an unprivileged program make them; runc's seccomp profile does not, and there the agent
# resets or checks each instead)
ISOLATE = "unshare --user --map-current-user --ipc --net --"
BUILD = "/tmp/.hazmat-build"  # where Go and TypeScript builds go (languages/)
# A kept build's next Java test: a JVM with the run command's flags and classpath (the runner's
# jar after the build's classes), started before the test's job. A JVM's environment cannot be
# changed once it runs, so this runner is "plain" (HAZMAT_WARM_PLAIN): it is given no variable
# (fd 4 and the go FIFO are its arguments), and a test with an environment of its own runs
# with `java` as before. An image without the jar (a custom one) runs each test with `java`.
# The classes' folder is made first: the JVM takes a class path entry that is not a folder
# when it starts for a jar, and would never look in it once the test's build is unpacked.
JAVA_WARM = (
    f"[ -f {JAVA_RUNNER_JAR} ] && mkdir -p {BUILD}/classes && exec java {JAVA_RUN_FLAGS}"
    f" -cp {BUILD}/classes:{JAVA_RUNNER_JAR} HazmatRunner {BUILD} 4"
    " /tmp/.hazmat-session/start"
)
SESSION_SCRIPT = PROLOGUE + program("session.sh")

# hazmat's own interpreters a language's Repl may name (languages/: `Repl.hazmat`), each its
# code given the session's unpack script: Python's (session_repl.py) and Bash's shell
# (shell_session.py)
HAZMAT_REPLS: dict[str, Callable[[str], str]] = {
    "python": lambda unpack: REPL,
    "shell": lambda unpack: shell_repl(unpack, WORKDIR),
}


# One call's job (from the agent's job file, on stdin), read as the program's uid: the env
# and args (both forms), the input files (the language's source files from earlier calls go
# first) and, to the end, the program's stdin, into /tmp/.hazmat-stdin. Before a kept build's
# test (mode clean) it empties everything the last test left where the program may write
# (status 126: it could not); a test's job (mode again) then begins with the size of the
# build's archive, its stdin has a size of its own, and the archive comes last, unpacked around
# the test's files. Every process costs 20-50 ms under gVisor, so none starts that is not
# needed. A template: `session_environment` fills in the language's source files.
SESSION_UNPACK = read("session_unpack.sh")


def session_environment(
    lang: Language,
    heap_mb: int,
    kept_build: bool = False,
    isolate: bool = False,
    build_flags: tuple[str, ...] = (),
) -> dict[str, str]:
    """What the session agent needs beyond the single-run agent's environment: its unpack
    script, and how each language builds and runs when the container is kept (a fresh build
    folder per call; the source file the call named, not one left by an earlier call). A
    kept build's container (backends/kept/kept_build.py) runs every test as a fresh process: no
    interpreter or shell is kept between its calls, but a language with a runner has the next
    test's started (and waiting) before the test's job."""
    node = f"exec node --max-old-space-size={heap_mb}"
    runs = {
        "javascript": (
            f'f=main.js; for x in main.mjs main.cjs; do [ -f "$x" ] && f=$x; done; {node} "$f"'
        ),
        "typescript": (
            f'f={BUILD}/main.js; [ -f {BUILD}/main.mjs ] && f={BUILD}/main.mjs; {node} "$f"'
        ),
    }
    sources = " ".join(f"./{name}" for name in lang.source_names)
    unpack = fill(SESSION_UNPACK, SOURCES=sources)
    env = {
        "HAZMAT_UNPACK_SCRIPT": unpack,
        "HAZMAT_SOURCES": " ".join(lang.source_names),  # the compiled agent's unpack's
        "HAZMAT_RUN": runs.get(lang.name, lang.run),
        "HAZMAT_BUILD": (
            f"rm -rf {BUILD}; mkdir -p {BUILD}; {build_command(lang, build_flags)}"
            if lang.build
            else ""
        ),
        "HAZMAT_WARM": "",
    }
    if kept_build:
        env["HAZMAT_KEPT_BUILD"] = "1"
        if isolate:  # gVisor: each test in user, IPC and network namespaces of its own
            env["HAZMAT_ISOLATE"] = ISOLATE
        if lang.runner:  # each test's interpreter, started before its job (SESSION_SCRIPT)
            env["HAZMAT_SESSION_WARM"] = f"{RUNNERS[lang.runner][0]} {lang.entry}"
        elif lang.name == "java":  # each test's JVM, likewise (HazmatRunner.java)
            env |= {"HAZMAT_SESSION_WARM": JAVA_WARM, "HAZMAT_WARM_PLAIN": "1"}
    elif lang.runner == "node":  # the next call's node, started ahead (SESSION_SCRIPT)
        env["HAZMAT_SESSION_WARM"] = f"{RUNNERS['node'][0]} {lang.entry}"
    elif lang.repl:  # the interpreter the language keeps (languages/: Repl)
        own = HAZMAT_REPLS[lang.repl.hazmat](unpack) if lang.repl.hazmat else lang.repl.code
        env |= {
            "HAZMAT_REPL": lang.repl.command,
            "HAZMAT_REPL_CODE": own,
            "HAZMAT_REPL_NAME": lang.repl.name,
            "HAZMAT_REPL_SIGNAL": lang.repl.signal,
        }
    return env


def kept_interpreter(lang: Language) -> str | None:
    """What a session keeps of `lang` between calls, by the name the agent's notes give it
    (Python's interpreter, Bash's shell, a language's own Repl); None: nothing (each call is a
    new process)."""
    return lang.repl.name if lang.repl else None


def session_header(program: Program, mode: str, archive: bytes = b"") -> bytes:
    """One call's job for the session agent, whole (its stdin included); a kept build's test
    (mode `again`) carries the build's archive, which the host keeps."""
    body = job_header(program).split(b"\n", 1 + len(program.wanted))[-1]
    stdin = program.stdin
    if mode == "again":
        body = b"%d\n%s%d\n%s%s" % (len(archive), body, len(stdin), stdin, archive)
        stdin = b""
    first = (
        f"hazmat-session {SESSION_VERSION} {len(program.wanted)} {program.max_file_bytes} "
        f"{program.nonce} {len(body) + len(stdin)} {mode} {program.total_cap} "
        f"{program.own_cap}\n"
    ).encode()
    wants = b"".join(name.encode() + b"\n" for name in program.wanted)
    return first + wants + body + stdin


def unclean_marker(nonce: str) -> bytes:
    """All a kept build's test prints when the agent could not clear what the last test left: the
    program did not run, and the host moves the test to a new container."""
    return f"--hazmat-unclean-{nonce}--\n".encode()
