#!/usr/bin/env bash
# Boot the cgroup v2 lab (docs/cgroup-v2-lab.md): the guest built by build-image.sh (cached),
# a second disk carrying hazmat's wheel, its tests, a `docker save` of the images the lab uses
# and the job (guest-job.sh), under QEMU's software emulation (these machines' /dev/kvm cannot
# boot a stock Debian kernel). The guest runs the job at boot, writes its results to the second
# disk and powers off; they are copied to $LAB_OUT. A deadline ($LAB_TIMEOUT s) ends a guest
# that hangs. Exit status: the job's (1 when it left none), 124 on the deadline.
#
#   LAB_SUBSET   the promises checked: `full` (default: every one the lab checks, python and gcc
#                loaded) or `ci` (what .ci/run checks in its budget: python alone)
#   LAB_IMAGES   images (or languages) the lab loads, as `hazmat images build --lang` names them
#                (default: the subset's)
#   LAB_TESTS    pytest arguments run in the guest (default: the subset's)
#   LAB_DRIVER   Docker's cgroup driver in the guest: systemd (default) or cgroupfs
#   LAB_SMP      QEMU's vCPUs (default 2)
#
# `run-lab.sh --tools` installs the host's tools (QEMU, debootstrap, e2fsprogs) and stops.
set -euo pipefail

say() { printf 'lab: %s\n' "$*" >&2; }
die() { printf 'lab: error: %s\n' "$*" >&2; exit 1; }

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
VENV=${VENV:-$REPO/.venv}
LAB_CACHE=${LAB_CACHE:-/var/cache/hazmat/lab}
LAB_OUT=${LAB_OUT:-/tmp/hazmat-lab}
LAB_TIMEOUT=${LAB_TIMEOUT:-1800}
LAB_SUBSET=${LAB_SUBSET:-full}
# The subsets, as pytest arguments (shell words) run with every tier and runtime cell
# (HAZMAT_TEST_MATRIX=full), then the job's own checks (guest-job.sh: doctor's lines, no cgroup
# or container left). `ci`: a CPU-time verdict and a grader's CPU and wall time (Docker tier,
# runc and runsc), its verdicts at --jobs 1 and 4 (runc: runsc's cell costs 95 s under TCG),
# peak memory and CPU time from the host, an OOM kill seen through the cgroup, a sandbox's
# memory cgroup outliving it (OCI tier, runc and runsc: the OOM count of a gVisor sandbox the
# OOM killer ends as a whole), the pids limit (OCI tier, runc: under runsc it is gVisor's own
# count, which rests on no host cgroup, and its cell costs 90 s under TCG), the OCI tier's
# prerequisites, `auto`
# and hazmat's own cgroups (no engine), a session's call past its memory under runsc ended by
# the host's watch, not the session (memory.high set). `full` adds the other cells and the C programs: peak
# memory per test case of a kept build near the limit, a tmpfs filled past the memory limit,
# a run without the engine, the idle backstop and every process's CPU time counted.
SUBSET_CI='tests/execution/test_pool.py tests/execution/test_cpu_clock.py
    tests/execution/test_grading.py tests/backends/oci/test_oci_parts.py
    tests/execution/test_oci.py tests/execution/test_abuse.py tests/execution/test_sessions.py
    -k "((peak_memory or oom_kill) and cold) or (do_not_depend_on_jobs and cold and runc)
        or spins_is_stopped or graders_tests or prerequisites or auto_is or cgroup_v2
        or controllers_cannot or memory_cgroup or interpreter_past_the_memory_limit
        or (fork_bomb_is_contained_by_the_pids and not cold and not pool and not runsc)"'
SUBSET_FULL='tests/execution/test_pool.py tests/execution/test_cpu_clock.py
    tests/execution/test_grading.py tests/backends/oci/test_oci_parts.py
    tests/execution/test_oci.py tests/execution/test_runtime_verdicts.py
    tests/execution/test_abuse.py tests/execution/test_sessions.py
    -k "peak_memory or oom_kill or test_cpu_clock or do_not_depend_on_jobs or prerequisites
        or auto_is or cgroup_v2 or controllers_cannot or memory_cgroup or tmpfs_past
        or memory_near or no_engine or fork_bomb_is_contained_by_the_pids
        or interpreter_past_the_memory_limit or the_memory_limit_ends_the_call"'
case $LAB_SUBSET in
    ci) LAB_IMAGES=${LAB_IMAGES:-python} LAB_TESTS=${LAB_TESTS:-$SUBSET_CI} ;;
    full) LAB_IMAGES=${LAB_IMAGES:-python gcc} LAB_TESTS=${LAB_TESTS:-$SUBSET_FULL} ;;
    *) die "LAB_SUBSET is ci or full, not '$LAB_SUBSET'" ;;
esac
LAB_TESTS=$(printf '%s' "$LAB_TESTS" | tr '\n' ' ')  # one line: the guest evals it
LAB_DRIVER=${LAB_DRIVER:-systemd}
LAB_SMP=${LAB_SMP:-2}
# the unified hierarchy said, though Debian 13's systemd knows no other; a kernel panic ends
# QEMU (-no-reboot) rather than waiting for the deadline
CMDLINE="root=/dev/vda rw console=ttyS0 systemd.unified_cgroup_hierarchy=1"
CMDLINE+=" systemd.show_status=error panic=1"

