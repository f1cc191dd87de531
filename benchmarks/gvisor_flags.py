"""Compile times under gVisor's settings: one hardened `docker run` per language and runtime,
the build (and the language's prepare step, and the program's run) timed inside the container
with `date +%s%N`, so the container's start does not count; the whole `docker run` is timed
from the host too. Runtimes are Docker runtimes of one engine, each a runsc with other flags (or
runc); rounds are interleaved (every language under every runtime, then again, the runtimes'
order rotated each round) so that the machine's load hits them alike. Medians, and their ratio
to the baseline runtime's.

The languages' build, prepare step, environment and program are hazmat's own
(hazmat.languages: C and C++ with their flags, C++ with the precompiled <bits/stdc++.h>, javac
as hazmat starts it, rustc, Go with its seeded build cache); a prepare step's failure is
ignored, as hazmat ignores it. The containers have hazmat's hardening as `hazmat bench` does it
(backends/docker/baseline.py) with the standard preset's limits (512 MB, half a CPU, 64 MB tmpfs, 64
tasks: under a runsc the pids cgroup gets hazmat's headroom for the sentry's own threads),
without hazmat's own seccomp profile. --languages picks some of c, cpp, java, rust, go.

It runs against an engine where the runtimes are registered; it creates none. An engine of
one's own, with the images loaded from the image cache:

    bash scripts/ensure-engine.sh --fresh /var/tmp/gvflags    # prints its DOCKER_HOST
    # edit /var/tmp/gvflags/daemon.json (below), then: kill -HUP $(cat /var/tmp/gvflags/dockerd.pid)
    for f in gcc java go rust; do docker load -i /var/cache/hazmat/images/$f-trixie-*.tar; done
    .venv/bin/python benchmarks/gvisor_flags.py --docker-host unix:///var/tmp/gvflags/docker.sock \
        --rounds 8 runc runsc runsc-memory runsc-self runsc-nooverlay runsc-shared \
        runsc-nodirectfs runsc-systrap
    bash scripts/ensure-engine.sh --remove /var/tmp/gvflags

The daemon.json used (ensure-engine.sh's "runsc" entry, then one flag changed or added each):

    {
      "runtimes": {
        "runsc": {"path": "/var/lib/hazmat/runsc/runsc",
          "runtimeArgs": ["--network=none", "--platform=ptrace", "--host-uds=open"]},
        "runsc-memory": {"path": "/var/lib/hazmat/runsc/runsc",
          "runtimeArgs": ["--network=none", "--platform=ptrace", "--host-uds=open",
                          "--overlay2=root:memory"]},
        "runsc-self": {"path": "/var/lib/hazmat/runsc/runsc",
          "runtimeArgs": ["--network=none", "--platform=ptrace", "--host-uds=open",
                          "--overlay2=root:self"]},
        "runsc-nooverlay": {"path": "/var/lib/hazmat/runsc/runsc",
          "runtimeArgs": ["--network=none", "--platform=ptrace", "--host-uds=open",
                          "--overlay2=none"]},
        "runsc-shared": {"path": "/var/lib/hazmat/runsc/runsc",
          "runtimeArgs": ["--network=none", "--platform=ptrace", "--host-uds=open",
                          "--file-access=shared", "--overlay2=none"]},
        "runsc-nodirectfs": {"path": "/var/lib/hazmat/runsc/runsc",
          "runtimeArgs": ["--network=none", "--platform=ptrace", "--host-uds=open",
                          "--directfs=false"]},
        "runsc-systrap": {"path": "/var/lib/hazmat/runsc/runsc",
          "runtimeArgs": ["--network=none", "--platform=systrap", "--host-uds=open"]}
      }
    }

(runsc refuses --file-access=shared with its default --overlay2=root:self: "overlay flag is
incompatible with shared file access for rootfs"; hence --overlay2=none beside it. Not the KVM
platform: it hangs on these machines.) Note that with hazmat's read-only root runsc (2024-07-29)
puts no overlay on the root at all, whatever --overlay2 says: / is the gofer's 9p mount, "ro",
in /proc/mounts under runsc, runsc-memory, runsc-self and runsc-nooverlay alike (without
--read-only it is "overlay rw"). Those four are then one configuration, and their spread is the
measurement's noise. `runsc flags` lists what a runsc knows and its defaults.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field

from hazmat.backends.container.settings_check import RUNSC_PIDS_BASE, RUNSC_PIDS_PER_TASK
from hazmat.languages import BUILD_DIR, get_language

LANGUAGES = ("c", "cpp", "java", "rust", "go")
Key = tuple[str, str, str]  # language, phase, runtime
MARK = "@@hazmat-phase"  # what the container prints before a phase's name and nanoseconds


@dataclass(frozen=True)
class Limits:
    """The container's limits: hazmat's standard preset by default."""

    memory: str = "512m"
    cpus: str = "0.5"
    tmpfs_mb: int = 64
    pids: int = 64


@dataclass
class Figures:
    """Milliseconds per (language, phase, runtime), and what failed."""

    times: dict[Key, list[float]] = field(default_factory=lambda: defaultdict(list))
    failures: list[str] = field(default_factory=list)


def _timed(phase: str, command: str, check: bool = True) -> str:
    """`command` in a subshell (a build may `exec`), its time printed after it. With `check`,
    the script stops when the command fails; without (a prepare step, as hazmat runs it), its
    failure is ignored."""
    stop = " || exit $?" if check else ""
    return (
        f"t0=$(date +%s%N); ({command}){stop}; t1=$(date +%s%N); "
        f'echo "{MARK} {phase} $((t1 - t0))"; '
    )


def container_script(language: str) -> str:
    """The shell script a container runs: the source from stdin, then the language's prepare
    step (in /tmp, as the pool does it), build and run, each timed."""
    lang = get_language(language)
    script = f"cat > {lang.source_name} && mkdir -p {BUILD_DIR} || exit; "
    if lang.prepare:
        script += _timed("prepare", f"cd /tmp && {lang.prepare}", check=False)
    if lang.build:
        script += _timed("build", lang.build)
    return script + _timed("run", lang.run)


def docker_run(language: str, runtime: str, limits: Limits, name: str) -> list[str]:
    """`docker run` with hazmat's hardening flags (as backends/docker/baseline.py has them)."""
    lang = get_language(language)
    tmp = "exec" if lang.exec_tmp else "noexec"
    size = f"size={limits.tmpfs_mb}m"
    env = [f"--env={k}={v}" for k, v in lang.env.items()]
    # the sentry's own threads count against the pids cgroup: hazmat's headroom for them
    # (backends/container/settings_check.py host_pids_limit); any runtime but runc is taken for a
    # runsc
    pids = limits.pids if runtime == "runc" else RUNSC_PIDS_BASE + RUNSC_PIDS_PER_TASK * limits.pids
    return [
        "docker", "run", "--rm", "-i", f"--name={name}", f"--runtime={runtime}",
        "--network=none", "--read-only", "--cap-drop=ALL", "--security-opt=no-new-privileges",
        "--user=65534:65534", "--init",
        f"--memory={limits.memory}", f"--memory-swap={limits.memory}", f"--cpus={limits.cpus}",
        "--log-driver=none", f"--pids-limit={pids}", "--ulimit=core=0",
        f"--tmpfs=/tmp:rw,nosuid,nodev,{tmp},{size},mode=1777",
        f"--tmpfs=/work:rw,nosuid,nodev,noexec,{size},uid=65534,gid=65534,mode=0700",
        "--workdir=/work", "--env=HOME=/tmp", *env,
        lang.image, "/bin/sh", "-c", container_script(language),
    ]  # fmt: skip


