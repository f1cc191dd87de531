"""The session agent: the agent of a container kept for many calls (sessions.py).

It keeps the single-run agent's rules (backends/agent.py): it runs as root inside the container
with four capabilities, everything of the program's runs through `setpriv` as the session's
own uid with no capability, and only the agent reads each call's nonce, so only it can write
the markers the host believes. What differs is that it loops: each call is one job on the
attached stdin, and the stream stays open between calls::

    hazmat-session 3 <nwant> <max_file_bytes> <nonce> <size> <mode> <max_total_bytes> <own>\\n
    <name>\\n                                   one per output file the caller asked for (and
                                                the display file, capped by <own>: agent.py)
    and then <size> bytes, which the agent keeps in its job file (/tmp/.hazmat-session/job,
    root's, readable by the program) before anything runs, so the stream stays in step:
    <json_size> <sh_size>\\n<json><sh>          the env and args, as for a single run
    <nfiles>\\n
    <size> <name>\\n<size bytes>                one per input file (the source file first)
    <the program's stdin, to the end>

`mode` is `run` (unpack, build, run, collect) or `files` (unpack and collect only: uploads
and downloads); a bench's container (backends/bench.py) also takes `build` (unpack, build,
and archive the working directory and the build folder as the output file the host asks
for, .hazmat-build.tar) and `again` (a test: as the program's uid, empty every mount the
program can write and remove the System V IPC objects; unpack the test's files and the
build's archive; say so with the built marker and wait for the host's `go`, where the test's
clock starts; run, without building, under gVisor in namespaces of its own). A pause
(sessions.py) is mode `save`: Python's interpreter pickles what it can of its variables into
the working directory (.hazmat-variables), and the working directory is archived as the output
file
/tmp/.hazmat-save.tar; its resume, in a new container, is mode `restore`: the archive arrives
as the job's stdin and is unpacked into the working directory as the program's uid, and
Python's new interpreter loads the variables (each call's stdout is a one-line JSON report of which
variables were kept). A test's job is framed differently::

    <archive_size>\n<json_size> <sh_size>\n<json><sh><nfiles>\n<files as above>
    <stdin_size>\n<stdin><archive>

Keeping the job in a file costs one process (`head`) per call; the program's files are
unpacked from it as the program's uid (each process started in these containers costs about
20 ms, so Python's interpreter unpacks the job itself). The working directory and /tmp are
kept between calls (not between a bench's tests); every process the call started is killed
before its end marker (all but PID 1, the agent and, for Python, the interpreter kept between
calls; in a bench's container all but PID 1 and the agent, at once), so nothing of one call
runs into the next.

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
(backends/runners.py) as the session's uid, with the runner's code, the ready line sent to a
FIFO of the agent's (/tmp/.hazmat-session/ready) and the call's stdin to be read from the file
the unpack script writes. A run call, once unpacked and built, signals it, and the runner runs
the program as `node main.js` would. If it is not there or not ready (it died), the call runs
`node` as before.
"""

from __future__ import annotations

from hazmat.backends.agent import PROLOGUE, job_header
from hazmat.backends.base import Program
from hazmat.backends.runners import RUNNERS
from hazmat.backends.session_repl import REPL
from hazmat.backends.shell_session import shell_repl
from hazmat.backends.verify import WORKDIR
from hazmat.languages import Language

__all__ = [
    "SESSION_SCRIPT",
    "session_environment",
    "session_header",
    "unclean_marker",
]

SESSION_VERSION = 3
# A bench's test under gVisor: the program in user, IPC and network namespaces of its own, so
# that System V and POSIX IPC objects, abstract sockets and TCP's TIME_WAIT end with it (gVisor
# lets an unprivileged program make them; runc's seccomp profile does not, and there the agent
# resets or checks each instead)
ISOLATE = "unshare --user --map-current-user --ipc --net --"
BUILD = "/tmp/.hazmat-build"  # where Go and TypeScript builds go (languages.py)

