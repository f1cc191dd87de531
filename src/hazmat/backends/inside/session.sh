
trap '' PIPE
umask 022
workdir=$HAZMAT_WORKDIR
build=$HAZMAT_BUILD
run=$HAZMAT_RUN
unpack=$HAZMAT_UNPACK_SCRIPT
stage=$HAZMAT_STAGE
collect=$HAZMAT_COLLECT
# a kept build's build (mode build): the working directory and the build folder, for the host
archive='cd / && w=${1#/} && set -- "$w" && if [ -d tmp/.hazmat-build ]; then
    set -- "$w" tmp/.hazmat-build; fi && exec tar -cf "$w/.hazmat-build.tar" \
    --exclude="$w/.hazmat-build.tar" "$@"'
# a pause or a fork (mode save): the working directory, for the host to keep and send back
# (mode restore: unpacked from the job as the program's uid, by the unpack script); the
# variables the interpreter saved into it are removed once archived (a fork's source goes on)
save='tar -cf /tmp/.hazmat-save.tar -C "$1" . && exec rm -f -- "$1/.hazmat-variables"'
setup=${HAZMAT_PREPARE:-}
repl=${HAZMAT_REPL:-}
replcode=${HAZMAT_REPL_CODE:-}
# JavaScript and TypeScript: the next call's node, started and waiting before the call; in a
# kept build's container, every language with a runner (Python, JavaScript, TypeScript, Ruby)
warmrun=${HAZMAT_SESSION_WARM:-}
# a runner that takes nothing from the environment (Java's: a JVM's cannot be changed for the
# program), goes on a line on the FIFO start, and is not used for a job with variables
warmplain=${HAZMAT_WARM_PLAIN:-}
runnercode=${HAZMAT_RUNNER:-}
heapmb=${HAZMAT_HEAP_MB:-}
replname=${HAZMAT_REPL_NAME:-interpreter}
# how the kept interpreter is interrupted when a call runs out of time: Python's takes SIGINT
# (a KeyboardInterrupt in the cell), Bash's SIGUSR1 (its trap returns from the call's script),
# a language's own as its Repl says; each ignores it between calls
replsignal=${HAZMAT_REPL_SIGNAL:-INT}
# a kept build's container (backends/kept/kept_build.py): between calls nothing runs but PID 1,
# the agent and the next test's runner, started after the last test's processes were all
# ended and its places emptied; under gVisor each test runs in a user, IPC and network
# namespace of its own (`isolate`: `unshare ... --`), which end with its processes
kept_build=${HAZMAT_KEPT_BUILD:-}
isolate=${HAZMAT_ISOLATE:-}
dirty=''
if [ -n "$kept_build" ] && ! setpriv $drop -- test -w "$workdir"; then
    die "the program cannot write $workdir: a kept build needs it mode 1777 in the image \
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
# the next call's runner (backends/agent/runners.py): started as the program now, so that a call
# need not wait for the interpreter; it says it is ready on a FIFO of the agent's, reads the
# call's stdin from the file the unpack script writes, and runs the call's program when
# signalled (in a kept build's container, in the test's own namespaces under gVisor)
warmpid='' warmready=''
start_warm() {
    [ -n "$warmrun" ] || return 0
    rm -f "$chan/ready" "$chan/start" && mkfifo -m 0622 "$chan/ready" || return 0
    if [ -n "$warmplain" ]; then mkfifo -m 0666 "$chan/start" || return 0; fi
    # the runner's variables exported in the background subshell, which then becomes it (a
    # process fewer than `env`); a kept build's test reads its stdin from the file its job's
    # stdin is written into (truncated and written in place, session_unpack.sh): made now
    # and opened as fd 0
    (
        if [ -z "$warmplain" ]; then
            export HAZMAT_RUNNER="$runnercode" HAZMAT_HEAP_MB="$heapmb" HAZMAT_READY_FD=4 \
                HAZMAT_STDIN_FILE=/tmp/.hazmat-stdin
        fi
        # shellcheck disable=SC2086 # isolate is a command line, split on purpose
        exec setpriv $drop -- $isolate sh -c 'cd "$1" || exit 125
            if [ -n "$4" ]; then : >/tmp/.hazmat-stdin && exec </tmp/.hazmat-stdin || exit 125
            fi
            exec 2>&3 3>&- 4>"$2"; eval "$3"' \
            warm "$workdir" "$chan/ready" "$warmrun" "$kept_build"
    ) </dev/null 2>&3 &
    warmpid=$!
    warmready=''
    exec 7<"$chan/ready"  # blocks until the runner has opened it
}
# whether the warm runner is there and has said it is ready (waiting for it if it is still
# starting); a runner that ends or says anything else is gone
warm_wait() {
    [ -n "$warmpid" ] || return 1
    [ -n "$warmready" ] && return 0
    if IFS= read -r ready <&7 && [ "$ready" = hazmat-ready ]; then
        exec 7<&-
        warmready=1
        return 0
    fi
    exec 7<&-
    kill -9 "$warmpid"
    wait "$warmpid"
    warmpid=''
    return 1
}
# the warm runner, if it is there and ready: signalled, it runs the call; its status in rc
warm_call() {
    warm_wait || return 1
    warmready=''
    if [ -n "$warmplain" ]; then
        # read and write: the open does not wait, nor hang if the runner has died
        printf 'go\n' 1<>"$chan/start" || { warmpid=''; return 1; }
    else
        kill -USR2 "$warmpid" || { warmpid=''; return 1; }
    fi
    wait "$warmpid"
    rc=$?
    warmpid=''
    return 0
}
# a kept build's next test: once the last test's processes are gone, every place the program
# may write is emptied (as the program's uid: the unpack script's mode clean) before anything
# of the next test starts, its runner included; if that fails the container is done (dirty)
cleaned=''
clean_for_next() {
    if setpriv $drop -- sh -c "$unpack" unpack "$workdir" clean "$isolate" </dev/null 2>&3
    then cleaned=1
    else dirty=1
    fi
}
# a kept build's test (mode again): the places emptied and its runner started (both done
# ahead, after the last test, unless this is the container's first), its files unpacked once
# the runner is ready (nothing of the job is there while it starts), then the built marker:
# the host starts the test's clock (and gives it a CPU) when it reads it, and says go. The
# test is the runner, signalled, or without one the run command in a fresh process
run_again() {
    [ -n "$cleaned" ] || clean_for_next
    cleaned=''
    if [ -n "$dirty" ]; then rc=126 unclean=1; return; fi
    [ -n "$warmpid" ] || start_warm
    warm_wait || :
    setpriv $drop -- sh -c "$unpack" unpack "$workdir" again "$isolate" <"$job" 2>&3
    rc=$?
    [ "$rc" -eq 0 ] || return
    if [ -n "$warmplain" ] && [ -n "$warmpid" ]; then
        # a test with variables of its own (exported first in the job's shell form): the
        # plain runner cannot take them, so it goes, before the test's clock starts
        vars=''
        IFS= read -r vars </tmp/.hazmat-job.sh || :
        case $vars in 'export '*) kill -9 "$warmpid"; wait "$warmpid"; warmpid='' ;; esac
    fi
    printf -- '--hazmat-built-%s-- 0\n' "$nonce"
    IFS= read -r go || die "no go-ahead for the test"
    [ "$go" = go ] || die "no go-ahead for the test"
    warm_call && return
    # shellcheck disable=SC2086 # isolate is a command line, split on purpose
    setpriv $drop -- $isolate sh -c "$stage" stage "$workdir" "" "" "$run" run \
        </tmp/.hazmat-stdin 2>&3
    rc=$?
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
[ -n "$kept_build" ] || start_warm  # a kept build's, once its build is done (run_again)
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
# every process but PID 1, this one and those named (the interpreter kept between calls, the
# next call's runner, the watcher), true zombies skipped (they wait for their parent; a zombie
# leader with a live thread is killed); until none is left, boundedly. The watcher's
# (`guarded`) stops once the call's own processes have ended (the phase file says done): what
# the agent starts after that, the output files' collection, is not the call's
guarded=''
sweep() {
    n=0
    while [ "$n" -lt 1000 ]; do
        if [ -n "$guarded" ]; then
            IFS= read -r phase <"$chan/phase"
            [ "$phase" = run ] || return 0
        fi
        left=''
        for p in /proc/[0-9]*; do
            p=${p#/proc/}
            case $p in 1 | "$$" | "${1:-}" | "${2:-}" | "${3:-}") continue ;; esac
            stat=''
            IFS= read -r stat <"/proc/$p/stat" || continue
            case ${stat##*) } in Z*) alive "$p" || continue ;; esac
            kill -9 "$p" 2>/dev/null && left=1
        done
        [ -n "$left" ] || return 0
        n=$((n + 1))
    done
}
# a kept build: every process but PID 1 and this one, whatever its state or name, killed at once
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
# The watcher (not in a kept build's container): while a call runs, the host's words come on
# the stream, and only the watcher reads it then (the agent waits for the call). The host says
# `interrupt` once the call's time is up (or its caller cancelled it): the kept interpreter is
# signalled ($replsignal), every other process of the call is killed, and the session goes
# on; `kill` once the call has still not ended a grace period later: the interpreter is killed
# too (the next call starts a new one, without the variables); `next` once it has read the
# call's end and its last readings (the watcher tells the agent, which goes on to the next job).
# The agent says `call <the interpreter's pid>` on the FIFO call when a call starts, and writes
# `done` into the file phase once the call's own processes have ended: an interrupt that comes
# after that (it crossed the call's end) kills nothing, not even the output files' collection.
# A subshell of the agent, root's like it, that starts no process; its FIFOs are root's alone.
watcher=''
watch_calls() {
    guarded=1
    exec 9<>"$chan/call"
    IFS=' ' read -r me _ </proc/self/stat
    while IFS=' ' read -r word interp <&9; do
        [ "$word" = call ] || break
        while :; do
            IFS= read -r line || { printf 'eof\n' >"$chan/said"; exit 0; }
            case $line in
            next) break ;;
            interrupt | kill)
                IFS= read -r phase <"$chan/phase"
                [ "$phase" = run ] || continue
                if [ "$line" = kill ]; then
                    sweep "$me"
                else
                    [ -z "$interp" ] || kill -s "$replsignal" "$interp" 2>/dev/null
                    sweep "$me" "$interp"
                fi
                ;;
            *) break 2 ;;
            esac
        done
        printf 'next\n' >"$chan/said"
    done
    printf 'unknown\n' >"$chan/said"
}
if [ -z "$kept_build" ]; then
    mkfifo -m 0600 "$chan/call" && mkfifo -m 0600 "$chan/said" \
        && printf 'done\n' >"$chan/phase" || die "cannot make the watcher's channels"
    # the stream as the watcher's stdin: a background list's would be /dev/null
    exec 8<&0
    watch_calls <&8 &
    watcher=$!
    exec 8<&-
