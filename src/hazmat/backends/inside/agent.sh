
workdir=$HAZMAT_WORKDIR
build=$HAZMAT_BUILD
run=$HAZMAT_RUN
warm=$HAZMAT_WARM
stage=$HAZMAT_STAGE
collect=$HAZMAT_COLLECT
setup=${HAZMAT_PREPARE:-}
egress=${HAZMAT_EGRESS:-}
unset HAZMAT_UID HAZMAT_WORKDIR HAZMAT_BUILD HAZMAT_RUN HAZMAT_WARM HAZMAT_STAGE HAZMAT_COLLECT \
    HAZMAT_PREPARE HAZMAT_EGRESS
unset OLDPWD
prepare "$setup"
# a run with an allowlist: its proxy's unix socket, relayed to the loopback port the
# program's HTTPS_PROXY names; ready once the kernel lists the port as listening
if [ -n "$egress" ]; then
    command -v socat >/dev/null || die "the image has no socat: rebuild it (hazmat images build)"
    setpriv $drop -- socat TCP-LISTEN:@RELAY_PORT@,bind=127.0.0.1,reuseaddr,fork \
        "UNIX-CONNECT:$egress" </dev/null >/dev/null 2>&1 &
    i=0
    until grep -q ' 0100007F:@RELAY_HEX@ 00000000:0000 0A' /proc/net/tcp; do
        i=$((i + 1))
        [ "$i" -le 500 ] || die "the network relay did not start"
        sleep 0.01
    done
fi
runner=''
if [ -n "$warm" ]; then
    # the runner unpacks the input files itself unless a build step needs them first
    if [ -z "$build" ]; then HAZMAT_UNPACK=1; else HAZMAT_UNPACK=0; fi
    export HAZMAT_UNPACK
    # A background job's stdin is /dev/null unless redirected: hand it the real one on fd 4.
    exec 4<&0
    setpriv $drop -- sh -c 'cd "$1" || exit 125; unset OLDPWD; exec 2>&3 3>&- 4<&-; eval "$2"' \
        warm "$workdir" "$warm" <&4 2>&3 &
    runner=$!
    exec 4<&-
else
    printf 'hazmat-ready\n'
fi
# Nothing of hazmat's reaches the program: the runner (started above with its own copy) clears
# its environment itself; the agent drops every HAZMAT_ variable before the job arrives.
for name in $(env | sed -n 's/^\(HAZMAT_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$name"; done
IFS=' ' read -r magic version nwant maxfile nonce maxtotal maxown || die "no job on stdin"
[ "$magic" = hazmat ] && [ "$version" = 7 ] || die "unknown job format"
wants='' callers='' owns=''
i=0
while [ "$i" -lt "$nwant" ]; do
    IFS= read -r name || die "truncated job"
    want "$name"
    i=$((i + 1))
done
rc=0
if [ -z "$runner" ] || [ -n "$build" ]; then
    # the rest of the job is unpacked, built and (without a runner) run as the program's uid
    setpriv $drop -- sh -c "$stage" stage "$workdir" "$runner" "$build" "$run" unpack 2>&3
    rc=$?
    if [ -n "$build" ]; then
        # the host's compile budget ends here, and the program's own time limit starts; the
        # host sets the program's memory limit, then sends `go` and the program's stdin
        printf -- '--hazmat-built-%s-- %s\n' "$nonce" "$rc"
        if [ "$rc" -eq 0 ]; then
            IFS= read -r go || die "no go-ahead after the build"
            [ "$go" = go ] || die "no go-ahead after the build"
        fi
        if [ "$rc" -eq 0 ] && [ -z "$runner" ]; then
            setpriv $drop -- sh -c "$stage" stage "$workdir" "" "" "$run" run 2>&3
            rc=$?
        fi
    fi
fi
if [ -n "$runner" ] && [ "$rc" -eq 0 ]; then
    kill -USR2 "$runner" || die "the runner is gone"
    wait "$runner"
    rc=$?
fi
# every process but this one and PID 1: all of them the program's; then wait (boundedly)
# until the kernel has ended them and PID 1 has reaped them, so none outlives the result
kill -9 -1
i=0
while kill -0 -1 && [ "$i" -lt 10000 ]; do i=$((i + 1)); done
finish
# Stay, stopped, until the host removes the container: its cgroup, and the figures the host
# reads from it (refused forks, peak memory, CPU time), must outlive the run.
kill -STOP $$
exit "$rc"