def run_once(language: str, runtime: str, limits: Limits, figures: Figures) -> None:
    """One container: its phases' times (and the whole `docker run`'s) into `figures`."""
    lang = get_language(language)
    name = f"gvisor-flags-{os.getpid()}-{time.monotonic_ns()}"
    started = time.perf_counter()
    try:
        done = subprocess.run(
            docker_run(language, runtime, limits, name),
            input=lang.hello.encode(),
            capture_output=True,
            timeout=600,
        )
    except subprocess.TimeoutExpired:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True)
        figures.failures.append(f"{language} under {runtime}: no answer in 600 s")
        return
    wall = (time.perf_counter() - started) * 1000
    out = done.stdout.decode(errors="replace").splitlines()
    phases = {
        parts[1]: int(parts[2]) / 1e6
        for parts in (line.split() for line in out)
        if len(parts) == 3 and parts[0] == MARK
    }
    program = [line for line in out if not line.startswith(MARK)]
    if done.returncode != 0 or program != ["1"] or "run" not in phases:
        err = (done.stdout + done.stderr).decode(errors="replace").strip()[-300:]
        figures.failures.append(f"{language} under {runtime}: exit {done.returncode}: {err}")
        return
    for phase, ms in phases.items():
        figures.times[(language, phase, runtime)].append(ms)
    figures.times[(language, "docker run", runtime)].append(wall)


