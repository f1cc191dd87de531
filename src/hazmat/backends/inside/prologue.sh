
set -u
exec 3>&2 2>/dev/null
die() { printf 'hazmat-agent: %s\n' "$1" >&3; exit 125; }
uid=${HAZMAT_UID:-}
case $uid in '' | 0 | *[!0-9]*) die "no uid for the program" ;; esac
command -v setpriv >/dev/null || die "the image has no setpriv (Debian's util-linux)"
drop="--reuid=$uid --regid=$uid --clear-groups --inh-caps=-all --bounding-set=-all"
# whether the files section is worth its processes (20-50 ms each under gVisor): a file the
# caller asked for, or one of hazmat's own (an absolute name: the displays) that is there,
# tested as root without reading it; `callers` and `owns` are set as the names are read
worth_collecting() {
    [ -n "$callers" ] && return 0
    for f in $owns; do { [ -e "$f" ] || [ -L "$f" ]; } && return 0; done
    return 1
}
# the call's output files (those asked for, when worth it), then its end with status `rc` on
# both streams: the engine forwards them independently, and the host reads until both end
finish() {
    if [ "$nwant" -gt 0 ] && worth_collecting; then
        printf -- '--hazmat-files-%s--\n' "$nonce"
        printf '%s' "$wants" | setpriv $drop -- sh -c "$collect" collect "$workdir" "$maxfile" \
            "$maxtotal" "$maxown"
    fi
    printf -- '--hazmat-end-%s-- %s\n' "$nonce" "$rc"
    printf -- '--hazmat-end-%s-- %s\n' "$nonce" "$rc" >&3
}
want() {
    wants="$wants$1
"
    case $1 in /*) owns="$owns $1" ;; *) callers=1 ;; esac
}
prepare() {
    [ -z "$1" ] && return 0
    setpriv $drop -- sh -c 'cd /tmp && eval "$1"' prepare "$1" </dev/null >/dev/null 2>&1
}
