
exec 2>/dev/null
die() { printf 'hazmat-agent: %s\n' "$1" >&3; exit 125; }
cd "$1" || die "no working directory"
unset OLDPWD
runner=$2 build=$3 run=$4 phase=$5
if [ "$phase" = unpack ]; then
    IFS=' ' read -r jsonsize shsize || die "truncated job"
    # the program's env and args: JSON for a runner, shell for the run command (not both)
    if [ -n "$runner" ]; then json=/tmp/.hazmat-job.json shell=/dev/null
    else json=/dev/null shell=/tmp/.hazmat-job.sh; fi
    if [ "$jsonsize" -gt 0 ]; then head -c "$jsonsize" > "$json" || die "cannot write the job"; fi
    if [ "$shsize" -gt 0 ]; then head -c "$shsize" > "$shell" || die "cannot write the job"; fi
    IFS= read -r nfiles || die "truncated job"
    i=0
    while [ "$i" -lt "$nfiles" ]; do
        IFS=' ' read -r size name || die "truncated job"
        case $name in */*) mkdir -p "./${name%/*}" || die "cannot make a folder" ;; esac
        head -c "$size" > "./$name" || die "cannot write input file"
        i=$((i + 1))
    done
    if [ -n "$build" ]; then
        sh -c 'exec 2>&3 3>&-; eval "$1"' build "$build" </dev/null || exit
        exit 0
    fi
    [ -z "$runner" ] || exit 0
fi
# the program's env and args (quoted by the host) apply to it alone
exec sh -c 'exec 2>&3 3>&-; run=$1; shift; set --
    if [ -f /tmp/.hazmat-job.sh ]; then . /tmp/.hazmat-job.sh; rm -f /tmp/.hazmat-job.sh; fi
    eval "$run \"\$@\""' run "$run"