SESSION_SCRIPT = (
    PROLOGUE
    + r"""
trap '' PIPE
umask 022
workdir=$HAZMAT_WORKDIR
build=$HAZMAT_BUILD
run=$HAZMAT_RUN
unpack=$HAZMAT_UNPACK_SCRIPT
stage=$HAZMAT_STAGE
collect=$HAZMAT_COLLECT
# a bench's build (mode build): the working directory and the build folder, for the host
archive='cd / && w=${1#/} && set -- "$w" && if [ -d tmp/.hazmat-build ]; then
    set -- "$w" tmp/.hazmat-build; fi && exec tar -cf "$w/.hazmat-build.tar" \
    --exclude="$w/.hazmat-build.tar" "$@"'
# a pause (mode save): the working directory, for the host to keep and send back on resume
# (mode restore: unpacked from the job as the program's uid, by the unpack script)
save='exec tar -cf /tmp/.hazmat-save.tar -C "$1" .'
setup=${HAZMAT_PREPARE:-}
repl=${HAZMAT_REPL:-}
replcode=${HAZMAT_REPL_CODE:-}
# JavaScript and TypeScript: the next call's node, started and waiting before the call
warmrun=${HAZMAT_SESSION_WARM:-}
runnercode=${HAZMAT_RUNNER:-}
heapmb=${HAZMAT_HEAP_MB:-}
replname=${HAZMAT_REPL_NAME:-interpreter}
# a bench's container (backends/bench.py): nothing of the agent's runs between calls, so every
# process but PID 1 and the agent is the program's; under gVisor each test runs in a user, IPC
# and network namespace of its own (`isolate`: `unshare ... --`), which end with its processes
bench=${HAZMAT_BENCH:-}
isolate=${HAZMAT_ISOLATE:-}
dirty=''
if [ -n "$bench" ] && ! setpriv $drop -- test -w "$workdir"; then
    die "the program cannot write $workdir: a bench needs it mode 1777 in the image \
(hazmat images build)"
fi
# root's folder (the program may read it, not change it): each call's job, and for Python
# the two FIFOs to the interpreter kept between calls
chan=/tmp/.hazmat-session
job=$chan/job
mkdir -m 0755 "$chan" || die "cannot make the session's folder"
if [ -n "$repl" ]; then
    mkfifo -m 0644 "$chan/go" && mkfifo -m 0622 "$chan/done" \
        || die "cannot make the interpreter's channels"
fi
prepare "$setup"
pid=''
start_repl() {
    setpriv $drop -- sh -c 'cd "$1" || exit 125; unset OLDPWD; exec 2>&3 3>&-; eval "$2"' \
        repl "$workdir" "$repl" "$replcode" </dev/null 2>&3 &
    pid=$!
    # the interpreter opens go, then done: these block until it has
    exec 6>"$chan/go" 5<"$chan/done"
}
if [ -n "$repl" ]; then start_repl; fi
# the next call's runner (backends/runners.py): started as the program now, so that a call
# need not wait for node; it says it is ready on a FIFO of the agent's, reads the call's
# stdin from the file the unpack script writes, and runs the call's program when signalled
warmpid=''
start_warm() {
    [ -n "$warmrun" ] || return 0
    rm -f "$chan/ready" && mkfifo -m 0622 "$chan/ready" || return 0
    setpriv $drop -- env HAZMAT_RUNNER="$runnercode" HAZMAT_HEAP_MB="$heapmb" \
        HAZMAT_READY_FD=4 HAZMAT_STDIN_FILE=/tmp/.hazmat-stdin \
        sh -c 'cd "$1" || exit 125; exec 2>&3 3>&- 4>"$2"; eval "$3"' \
        warm "$workdir" "$chan/ready" "$warmrun" </dev/null 2>&3 &
    warmpid=$!
    exec 7<"$chan/ready"  # blocks until the runner has opened it
}
# the warm runner, if it is there and ready: signalled, it runs the call; its status in rc
warm_call() {
    [ -n "$warmpid" ] || return 1
    if IFS= read -r ready <&7 && [ "$ready" = hazmat-ready ]; then
        exec 7<&-
        kill -USR2 "$warmpid" || { warmpid=''; return 1; }
        wait "$warmpid"
        rc=$?
        warmpid=''
        return 0
    fi
    exec 7<&-
    kill -9 "$warmpid"
    wait "$warmpid"
    warmpid=''
    return 1
}
# one step of the kept interpreter (run, files, save, load); its status in rc
repl_call() {
    [ -n "$pid" ] || start_repl
    if printf '%s\n' "$1" >&6 && IFS= read -r status <&5; then
        case $status in '' | *[!0-9]*) rc=1 ;; *) rc=$status ;; esac
    else
        kill -9 "$pid"
        wait "$pid"
        rc=$?
        pid=''
        exec 5<&- 6>&-
        printf '\nhazmat: the %s ended (status %s); %s\n' "$replname" "$rc" \
            'the next call starts a new one, without the variables' >&3
    fi
}
for name in $(env | sed -n 's/^\(HAZMAT_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$name"; done
unset OLDPWD
start_warm
# whether process $1 (whose stat says Z) still runs: a process whose first thread has exited
# shows Z while its other threads run on, and counts them (its thread count, the 18th field
# after its name, is more than 1); gVisor lists no task folder for it
alive() {
    zstat=''
    IFS= read -r zstat <"/proc/$1/stat" || return 1
    # shellcheck disable=SC2086 # the fields, split on purpose
    set -- ${zstat##*) }
    [ "${18:-1}" -gt 1 ]
}
# every process but PID 1, this one and the interpreter kept between calls (true zombies wait
# for their parent and are skipped; a zombie leader with a live thread is killed); until none
# is left, boundedly
sweep() {
    n=0
    while [ "$n" -lt 1000 ]; do
        left=''
        for p in /proc/[0-9]*; do
            p=${p#/proc/}
            case $p in 1 | "$$" | "$pid" | "$warmpid") continue ;; esac
            stat=''
            IFS= read -r stat <"/proc/$p/stat" || continue
            case ${stat##*) } in Z*) alive "$p" || continue ;; esac
            kill -9 "$p" && left=1
        done
        [ -n "$left" ] || return 0
        n=$((n + 1))
    done
}
# a bench: every process but PID 1 and this one, whatever its state or name, killed at once
# (kill -9 -1); then wait until the kernel has ended them all and PID 1 has reaped them. If
# one will not go, the container is not fit for another test (`dirty`)
end_all() {
    kill -9 -1
    n=0
    while kill -0 -1; do
        n=$((n + 1))
        [ "$n" -lt 100000 ] || return 1
    done
}
printf 'hazmat-ready\n'
while IFS=' ' read -r magic version nwant maxfile nonce size mode maxtotal maxown; do
    [ "$magic" = hazmat-session ] && [ "$version" = 3 ] || die "unknown job format"
    case $size in '' | *[!0-9]*) die "unknown job format" ;; esac
    wants='' callers='' owns=''
    i=0
    while [ "$i" -lt "$nwant" ]; do
        IFS= read -r name || die "truncated job"
        want "$name"
        i=$((i + 1))
    done
    # the rest of the job, whatever happens next, so the stream stays in step
    head -c "$size" >"$job" || die "cannot keep the job"
    rc=0 unclean=''
    if [ -n "$repl" ] && [ "$mode" != restore ]; then
        # the interpreter unpacks the job itself and (mode run) runs it; a pause saves its
        # variables into the working directory first (mode save)
        repl_call "$mode"
    elif [ "$mode" = again ] && [ -n "$dirty" ]; then
        rc=126 unclean=1  # a process of the last test would not end: this container is done
    elif [ "$mode" != save ]; then
        # a bench's test (mode again) starts from the state right after the build: the
        # unpack script empties every place the program may write first
        setpriv $drop -- sh -c "$unpack" unpack "$workdir" "$mode" "$isolate" <"$job" 2>&3
        rc=$?
        if [ "$rc" -eq 126 ] && [ "$mode" = again ]; then unclean=1; fi
        if [ "$rc" -eq 0 ] && [ "$mode" = again ]; then
            # the test is ready: the host starts its clock (and gives it a CPU) when it reads
            # this line, and says go
            printf -- '--hazmat-built-%s-- 0\n' "$nonce"
            IFS= read -r go || die "no go-ahead for the test"
            [ "$go" = go ] || die "no go-ahead for the test"
        fi
        if [ "$rc" -eq 0 ] && { [ "$mode" = run ] || [ "$mode" = build ]; } && [ -n "$build" ]
        then
            setpriv $drop -- sh -c 'cd "$1" || exit 125; exec 2>&3 3>&-; eval "$2"' \
                build "$workdir" "$build" </dev/null 2>&3
            rc=$?
            printf -- '--hazmat-built-%s-- %s\n' "$nonce" "$rc"
        fi
        if [ "$rc" -eq 0 ] && [ "$mode" = build ]; then
            # the build, for the host to keep and send with each test (mode again)
            setpriv $drop -- sh -c "$archive" archive "$workdir" </dev/null 2>&3
            rc=$?
        fi
        if [ "$rc" -eq 0 ] && [ "$mode" = run ] && warm_call; then
            :
        elif [ "$rc" -eq 0 ] && [ "$mode" = run ]; then
            setpriv $drop -- sh -c "$stage" stage "$workdir" "" "" "$run" run \
                </tmp/.hazmat-stdin 2>&3
            rc=$?
        elif [ "$rc" -eq 0 ] && [ "$mode" = again ]; then
            # shellcheck disable=SC2086 # isolate is a command line, split on purpose
            setpriv $drop -- $isolate sh -c "$stage" stage "$workdir" "" "" "$run" run \
                </tmp/.hazmat-stdin 2>&3
            rc=$?
        fi
    fi
    if [ -n "$unclean" ]; then
        # what the last test left cannot be removed here: the host moves this test to a new
        # container (only the agent knows the nonce: the program did not run)
        printf -- '--hazmat-unclean-%s--\n' "$nonce"
    fi
    if [ "$rc" -eq 0 ] && [ "$mode" = save ]; then
        setpriv $drop -- sh -c "$save" save "$workdir" </dev/null 2>&3
        rc=$?
    fi
    if [ "$rc" -eq 0 ] && [ "$mode" = restore ] && [ -n "$repl" ]; then repl_call load; fi
    : >"$job"
    if [ -z "$bench" ]; then sweep; elif ! end_all; then dirty=1; fi
    if [ "$nwant" -gt 0 ] && worth_collecting; then
        printf -- '--hazmat-files-%s--\n' "$nonce"
        printf '%s' "$wants" | setpriv $drop -- sh -c "$collect" collect "$workdir" "$maxfile" \
            "$maxtotal" "$maxown"
    fi
    printf -- '--hazmat-end-%s-- %s\n' "$nonce" "$rc"
    printf -- '--hazmat-end-%s-- %s\n' "$nonce" "$rc" >&3
    [ -n "$warmpid" ] || start_warm
done
exit 0
"""
)