# The host's tools, from Debian, installed when missing: QEMU, debootstrap (the guest's build),
# e2fsprogs (mkfs.ext4 -d, debugfs), Python (the build reads pyproject.toml).
ensure_tools() {
    local missing=() tool
    for tool in qemu-system-x86_64:qemu-system-x86 debootstrap:debootstrap debugfs:e2fsprogs \
        python3:python3; do
        command -v "${tool%%:*}" >/dev/null || missing+=("${tool#*:}")
    done
    [ "${#missing[@]}" = 0 ] && return
    command -v apt-get >/dev/null || die "missing: ${missing[*]} (Debian packages)"
    say "installing ${missing[*]} (apt-get update first)"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        "${missing[@]}" >/dev/null
}

# The image references for LAB_IMAGES, from hazmat's own recipes.
image_refs() {
    # shellcheck disable=SC2086
    PYTHONPATH="$REPO/src" "$VENV/bin/python" -c '
import sys
from hazmat.images.recipes import recipes_for
print(" ".join(r.ref for r in recipes_for(sys.argv[1:])))' $LAB_IMAGES
}

stage() {
    local dir=$1 refs
    mkdir -p "$dir/src" "$dir/out" "$dir/tree"
    # the checkout's files (tracked and new, not ignored ones), built where the build's own
    # files (build/, *.egg-info) stay out of the checkout
    git -C "$REPO" ls-files -z -co --exclude-standard | (cd "$REPO" && tar --null --ignore-failed-read -T - -cf - \
        2>/dev/null) | tar -xf - -C "$dir/tree"
    "$VENV/bin/pip" wheel --quiet --no-deps -w "$dir" "$dir/tree" >/dev/null
    cp -r "$dir/tree/tests" "$dir/tree/pyproject.toml" "$dir/src/"
    rm -rf "$dir/tree"
    install -m 0644 "$HERE/guest-job.sh" "$dir/job.sh"
    install -m 0644 "$HERE/lab_plugin.py" "$dir/lab_plugin.py"
    # the compiled agent built here (static: it runs in the guest as built), which the guest
    # would otherwise build under software emulation once per folder (about 30 s each)
    PYTHONPATH="$REPO/src" "$VENV/bin/python" -c '
import sys
from pathlib import Path
from hazmat.backends.agent.compiled import compiled_agent, why_not_compiled
sys.exit(0 if compiled_agent(Path(sys.argv[1])) else why_not_compiled(Path(sys.argv[1])))' "$dir"
    refs=$(image_refs)
    local lang
    for lang in $LAB_IMAGES; do "$VENV/bin/hazmat" images build --missing --lang "$lang" >&2; done
    # shellcheck disable=SC2086
    docker save -o "$dir/images.tar" $refs
    { printf 'LAB_DRIVER=%q\n' "$LAB_DRIVER"; printf 'LAB_REFS=%q\n' "$refs"
      printf 'LAB_TESTS=%q\n' "$LAB_TESTS"; } > "$dir/lab.env"
}

lab_disk() {
    local dir=$1 disk=$2 mb
    mb=$(du -sm "$dir" | cut -f1)
    mkfs.ext4 -q -F -L hazmat-lab-io -d "$dir" "$disk" "$((mb + 1024))M" >&2
}

# QEMU's console, each line stamped with the seconds since QEMU started.
boot() {
    local guest=$1 disk=$2 log=$3 start=${EPOCHREALTIME/./} tenths
    timeout --kill-after=15 "$LAB_TIMEOUT" qemu-system-x86_64 \
        -accel tcg,thread=multi -cpu max -smp "$LAB_SMP" -m 4096 -nic none -nographic \
        -no-reboot -kernel "$guest.vmlinuz" -initrd "$guest.initrd" \
        -append "$CMDLINE" \
        -drive "file=$guest.disk.img,if=virtio,format=raw,snapshot=on" \
        -drive "file=$disk,if=virtio,format=raw" </dev/null 2>&1 \
        | while IFS= read -r line; do
            tenths=$(( (${EPOCHREALTIME/./} - start) / 100000 ))
            printf '%5d.%d %s\n' $((tenths / 10)) $((tenths % 10)) "${line//$'\r'/}"
        done | tee "$log"
    return "${PIPESTATUS[0]}"
}

main() {
    [ "$(id -u)" = 0 ] || die "needs root (mkfs, docker)"
    ensure_tools
    [ "${1:-}" = --tools ] && return  # .ci/run: the tools first, the guest built meanwhile
    local guest work t0 rc=0
    t0=$SECONDS
    guest=$(bash "$HERE/build-image.sh")
    say "guest image ready in $((SECONDS - t0)) s: $guest"
    work=$(mktemp -d "${TMPDIR:-/tmp}/hazmat-lab.XXXXXX")
    trap 'rm -rf "'"$work"'"' EXIT
    t0=$SECONDS
    stage "$work/stage"
    lab_disk "$work/stage" "$work/lab.img"
    say "lab disk staged in $((SECONDS - t0)) s"
    rm -rf "$LAB_OUT"; mkdir -p "$LAB_OUT"
    t0=$SECONDS
    boot "$guest" "$work/lab.img" "$LAB_OUT/console.log" || rc=$?
    say "QEMU ran $((SECONDS - t0)) s (exit $rc)"
    [ "$rc" = 124 ] && die "the guest passed its deadline of $LAB_TIMEOUT s: see $LAB_OUT/console.log"
    debugfs -R "rdump /out $LAB_OUT" "$work/lab.img" >/dev/null 2>&1 || die "no results on the lab disk"
    rc=$(cat "$LAB_OUT/out/rc" 2>/dev/null || echo 1)
    say "results in $LAB_OUT/out (job exit status $rc)"
    return "$rc"
}

main "$@"
