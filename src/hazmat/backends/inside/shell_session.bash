
exec 7</tmp/.hazmat-session/go 8>/tmp/.hazmat-session/done
for __hazmat_name in $(compgen -e); do
    case $__hazmat_name in HAZMAT_*) unset "$__hazmat_name" ;; esac
done
unset __hazmat_name OLDPWD
__hazmat_unpack=@UNPACK@
__hazmat_workdir=@WORKDIR@
# the agent's interrupt (the call ran out of time, or was cancelled): the call's script returns;
# between calls it is nothing (a read it cuts short is read again)
trap 'return 130 2>/dev/null' USR1
while :; do
    IFS= read -r __hazmat_mode <&7
    __hazmat_status=$?
    [ "$__hazmat_status" -gt 128 ] && continue
    [ "$__hazmat_status" -eq 0 ] || break
    sh -c "$__hazmat_unpack" unpack "$__hazmat_workdir" </tmp/.hazmat-session/job 3>&2
    __hazmat_status=$?
    if [ "$__hazmat_status" -eq 0 ] && [ "$__hazmat_mode" = run ]; then
        set --
        . /tmp/.hazmat-job.sh
        rm -f /tmp/.hazmat-job.sh /tmp/.hazmat-job.json
        . "$__hazmat_workdir/main.sh" </tmp/.hazmat-stdin
        __hazmat_status=$?
        set +e +u +o pipefail
    fi
    printf '%s\n' "$__hazmat_status" >&8
done
exit 0