# One call's job (from the agent's job file, on stdin), read as the program's uid: the env
# and args (both forms), the input files (the language's source files from earlier calls go
# first) and, to the end, the program's stdin, into /tmp/.hazmat-stdin. A bench's test (mode
# again) first empties everything the last test left where the program may write (status
# 126: it could not); its job then begins with the size of the build's archive, its stdin
# has a size of its own, and the archive comes last, unpacked around the test's files. Every
# process costs 20-50 ms under gVisor, so none starts that is not needed.
SESSION_UNPACK = r"""
exec 2>/dev/null
die() { printf 'hazmat-agent: %s\n' "$1" >&3; exit 125; }
cd "$1" || die "no working directory"
mode=${2:-run}
number() { case $1 in '' | *[!0-9]*) die "truncated job" ;; esac; }
if [ "$mode" = again ]; then
    # Every place the program may write, found afresh each time so that none is missed: each
    # mount it can write to. A writable place that is the program's own (its mode and
    # attributes would carry) or not a folder cannot be reset here: status 126, and the host
    # moves the test to a new container. A bench's working directory is root's, mode 1777.
    places=''
    while read -r _ mnt fstype opts _; do
        case $fstype in proc | sysfs | cgroup | cgroup2 | devpts) continue ;; esac
        case ",$opts," in *,rw,*) ;; *) continue ;; esac
        [ -w "$mnt" ] || continue
        [ -c "$mnt" ] && continue  # a masked path: /dev/null bound over it
        case $mnt in *\\*) exit 126 ;; esac  # a name /proc/mounts escaped: not one of ours
        { [ -d "$mnt" ] && [ ! -O "$mnt" ]; } || exit 126
        places="$places $mnt"
    done </proc/mounts
    # POSIX message queues live on /dev/mqueue under Linux; under gVisor (no such mount) each
    # test has an IPC namespace of its own ($3), which ends with its processes
    if [ -z "${3:-}" ]; then case "$places " in *" /dev/mqueue "*) ;; *) exit 126 ;; esac; fi
    wipe() {
        for p in $places; do
            find "$p" -xdev -mindepth 1 ! -path /tmp/.hazmat-session \
                ! -path '/tmp/.hazmat-session/*' -delete || return 1
        done
    }
    if ! wipe; then  # folders the program made unreadable or unwritable
        for p in $places; do
            find "$p" -xdev -mindepth 1 -maxdepth 1 ! -path /tmp/.hazmat-session ! -type l \
                -exec chmod -R u+rwx {} +
        done
        wipe || exit 126
    fi
    # Sockets end with their processes, but a closed TCP connection stays in TIME_WAIT for a
    # minute, its ports listed in /proc/net/tcp: under Linux any socket left in the network
    # namespace moves the next test to a new container (under gVisor, a namespace per test)
    if [ -z "${3:-}" ]; then
        for f in tcp tcp6 udp udp6 raw raw6 unix; do
            [ -r "/proc/net/$f" ] || continue
            { read -r _ && read -r _; } <"/proc/net/$f" && exit 126
        done
    fi
    # System V IPC objects outlive their processes. Linux lists them, and they are removed;
    # gVisor lists none (no /proc/sysvipc) but counts them: if any is left (the build's: a
    # test's are in its own namespace), this container cannot be made clean (status 126)
    if [ -r /proc/sysvipc/shm ]; then
        ipc=''
        for f in /proc/sysvipc/shm /proc/sysvipc/msg /proc/sysvipc/sem; do
            { read -r _ && read -r _; } <"$f" && ipc=1
        done
        if [ -n "$ipc" ]; then ipcrm --all || exit 126; fi
    else
        ipcs -u | {
            left=0
            while IFS= read -r line; do
                case $line in
                    *"segments allocated "* | *"allocated queues = "* | *"used arrays = "*)
                        [ "${line##* }" = 0 ] || left=1 ;;
                esac
            done
            exit "$left"
        } || exit 126
    fi
    IFS= read -r archive || die "truncated job"
    number "$archive"
else
    rm -f /tmp/.hazmat-job.json /tmp/.hazmat-job.sh /tmp/.hazmat-stdin @SOURCES@
fi
IFS=' ' read -r jsonsize shsize || die "truncated job"
number "$jsonsize"
number "$shsize"
for part in "$jsonsize /tmp/.hazmat-job.json" "$shsize /tmp/.hazmat-job.sh"; do
    size=${part%% *} path=${part#* }
    if [ "$size" -gt 0 ]; then head -c "$size" > "$path" || die "cannot write the job"
    else : > "$path" || die "cannot write the job"; fi
done
IFS= read -r nfiles || die "truncated job"
i=0
while [ "$i" -lt "$nfiles" ]; do
    IFS=' ' read -r size name || die "truncated job"
    case $name in */*) [ -d "./${name%/*}" ] || mkdir -p "./${name%/*}" \
        || die "cannot make a folder" ;; esac
    if [ -e "./$name" ] || [ -L "./$name" ]; then rm -f "./$name"; fi
    head -c "$size" > "./$name" || die "cannot write input file"
    i=$((i + 1))
done
if [ "$mode" = again ]; then
    IFS= read -r size || die "truncated job"
    number "$size"
    if [ "$size" -gt 0 ]; then head -c "$size" > /tmp/.hazmat-stdin || die "cannot write stdin"
    else : > /tmp/.hazmat-stdin || die "cannot write the program's stdin"; fi
    # the test's own files win over the build's
    # (existing folders, the working directory among them, are left as they are)
    if [ "$archive" -gt 0 ]; then tar -xf - -C / --skip-old-files || die "cannot unpack"; fi
elif [ "$mode" = restore ]; then  # a paused session's working directory, as it was saved
    tar -xf - --no-overwrite-dir || die "cannot unpack the paused session's files"
else
    cat > /tmp/.hazmat-stdin || die "cannot write the program's stdin"
fi
"""


