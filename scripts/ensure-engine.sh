#!/usr/bin/env bash
# Make sure a Docker engine that hazmat can use is answering, starting one if needed.
#
# Idempotent. When `docker info` already works it only checks that the gVisor runtime is
# registered. Otherwise, as root on Debian, it installs docker.io, runsc and debootstrap (one
# `apt-get update` first), registers runsc as a runtime with `--network=none`, and starts dockerd
# in the background with `--bridge=none --iptables=false`, so the engine creates no network of
# its own. Waits until the engine answers. Logs to /var/log/hazmat-dockerd.log.
# With --fresh DIR it starts an engine of its own in DIR instead (below, used by CI).
set -euo pipefail

say() { printf 'engine: %s\n' "$*"; }
die() { printf 'engine: error: %s\n' "$*" >&2; exit 1; }

DAEMON_JSON=/etc/docker/daemon.json
LOG=/var/log/hazmat-dockerd.log
WAIT_SECONDS=${HAZMAT_ENGINE_WAIT:-90}

engine_up() { timeout 10 docker info >/dev/null 2>&1; }

need_packages() {
    local missing=()
    command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
    command -v runsc >/dev/null 2>&1 || missing+=(runsc)
    command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
    command -v docker >/dev/null 2>&1 || missing+=(docker.io)
    # The node image's TypeScript transpiler (esbuild) comes from the npm registry.
    command -v npm >/dev/null 2>&1 || missing+=(npm)
    # The cluster's tests start a Redis of their own (tests/cluster); none runs as a service.
    command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
    # The OCI tier's compiled agent is built on this host (statically: gcc and glibc's libc.a).
    command -v gcc >/dev/null 2>&1 || missing+=(gcc)
    dpkg -s libc6-dev >/dev/null 2>&1 || missing+=(libc6-dev)
    # `make cluster-test` puts a worker in a network namespace of its own (ip netns, veth).
    command -v ip >/dev/null 2>&1 || missing+=(iproute2)
    printf '%s\n' "${missing[@]}" | sort -u | grep -v '^$' || true
}

install_packages() {
    local pkgs
    pkgs=$(need_packages | tr '\n' ' ')
    [ -z "${pkgs// }" ] && { say "docker.io, runsc, debootstrap, npm, redis-server, iproute2 and gcc are installed"; return; }
    [ "$(id -u)" = 0 ] || die "missing packages ($pkgs) and not root: install them, or run as root"
    command -v apt-get >/dev/null 2>&1 || die "missing packages ($pkgs) and no apt-get: this script knows only Debian"
    say "installing $pkgs(apt-get update first)"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $pkgs >/dev/null
    say "installed $pkgs"
}

# gVisor: no network of its own (it refuses to start otherwise) and the ptrace platform (KVM
# hangs on these machines; systrap measured no faster warm and slower cold). Not --oci-seccomp:
# runsc (2022 and 2024 alike) then breaks pthread_create.
# --host-uds=open lets a sandbox connect to a host unix socket bind-mounted into it: hazmat
# mounts one only into runs with a network allowlist (the allowlist proxy, src/hazmat/egress);
# runsc can create none and reach no other. Both runsc versions here know the flag.
RUNSC_ARGS='"--network=none", "--platform=ptrace", "--host-uds=open"'

# Debian 13's runsc (2024-07-29, a static binary) is preferred to Debian 12's (2022): it passes
# the suite, runs a warm Python run in 44 ms instead of 50 and a warm Go build and run in 2.3 s
# instead of 2.8, and answers io_uring with ENOSYS. It is unpacked here, never installed with
# apt; Debian 12's package stays the fallback.
RUNSC_NEW=/var/lib/hazmat/runsc/runsc

install_runsc_from_trixie() {
    if [ -x "$RUNSC_NEW" ] && "$RUNSC_NEW" --version >/dev/null 2>&1; then
        say "runsc present ($("$RUNSC_NEW" --version | head -n 1))"
        return
    fi
    local tmp
    tmp=$(mktemp -d)
    if fetch_from_trixie runsc "$tmp" && dpkg-deb -x "$tmp"/runsc_*.deb "$tmp/root" \
            && "$tmp/root/usr/bin/runsc" --version >/dev/null 2>&1; then
        mkdir -p "$(dirname "$RUNSC_NEW")"
        install -m 0755 "$tmp/root/usr/bin/runsc" "$RUNSC_NEW.tmp"
        mv "$RUNSC_NEW.tmp" "$RUNSC_NEW"
        say "installed Debian 13's runsc as $RUNSC_NEW ($("$RUNSC_NEW" --version | head -n 1))"
    else
        say "Debian 13's runsc is out of reach; using Debian 12's"
    fi
    rm -rf "$tmp"
}

