
exec 2>/dev/null
die() { printf 'hazmat-agent: %s\n' "$1" >&3; exit 125; }
cd "$1" || die "no working directory"
mode=${2:-run}
number() { case $1 in '' | *[!0-9]*) die "truncated job" ;; esac; }
if [ "$mode" = clean ]; then
    # Before a kept build's test (session.sh's clean_for_next), every place the program may
    # write, found afresh each time so that none is missed: each mount it can write to. A
    # writable place that is the program's own (its mode and attributes would carry) or not a
    # folder cannot be reset here: status 126, and the host moves the test to a new
    # container. A kept build's working directory is root's, mode 1777.
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
    # one find for them all (a process costs 20-50 ms under gVisor); -xdev keeps each start
    # point to its own file system
    wipe() {
        [ -n "$places" ] || return 0  # (find with no start point would search ".")
        # shellcheck disable=SC2086 # the places, split on purpose (no name has a space)
        find $places -xdev -mindepth 1 ! -path /tmp/.hazmat-session \
            ! -path '/tmp/.hazmat-session/*' -delete
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
    exit 0
elif [ "$mode" = again ]; then  # a test, in the places mode clean emptied
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
