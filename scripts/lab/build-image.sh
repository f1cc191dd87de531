#!/usr/bin/env bash
# Build the cgroup v2 lab's guest (docs/cgroup-v2-lab.md): Debian 13 from Debian packages,
# systemd as init, Docker with the systemd cgroup driver and runsc, a venv with hazmat's
# runtime dependencies, pytest and httpx (bounds read from pyproject.toml), in an ext4 disk image.
#
# Cached under $LAB_CACHE by a digest of this script's text and the dependency list: a second
# run with the same recipe builds nothing. Prints the paths of the image, kernel and initrd.
# Root and Debian's tools (debootstrap, e2fsprogs) needed; the chroot has the host's network
# while it is built, the guest never has one.
set -euo pipefail

say() { printf 'lab-build: %s\n' "$*" >&2; }
die() { printf 'lab-build: error: %s\n' "$*" >&2; exit 1; }

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
LAB_CACHE=${LAB_CACHE:-/var/cache/hazmat/lab}
SUITE=trixie
IMAGE_SIZE=6G
# What a boot needs (systemd, udev, kmod, the kernel and its initramfs), Docker with both OCI
# runtimes, dbus (Docker's and runc's systemd cgroup driver talk to systemd over it), Python.
# gcc and libc6-dev: the OCI tier builds its agent statically on the host it runs on. procps:
# kill(1), as every host has it (a test of the OCI tier signals a sandbox's process with it).
PACKAGES=(
    linux-image-amd64 initramfs-tools systemd-sysv udev kmod e2fsprogs dbus
    docker.io docker-cli runc runsc ca-certificates
    python3 python3-venv gcc libc6-dev procps
)
VENV=/opt/hazmat-venv

# hazmat's runtime dependencies and the dev extra's pytest and httpx, as pyproject.toml bounds them.
requirements() {
    python3 - "$REPO/pyproject.toml" <<'PY'
import re, sys, tomllib
project = tomllib.load(open(sys.argv[1], "rb"))["project"]
deps = list(project["dependencies"])
# pytest, and httpx: tests/server_helpers.py, which engine tests import, uses it
deps += [d for d in project["optional-dependencies"]["dev"] if re.split("[<>=!~ ]", d)[0] in ("pytest", "httpx")]
print("\n".join(deps))
PY
}

recipe_digest() {
    # what goes into the image: this script, the unit and runner it installs, the requirements
    { cat "$0" "$HERE/guest-job-runner.sh" "$HERE/hazmat-lab.service"
      printf '%s\n' "${PACKAGES[@]}"; requirements; } | sha256sum | cut -c1-24
}

mirror() {
    PYTHONPATH="$REPO/src" python3 -c \
        'from hazmat.images.debian import debian_mirror; print(debian_mirror() or "")' 2>/dev/null \
        || true
}

guest_config() {
    local root=$1
    echo hazmat-lab > "$root/etc/hostname"
    printf '/dev/vda / ext4 rw,errors=remount-ro 0 1\n' > "$root/etc/fstab"
    mkdir -p "$root/etc/docker"
    # Docker's default on systemd with cgroup v2 is the systemd driver; said here so that a
    # change of default cannot change what the lab tests. runsc as ensure-engine.sh registers it.
    cat > "$root/etc/docker/daemon.json" <<JSON
{
  "exec-opts": ["native.cgroupdriver=systemd"],
  "bridge": "none",
  "iptables": false,
  "ip6tables": false,
  "runtimes": {
    "runsc": {
      "path": "/usr/bin/runsc",
      "runtimeArgs": ["--network=none", "--platform=ptrace", "--host-uds=open"]
    }
  }
}
JSON
    install -m 0755 "$HERE/guest-job-runner.sh" "$root/usr/local/sbin/hazmat-lab-runner"
    install -m 0644 "$HERE/hazmat-lab.service" "$root/etc/systemd/system/hazmat-lab.service"
    ln -sf /etc/systemd/system/hazmat-lab.service \
        "$root/etc/systemd/system/multi-user.target.wants/hazmat-lab.service"
    # no login prompt on the console: its output is the job's
    ln -sf /dev/null "$root/etc/systemd/system/serial-getty@ttyS0.service"
    ln -sf /dev/null "$root/etc/systemd/system/getty@tty1.service"
    passwd -R "$root" -d root >/dev/null
}