desired_daemon_json() {
    cat <<JSON
{
  "runtimes": {
    "runsc": {
      "path": "$1",
      "runtimeArgs": [$RUNSC_ARGS]
    }
  }
}
JSON
}

# Returns 0 when it changed the file (dockerd must then reload), 1 otherwise.
register_runsc() {
    local runsc desired
    if [ -x "$RUNSC_NEW" ]; then runsc=$RUNSC_NEW; else runsc=$(command -v runsc || true); fi
    [ -n "$runsc" ] || { say "runsc not installed: the gVisor tier will be unavailable"; return 1; }
    desired=$(desired_daemon_json "$runsc")
    if [ -f "$DAEMON_JSON" ] && [ "$(cat "$DAEMON_JSON")" = "$desired" ]; then
        say "runsc registered in $DAEMON_JSON"
        return 1
    fi
    # Only replace an empty file or one an earlier version of this script wrote.
    if [ -s "$DAEMON_JSON" ] && [ "$(tr -d ' \n\t' < "$DAEMON_JSON")" != "{}" ] \
        && ! grep -q -- '"--platform=ptrace"' "$DAEMON_JSON"; then
        say "warning: $DAEMON_JSON has settings of its own; not touching it, runsc not registered"
        return 1
    fi
    mkdir -p "$(dirname "$DAEMON_JSON")"
    printf '%s\n' "$desired" > "$DAEMON_JSON"
    say "registered runsc ($RUNSC_ARGS) in $DAEMON_JSON"
    return 0
}

start_dockerd() {
    [ "$(id -u)" = 0 ] || die "the Docker engine is not answering and we are not root: start it yourself"
    if pgrep -x dockerd >/dev/null 2>&1; then
        say "dockerd is running but not answering yet; waiting"
        return
    fi
    # A pid file left by a killed dockerd makes the next one refuse to start.
    for pidfile in /var/run/docker.pid /run/docker/containerd/containerd.pid; do
        if [ -f "$pidfile" ] && ! kill -0 "$(cat "$pidfile" 2>/dev/null)" 2>/dev/null; then
            rm -f "$pidfile"
        fi
    done
    say "starting dockerd --bridge=none --iptables=false (log: $LOG)"
    PATH=$(engine_path) setsid nohup dockerd --bridge=none --iptables=false --ip6tables=false \
        >>"$LOG" 2>&1 < /dev/null &
}

wait_for_engine() {
    local waited=0
    until engine_up; do
        if [ "$waited" -ge "$WAIT_SECONDS" ]; then
            tail -n 20 "$LOG" >&2 2>/dev/null || true
            die "dockerd did not answer within ${WAIT_SECONDS}s (see $LOG)"
        fi
        sleep 1
        waited=$((waited + 1))
    done
    say "engine answering after ${waited}s"
}

# Packages of Debian 13 (trixie) or unstable fetched, never installed through apt, on a Debian
# 12 host: a private apt state per suite (its own sources list, lists and cache) on the host's
# own Debian mirror.