def session_environment(
    lang: Language, heap_mb: int, bench: bool = False, isolate: bool = False
) -> dict[str, str]:
    """What the session agent needs beyond the single-run agent's environment: its unpack
    script, and how each language builds and runs when the container is kept (a fresh build
    folder per call; the source file the call named, not one left by an earlier call). A
    bench's container (backends/bench.py) runs every test as a fresh process: no interpreter
    or shell is kept between its calls."""
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
    unpack = SESSION_UNPACK.replace("@SOURCES@", sources)
    env = {
        "HAZMAT_UNPACK_SCRIPT": unpack,
        "HAZMAT_RUN": runs.get(lang.name, lang.run),
        "HAZMAT_BUILD": f"rm -rf {BUILD}; mkdir -p {BUILD}; {lang.build}" if lang.build else "",
        "HAZMAT_WARM": "",
    }
    if bench:
        env["HAZMAT_BENCH"] = "1"
        if isolate:  # gVisor: each test in user, IPC and network namespaces of its own
            env["HAZMAT_ISOLATE"] = ISOLATE
    elif lang.runner == "node":  # the next call's node, started ahead (SESSION_SCRIPT)
        env["HAZMAT_SESSION_WARM"] = f"{RUNNERS['node'][0]} {lang.entry}"
    elif lang.runner == "python":
        env |= {"HAZMAT_REPL": 'exec python3 -c "$3"', "HAZMAT_REPL_CODE": REPL}
    elif lang.name == "bash":  # a shell kept like a terminal's (shell_session.py)
        env |= {
            "HAZMAT_REPL": 'exec bash --norc --noprofile -c "$3" bash',
            "HAZMAT_REPL_CODE": shell_repl(unpack, WORKDIR),
            "HAZMAT_REPL_NAME": "shell",
        }
    return env


def session_header(program: Program, mode: str, archive: bytes = b"") -> bytes:
    """One call's job for the session agent, whole (its stdin included); a bench's test
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
    """All a bench's test prints when the agent could not clear what the last test left: the
    program did not run, and the host moves the test to a new container."""
    return f"--hazmat-unclean-{nonce}--\n".encode()