def measure(
    runtimes: list[str], languages: list[str], rounds: int, warmup: int, limits: Limits
) -> Figures:
    """`warmup` rounds not counted, then `rounds` counted; each round is every language under
    every runtime, the runtimes' order rotated by one each round."""
    figures = Figures()
    for number in range(warmup + rounds):
        order = runtimes[number % len(runtimes) :] + runtimes[: number % len(runtimes)]
        into = figures if number >= warmup else Figures()
        for language in languages:
            for runtime in order:
                run_once(language, runtime, limits, into)
        if number < warmup:
            figures.failures += into.failures
        label = "warm-up round" if number < warmup else "round"
        print(f"{label} {number + 1}/{warmup + rounds} done", file=sys.stderr, flush=True)
    return figures


def table(figures: Figures, runtimes: list[str], baseline: str) -> str:
    """Markdown: a row per language and phase, a column per runtime: the median in ms and its
    ratio to the baseline's median."""
    head = "| language | phase | " + " | ".join(runtimes) + " |"
    rows = [head, "|---|---|" + "---:|" * len(runtimes)]
    keys = dict.fromkeys((lang, phase) for (lang, phase, _) in figures.times)
    for language, phase in keys:
        base = figures.times.get((language, phase, baseline))
        base_median = statistics.median(base) if base else None
        cells = []
        for runtime in runtimes:
            times = figures.times.get((language, phase, runtime))
            if not times:
                cells.append("–")
                continue
            median = statistics.median(times)
            ratio = f" ({median / base_median:.2f}×)" if base_median else ""
            cells.append(f"{median:.0f}{ratio}")
        rows.append(f"| {language} | {phase} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("runtimes", nargs="+", help="Docker runtime names of the engine")
    parser.add_argument("--docker-host", default=os.environ.get("DOCKER_HOST", ""))
    parser.add_argument("--baseline", default="runsc", help="the runtime ratios refer to")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=1, help="rounds run first, not counted")
    parser.add_argument("--languages", default=",".join(LANGUAGES), help="comma-separated")
    args = parser.parse_args()
    if args.docker_host:
        os.environ["DOCKER_HOST"] = args.docker_host
    languages = [name.strip() for name in args.languages.split(",") if name.strip()]
    figures = measure(args.runtimes, languages, args.rounds, args.warmup, Limits())
    print(
        f"`benchmarks/gvisor_flags.py --rounds {args.rounds}`: median ms inside the container "
        f"per phase (`docker run`: the whole run, from the host), and the ratio to "
        f"{args.baseline}'s median:\n"
    )
    print(table(figures, args.runtimes, args.baseline))
    if figures.failures:
        print("\nFailures:")
        for failure in figures.failures:
            print(f"- {failure}")


if __name__ == "__main__":
    main()