host_mirror() {
    [ -n "${HAZMAT_DEBIAN_MIRROR:-}" ] && { printf '%s\n' "$HAZMAT_DEBIAN_MIRROR"; return; }
    { grep -hs '^URIs:' /etc/apt/sources.list.d/*.sources | awk '{print $2}'
      grep -hs '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list \
          | sed -E 's/^deb +(\[[^]]*\] +)?//' | awk '{print $1}'
    } | grep '/debian' | grep -v security | head -n 1
}

suite_apt() {  # suite_apt SUITE apt-get-arguments...
    local state=/var/lib/hazmat/apt-$1
    shift
    apt-get -qq -o Dir::Etc::SourceList="$state/sources.list" \
        -o Dir::Etc::SourceParts=/dev/null -o Dir::State::Lists="$state/lists" \
        -o Dir::Cache="$state/cache" -o Debug::NoLocking=1 "$@"
}

# fetch_from SUITE PACKAGE DIR: the package's .deb from Debian's SUITE into DIR (0 on success).
fetch_from() {
    local mirror state=/var/lib/hazmat/apt-$1
    [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 || return 1
    mirror=$(host_mirror)
    [ -n "$mirror" ] || return 1
    mkdir -p "$state/lists/partial" "$state/cache/archives/partial"
    printf 'deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] %s %s main\n' \
        "$mirror" "$1" > "$state/sources.list"
    if [ -z "$(ls "$state/lists" 2>/dev/null | grep -v partial)" ]; then
        suite_apt "$1" update >/dev/null 2>&1 || return 1
    fi
    chmod 777 "$3"
    (cd "$3" && suite_apt "$1" download "$2") >/dev/null 2>&1 && return 0
    suite_apt "$1" update >/dev/null 2>&1 && (cd "$3" && suite_apt "$1" download "$2") >/dev/null 2>&1
}

fetch_from_trixie() { fetch_from trixie "$@"; }

# runc with the fixes for CVE-2025-31133, CVE-2025-52565 and CVE-2025-52881 (upstream 1.2.8 /
# 1.3.3): Debian 12's 1.1.5+ds1-1+deb12u1 has none, Debian 13's security update
# 1.1.15+ds1-2+deb13u1 the first two (its changelog), Debian unstable's 1.3.6+ds1-1 all three.
# That one needs glibc 2.38 (Debian 12 has 2.36): it is unpacked here with Debian 13's libc6
# and libseccomp2 beside it, its ELF interpreter and library path pointed at them (patchelf,
# from the host's own suite, unpacked too); nothing is installed through apt and the host's
# runc is left as it is. The engine this script starts finds it first on its PATH; the OCI
# tier looks here first (backends/oci/driver.py); `hazmat doctor` says which runc each uses.
RUNC_DIR=/var/lib/hazmat/runc
RUNC_NEW=$RUNC_DIR/bin/runc

install_runc_from_unstable() {
    if [ -x "$RUNC_NEW" ] && "$RUNC_NEW" --version >/dev/null 2>&1; then
        say "runc present ($("$RUNC_NEW" --version | head -n 1), $RUNC_NEW)"
        return
    fi
    local tmp
    tmp=$(mktemp -d)
    if unpack_runc "$tmp" && "$tmp/new/bin/runc" --version >/dev/null 2>&1 && place_runc "$tmp"; then
        say "installed Debian unstable's runc as $RUNC_NEW ($("$RUNC_NEW" --version | head -n 1))"
    else
        say "warning: could not install Debian unstable's runc (needs root, apt-get and the Debian mirror); the engine keeps $(command -v runc || echo none) (hazmat doctor warns about it)"
    fi
    rm -rf "$tmp"
}

# place_runc DIR: the runc unpacked in DIR/new moved to $RUNC_DIR, its interpreter's and
# libraries' absolute paths pointed at the final place; nothing is left of a failed attempt.
place_runc() {
    local tmp=$1
    mkdir -p "$(dirname "$RUNC_DIR")" && rm -rf "$RUNC_DIR.tmp" && mv "$tmp/new" "$RUNC_DIR.tmp" \
        && "$tmp/patchelf" --set-interpreter "$RUNC_DIR/lib/ld-linux-x86-64.so.2" \
            --set-rpath "$RUNC_DIR/lib" "$RUNC_DIR.tmp/bin/runc" \
        && rm -rf "$RUNC_DIR" && mv "$RUNC_DIR.tmp" "$RUNC_DIR" \
        && "$RUNC_NEW" --version >/dev/null 2>&1 && return 0
    rm -rf "$RUNC_DIR.tmp" "$RUNC_DIR"
    return 1
}

# unpack_runc DIR: DIR/new/bin/runc (unstable's) and DIR/new/lib (Debian 13's loader, libc and
# libseccomp), patched to use them from DIR/new; DIR/patchelf for the final paths.
unpack_runc() {
    local tmp=$1 deb
    mkdir -p "$tmp/debs" "$tmp/x" "$tmp/new/bin" "$tmp/new/lib"
    fetch_from unstable runc "$tmp/debs" || return 1
    fetch_from trixie libc6 "$tmp/debs" && fetch_from trixie libseccomp2 "$tmp/debs" || return 1
    (cd "$tmp/debs" && chmod 777 . && apt-get download -qq patchelf) >/dev/null 2>&1 \
        || { apt-get update -qq && (cd "$tmp/debs" && apt-get download -qq patchelf) >/dev/null 2>&1; } \
        || return 1
    for deb in "$tmp"/debs/*.deb; do dpkg-deb -x "$deb" "$tmp/x" || return 1; done
    install -m 0755 "$tmp/x/usr/bin/patchelf" "$tmp/patchelf"
    install -m 0755 "$tmp/x/usr/sbin/runc" "$tmp/new/bin/runc"
    local lib
    for lib in ld-linux-x86-64.so.2 libc.so.6 libseccomp.so.2; do
        cp -L "$tmp/x/usr/lib/x86_64-linux-gnu/$lib" "$tmp/new/lib/$lib" || return 1
    done
    "$tmp/patchelf" --set-interpreter "$tmp/new/lib/ld-linux-x86-64.so.2" \
        --set-rpath "$tmp/new/lib" "$tmp/new/bin/runc"
}

# An engine that was running already keeps the runc it started with: say so (never restarted).
note_engine_runc() {
    local running wanted
    [ -x "$RUNC_NEW" ] || return 0
    running=$(docker info --format '{{.RuncCommit.ID}}' 2>/dev/null || true)
    wanted=$("$RUNC_NEW" --version 2>/dev/null | sed -n 's/^commit: //p')
    [ "$running" = "$wanted" ] && return 0
    say "note: this engine runs runc ${running:-of unknown version}, not $RUNC_NEW ($wanted): it uses that one once this script starts it (hazmat doctor warns meanwhile)"
}

# The PATH dockerd starts with: hazmat's runc first, where it is installed.
engine_path() {
    if [ -x "$RUNC_NEW" ]; then printf '%s:%s\n' "$(dirname "$RUNC_NEW")" "$PATH"; else printf '%s\n' "$PATH"; fi
}

SECCOMP_BASE=/var/lib/hazmat/seccomp/docker-default.json
SECCOMP_IN_DEB=./usr/share/gocode/src/github.com/docker/docker/profiles/seccomp/default.json

# hazmat derives its seccomp profile from a current upstream default: the one of Debian 13's
# engine (moby 26.1: no io_uring, clone3 answered with ENOSYS), which Debian ships in
# golang-github-docker-docker-dev. Only that one file is extracted; the package is not
# installed. Without Debian 13's package, the installed engine's own version is used.
# `$SECCOMP_BASE.source` says where the file came from.
install_seccomp_base() {
    if [ -s "$SECCOMP_BASE" ] && grep -qs trixie "$SECCOMP_BASE.source"; then
        say "seccomp base profile present ($(cat "$SECCOMP_BASE.source"))"
        return
    fi
    if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
        [ -s "$SECCOMP_BASE" ] && { say "seccomp base profile present ($SECCOMP_BASE)"; return; }
        say "warning: no $SECCOMP_BASE and cannot fetch it (needs root and apt-get); ptrace stays allowed"
        return
    fi
    local tmp version source
    tmp=$(mktemp -d)
    if fetch_from_trixie golang-github-docker-docker-dev "$tmp"; then
        source="trixie"
    else
        version=$(dpkg-query -W -f='${Version}' docker.io 2>/dev/null || true)
        say "Debian 13's profile is out of reach; using the installed engine's (${version:-candidate})"
        if ! (cd "$tmp" && chmod 777 . && { apt-get download -qq "golang-github-docker-docker-dev=$version" 2>/dev/null \
                || apt-get download -qq golang-github-docker-docker-dev; }) >/dev/null 2>&1; then
            apt-get update -qq
            (cd "$tmp" && apt-get download -qq golang-github-docker-docker-dev) >/dev/null 2>&1 \
                || { say "warning: could not download the seccomp profile; ptrace stays allowed"; rm -rf "$tmp"; return; }
        fi
        source="the installed engine's suite"
    fi
    mkdir -p "$(dirname "$SECCOMP_BASE")"
    dpkg-deb --fsys-tarfile "$tmp"/*.deb | tar -xO "$SECCOMP_IN_DEB" > "$SECCOMP_BASE.tmp"
    mv "$SECCOMP_BASE.tmp" "$SECCOMP_BASE"
    printf 'golang-github-docker-docker-dev %s from %s\n' \
        "$(dpkg-deb -f "$tmp"/*.deb Version)" "$source" > "$SECCOMP_BASE.source"
    rm -rf "$tmp"
    say "installed $SECCOMP_BASE ($(cat "$SECCOMP_BASE.source"))"
}

# --- an engine of its own, with nothing left over (CI, make test-fresh) -----------------------
# `--fresh DIR` starts a dockerd whose data root, exec root, socket, pid file and settings all
# live in DIR (runsc registered in DIR/daemon.json, not /etc/docker), so no image, container or
# cache of the machine's own engine can satisfy a test; it prints the DOCKER_HOST to use.
# `--remove DIR` stops it, unmounts what it left and deletes DIR.
fresh_engine() {
    local dir=${1%/} runsc
    mkdir -p "$dir/exec"
    if [ -x "$RUNSC_NEW" ]; then runsc=$RUNSC_NEW; else runsc=$(command -v runsc || true); fi
    if [ -n "$runsc" ]; then desired_daemon_json "$runsc" > "$dir/daemon.json"; else echo '{}' > "$dir/daemon.json"; fi
    DOCKER_HOST="unix://$dir/docker.sock"
    export DOCKER_HOST
    LOG="$dir/dockerd.log"
    say "starting a fresh dockerd in $dir (--bridge=none --iptables=false; log: $LOG)"
    PATH=$(engine_path) setsid nohup dockerd --bridge=none --iptables=false --ip6tables=false \
        --data-root="$dir/data" --exec-root="$dir/exec" --pidfile="$dir/dockerd.pid" \
        --host="$DOCKER_HOST" --config-file="$dir/daemon.json" \
        >>"$LOG" 2>&1 < /dev/null &
    wait_for_engine
    docker info --format '{{json .Runtimes}}' | grep -q runsc \
        && say "runtimes: runc, runsc" || say "runtimes: runc only"
    printf 'DOCKER_HOST=%s\n' "$DOCKER_HOST"
}

remove_engine() {
    local dir=${1%/} pid waited=0
    [ -d "$dir" ] || return 0
    # only a folder --fresh made: never anything else someone passed by mistake
    [ -f "$dir/daemon.json" ] && [ -d "$dir/exec" ] \
        || die "$dir is not an engine folder made by --fresh; not removing it"
    pid=$(cat "$dir/dockerd.pid" 2>/dev/null || true)
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid"
        while kill -0 "$pid" 2>/dev/null && [ "$waited" -lt 60 ]; do sleep 1; waited=$((waited + 1)); done
        kill -0 "$pid" 2>/dev/null && { say "dockerd $pid still running after 60s: killing it"; kill -KILL "$pid"; }
    fi
    # anything else that lives in the folder: its containerd and shims if they outlived it, and
    # engines started beside it with their data in it (the cluster test's, if interrupted)
    pkill -TERM -f -- "$dir/" 2>/dev/null || true
    waited=0
    while pgrep -f -- "$dir/" >/dev/null 2>&1 && [ "$waited" -lt 30 ]; do sleep 1; waited=$((waited + 1)); done
    pkill -KILL -f -- "$dir/" 2>/dev/null || true
    findmnt -rn -o TARGET | { grep -F -- "$dir/" || true; } | sort -r | while read -r target; do
        umount -l "$target" 2>/dev/null || true
    done
    rm -rf --one-file-system -- "$dir"
    say "removed the engine in $dir"
}

prepare() {
    if [ -n "$(need_packages)" ]; then
        install_packages
    fi
    install_seccomp_base
    install_runsc_from_trixie
    install_runc_from_unstable
}

main() {
    case "${1:-}" in
        --fresh) [ -n "${2:-}" ] || die "usage: $0 --fresh DIR"; prepare; fresh_engine "$2"; return ;;
        --remove) [ -n "${2:-}" ] || die "usage: $0 --remove DIR"; remove_engine "$2"; return ;;
        "") ;;
        *) die "usage: $0 [--fresh DIR | --remove DIR]" ;;
    esac
    if [ -n "$(need_packages)" ]; then
        if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
            install_packages
        elif engine_up; then
            say "warning: missing $(need_packages | tr '\n' ' ')- building images will not work"
        else
            install_packages  # explains why it cannot
        fi
    fi
    install_seccomp_base
    install_runsc_from_trixie
    install_runc_from_unstable
    local changed=0
    register_runsc && changed=1
    if engine_up; then
        # (not an engine of DOCKER_HOST's, such as CI's own: its settings are its own file)
        if [ "$changed" = 1 ] && [ -z "${DOCKER_HOST:-}" ] && pgrep -x dockerd >/dev/null 2>&1; then
            say "reloading dockerd so it sees the runtime settings"
            kill -HUP "$(pgrep -x dockerd | head -n 1)"
            sleep 1
        fi
        say "Docker engine answering ($(docker version --format '{{.Server.Version}}' 2>/dev/null || echo unknown version))"
        if ! docker info --format '{{json .Runtimes}}' 2>/dev/null | grep -q runsc; then
            say "note: runsc is not registered with this engine; the gVisor tier is unavailable"
        fi
        note_engine_runc
        return
    fi
    start_dockerd
    wait_for_engine
    if docker info --format '{{json .Runtimes}}' 2>/dev/null | grep -q runsc; then
        say "runtimes: runc, runsc"
    else
        say "runtimes: runc only"
    fi
}

main "$@"