guest_venv() {
    local root=$1 ca=""
    cp /etc/resolv.conf "$root/etc/resolv.conf"
    # the host's CA bundle, in case its network needs a CA of its own
    if [ -f /etc/ssl/certs/ca-certificates.crt ]; then
        cp /etc/ssl/certs/ca-certificates.crt "$root/tmp/host-ca.crt"; ca=/tmp/host-ca.crt
    fi
    requirements > "$root/tmp/requirements.txt"
    mount -t proc proc "$root/proc"
    chroot "$root" python3 -m venv "$VENV"
    # the host's CA bundle for pip (and truststore's OpenSSL), not the chroot's own
    env -u PIP_FIND_LINKS ${ca:+PIP_CERT=$ca SSL_CERT_FILE=$ca REQUESTS_CA_BUNDLE=$ca} \
        chroot "$root" "$VENV/bin/pip" install --quiet \
        --disable-pip-version-check -r /tmp/requirements.txt
    umount "$root/proc"
    rm -f "$root/tmp/requirements.txt" "$root/tmp/host-ca.crt"
    : > "$root/etc/resolv.conf"
}

# The seccomp base profile hazmat derives its own from, where scripts/ensure-engine.sh puts it:
# Debian 13's engine default, from golang-github-docker-docker-dev (that one file, the package
# not installed).
guest_seccomp_base() {
    local root=$1 in_deb=./usr/share/gocode/src/github.com/docker/docker/profiles/seccomp/default.json
    cp /etc/resolv.conf "$root/etc/resolv.conf"
    chroot "$root" apt-get update -qq
    chroot "$root" sh -c 'cd /tmp && chmod 777 . && apt-get download -qq golang-github-docker-docker-dev'
    mkdir -p "$root/var/lib/hazmat/seccomp"
    dpkg-deb --fsys-tarfile "$root"/tmp/golang-github-docker-docker-dev_*.deb \
        | tar -xO "$in_deb" > "$root/var/lib/hazmat/seccomp/docker-default.json"
    printf 'golang-github-docker-docker-dev %s from trixie\n' \
        "$(dpkg-deb -f "$root"/tmp/golang-github-docker-docker-dev_*.deb Version)" \
        > "$root/var/lib/hazmat/seccomp/docker-default.json.source"
    rm -f "$root"/tmp/golang-github-docker-docker-dev_*.deb
    rm -rf "$root"/var/lib/apt/lists/*
    : > "$root/etc/resolv.conf"
}

build() {
    local out=$1 work=$2 root mirror_uri
    root=$work/root
    mirror_uri=$(mirror)
    say "debootstrap $SUITE (minbase) from ${mirror_uri:-the default mirror of debootstrap}"
    local t0=$SECONDS
    debootstrap --variant=minbase --include="$(IFS=,; echo "${PACKAGES[*]}")" \
        "$SUITE" "$root" ${mirror_uri:+"$mirror_uri"} > "$work/debootstrap.log" 2>&1 \
        || { tail -20 "$work/debootstrap.log" >&2; die "debootstrap failed (log: $work/debootstrap.log)"; }
    say "debootstrap took $((SECONDS - t0)) s"
    t0=$SECONDS; guest_venv "$root"; say "venv took $((SECONDS - t0)) s"
    guest_seccomp_base "$root"
    guest_config "$root"
    cp "$(ls "$root"/boot/vmlinuz-* | tail -n 1)" "$work/vmlinuz"
    cp "$(ls "$root"/boot/initrd.img-* | tail -n 1)" "$work/initrd"
    chroot "$root" apt-get clean
    t0=$SECONDS
    mkfs.ext4 -q -F -L hazmat-lab -d "$root" "$work/disk.img" "$IMAGE_SIZE" >&2  # stdout: the path alone
    say "mkfs.ext4 -d took $((SECONDS - t0)) s"
    for f in disk.img vmlinuz initrd; do mv "$work/$f" "$out.$f"; done
}

WORK=""
cleanup() {
    [ -n "$WORK" ] || return 0
    umount -l "$WORK/root/proc" 2>/dev/null || true
    rm -rf "$WORK"
}

main() {
    [ "$(id -u)" = 0 ] || die "needs root (debootstrap, chroot)"
    command -v debootstrap >/dev/null || die "debootstrap missing (apt-get install debootstrap)"
    local digest out work
    digest=$(recipe_digest)
    out=$LAB_CACHE/guest-$digest
    mkdir -p "$LAB_CACHE"
    # one build at a time: a second run waits for the first and finds its guest (.ci/run
    # builds it in the background while its other phases run)
    exec 9>"$LAB_CACHE/.lock"
    flock 9
    if [ ! -f "$out.disk.img" ]; then
        work=$(mktemp -d "$LAB_CACHE/.build.XXXXXX")
        WORK=$work
        trap cleanup EXIT
        trap 'exit 143' TERM
        trap 'exit 130' INT
        build "$out" "$work"
        # an older recipe's files go
        find "$LAB_CACHE" -maxdepth 1 -name 'guest-*' ! -name "guest-$digest.*" -delete
    else
        say "cached: $out (recipe $digest)"
    fi
    printf '%s\n' "$out"
}

main "$@"