fi
printf 'hazmat-ready\n'
while IFS=' ' read -r magic version nwant maxfile nonce size mode maxtotal maxown; do
    [ "$magic" = hazmat-session ] && [ "$version" = 5 ] || die "unknown job format"
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
    if [ -n "$watcher" ]; then
        if [ -n "$repl" ] && [ -z "$pid" ]; then start_repl; fi
        printf 'run\n' >"$chan/phase"
        printf 'call %s\n' "$pid" >"$chan/call"
    fi
    if [ -n "$repl" ] && [ "$mode" != restore ]; then
        # the interpreter unpacks the job itself and (mode run) runs it; a pause saves its
        # variables into the working directory first (mode save)
        repl_call "$mode"
    elif [ "$mode" = again ]; then
        # a kept build's test starts from the state right after the build (a process of the
        # last test that would not end, or a place that could not be emptied: `dirty`, and
        # this container is done)
        run_again
    elif [ "$mode" != save ]; then
        setpriv $drop -- sh -c "$unpack" unpack "$workdir" "$mode" "$isolate" <"$job" 2>&3
        rc=$?
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
    if [ -z "$kept_build" ]; then
        sweep "$pid" "$warmpid" "$watcher"
        printf 'done\n' >"$chan/phase"
    else
        end_all || dirty=1
        warmpid='' warmready=''  # ended with the rest
        exec 7<&-
    fi
    finish
    # the host says next once it has taken the call's last readings (its CPU time and peak
    # memory), which what follows must not add to
    if [ -n "$watcher" ]; then
        IFS= read -r next <"$chan/said" || next=''
        [ "$next" != eof ] || exit 0
    else
        IFS= read -r next || exit 0
    fi
    [ "$next" = next ] || die "unknown job format"
    if [ "$mode" = save ]; then  # its archive, taken by the host: the session may go on (a fork)
        setpriv $drop -- rm -f /tmp/.hazmat-save.tar </dev/null
    fi
    if [ -z "$kept_build" ]; then
        [ -n "$warmpid" ] || start_warm
    elif [ "$mode" = again ] && [ -z "$dirty" ]; then
        # the next test's places emptied and its runner started now, before its job
        clean_for_next
        [ -n "$dirty" ] || start_warm
    fi
done
exit 0
