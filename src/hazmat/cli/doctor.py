"""`hazmat doctor`: is this machine ready to run sandboxes, and if not, what to do.

The checks load the engine's modules when the command runs, not when the parser is built."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hazmat._exceptions import HazmatError
from hazmat.cli.doctor_check import Check
from hazmat.cli.doctor_host import host_check
from hazmat.languages import get_language
from hazmat.models import Outcome
from hazmat.policy import Policy, Runtime

if TYPE_CHECKING:
    from hazmat.backends.container.engine import Engine
    from hazmat.images.builder import ImageBuilder

__all__ = ["Check", "add", "run_checks"]


def add(sub: Any) -> None:
    doctor = sub.add_parser("doctor", help="check that this machine can run sandboxes")
    doctor.add_argument("--json", action="store_true", help="print the checks as JSON")
    doctor.add_argument(
        "--policy", type=Path, metavar="FILE",
        help="YAML policy file: with `backend: oci`, the OCI tier's checks must pass too "
        "(with `auto`, the default, they say which tier runs)",
    )  # fmt: skip
    doctor.set_defaults(handler=_doctor)


def _doctor(args: argparse.Namespace) -> int:
    from hazmat.cli.common import policy

    checks = run_checks(chosen=policy(args) if args.policy else None)
    if args.json:
        print(json.dumps([c.__dict__ for c in checks]))
    else:
        for c in checks:
            print(f"{'OK  ' if c.ok else 'FAIL' if c.needed else 'WARN'} {c.name}: {c.detail}")
            if not c.ok and c.fix:
                print(f"     fix: {c.fix}")
    return 0 if all(c.ok or not c.needed for c in checks) else 1


def run_checks(engine: Engine | None = None, chosen: Policy | None = None) -> list[Check]:
    from hazmat.backends.container.engine import Engine, map_docker_errors
    from hazmat.images.builder import RECIPES, ImageBuilder

    engine = engine or Engine()
    try:
        info = engine.info()
    except HazmatError as exc:
        fix = (
            "start the engine (`systemctl start docker`, or `dockerd` as root; from a source "
            "checkout, `make engine` installs and starts it), or point DOCKER_HOST at one"
        )
        return [Check("engine", False, str(exc), fix)]
    with map_docker_errors():
        raw: dict[str, Any] = engine.api.info()
    checks = [
        Check(
            "engine", True, f"Docker {info.version} (API {info.api_version}), kernel {info.kernel}"
        ),
        _kernel_check(raw, info.cgroup_version),
        host_check(raw, info.cgroup_version),
        _seccomp_check(raw),
        _profile_check(),
        _runc_check(raw),
    ]
    images = [_image_check(ImageBuilder(engine), name) for name in RECIPES]
    checks += images
    usable = next((name for name, c in zip(RECIPES, images, strict=True) if c.ok), None)
    for runtime in Runtime:
        checks.append(_runtime_check(engine, runtime, info.runtimes, usable))
    checks.append(_policy_runtimes(chosen or Policy(), info.runtimes, chosen is None))
    trial = _trial_index(chosen or Policy())
    checks += [trial] if trial is not None else []
    checks += _secrets_check(chosen or Policy())
    checks.append(_monitoring_check())
    checks.append(_leftovers(engine))
    checks.append(_docker_agent_check(engine))
    from hazmat.backends.oci.prerequisites import choice
    from hazmat.cli.doctor_oci import oci_checks

    backend = (chosen or Policy()).backend
    tier = choice(backend)
    checks.append(Check("backend", True, f"{tier.tier} ({tier.why})"))
    checks += oci_checks(engine, needed=backend == "oci")
    return checks


def _secrets_check(policy: Policy) -> list[Check]:
    """Whether each of the policy's secrets (egress.secrets) has its value in hazmat's
    environment: a run that would get one that has not fails."""
    if not policy.secrets:
        return []
    unset = [s for s in policy.secrets if not os.environ.get(s.from_env)]
    named = ", ".join(f"{s.name} ({s.host}, from {s.from_env})" for s in policy.secrets)
    if not unset:
        return [Check("secrets", True, f"each has its value: {named}")]
    missing = ", ".join(s.from_env for s in unset)
    return [
        Check(
            "secrets",
            False,
            f"not set in this process's environment: {missing}; runs that would get them fail",
            f"set {missing} in the environment of the hazmat process that runs them "
            "(`hazmat serve`, the local server, your program)",
        )
    ]


def _trial_index(policy: Policy) -> Check | None:
    """A warning while the policy's packages take a trial index on loopback (packages.
    trial_index): fine on one's own machine, never on a service others use."""
    settings = policy.packages
    trials = [s.url for s in (settings.python, settings.npm) if s is not None and s.on_trial]
    if not trials:
        return None
    return Check(
        "trial index",
        False,
        f"packages.trial_index is on: downloads' sandboxes reach {', '.join(trials)} on this "
        "machine's loopback over plain HTTP (the proxy forwards to that port and no other)",
        "for a trial on your own machine only: name an https:// index and leave "
        "packages.trial_index off on a service others use",
        needed=False,
    )


def _docker_agent_check(engine: Engine) -> Check:
    """Which agent the Docker backend's sandboxes (single runs and sessions) get: the compiled
    one, mounted from this user's cache when the engine runs here, or the shell agents (a
    warning only: they work)."""
    from hazmat._cache import cache_folder
    from hazmat.backends.agent.compiled import compiled_agent, why_not_compiled

    name = "docker backend: agent"
    if not engine.local:
        return Check(name, True, "the shell agents (a remote engine cannot see this host's files)")
    binary = compiled_agent(cache_folder())
    if binary is not None:
        return Check(name, True, f"compiled, one process per sandbox, mounted from {binary}")
    why = why_not_compiled(cache_folder()) or "?"
    return Check(name, False, f"the shell agents run: {why}", "apt install gcc", False)


def _policy_runtimes(policy: Policy, known: frozenset[str], built_in: bool = True) -> Check:
    """Which runtime each trust level of `policy` (the --policy file's, else the built-in one)
    asks for, and whether the engine has it: a level whose runtime is missing fails every run
    (hazmat never falls back to another runtime)."""
    wanted = {level.value: s.runtime.value for level, s in policy.levels.items()}
    detail = ", ".join(f"{level}: {runtime}" for level, runtime in wanted.items())
    missing = sorted(level for level, runtime in wanted.items() if runtime not in known)
    routed = sorted(
        f"{level.value} ({', '.join(sorted(s.assess.runtime_for))} code)"
        for level, s in policy.levels.items()
        if any(r.value not in known for r in s.assess.runtime_for.values())
    )
    if routed and not missing:
        return Check(
            "policy runtimes",
            False,
            f"{detail}; risky code is routed to a runtime the engine lacks at "
            f"{', '.join(routed)}, so such runs fail closed (assess.runtime_for)",
            "install runsc (`bash scripts/ensure-engine.sh`), or set `assess: {runtime_for: {}}` "
            "for the level in your policy if you accept runc for risky code",
        )
    if missing:
        return Check(
            "policy runtimes",
            False,
            f"{detail}; the engine lacks the runtime for {', '.join(missing)}, so runs at "
            "those levels fail closed",
            "install runsc (`bash scripts/ensure-engine.sh`), or set `runtime: runc` for the "
            "level in your policy if you accept the weaker boundary",
        )
    return Check("policy runtimes", True, f"{'built-in' if built_in else 'your'} policy: {detail}")


def _monitoring_check() -> Check:
    """Peak memory, CPU time and OOM kills are read from the host's cgroup files."""
    from hazmat.backends.container.cgroup import Cgroup

    cgroup = Cgroup.of_pid(os.getpid())
    if cgroup is None:
        return Check(
            "resource monitoring",
            False,
            "cannot read this process's cgroup files: results will have no peak memory or CPU "
            "time, and OOM kills are known only once a container exits",
            "run hazmat on the engine's host with /sys/fs/cgroup mounted",
        )
    kind = "v2" if cgroup.unified else "v1"
    return Check("resource monitoring", True, f"cgroup {kind} files readable")


def _kernel_check(raw: dict[str, Any], cgroup: str) -> Check:
    wanted = ["MemoryLimit", "SwapLimit", "PidsLimit", "CpuCfsQuota"]
    missing = [key for key in wanted if not raw.get(key)]
    detail = f"cgroup v{cgroup}; memory, swap, pids and CPU quota limits " + (
        "supported" if not missing else f"missing: {', '.join(missing)}"
    )
    return Check(
        "kernel features",
        not missing,
        detail,
        ""
        if not missing
        else (
            "enable the missing cgroup controllers (e.g. swapaccount=1 on the kernel command line)"
        ),
    )


def _seccomp_check(raw: dict[str, Any]) -> Check:
    options = " ".join(raw.get("SecurityOptions") or [])
    ok = "seccomp" in options
    return Check(
        "seccomp",
        ok,
        options or "no security options reported",
        "" if ok else "use a Docker engine built with seccomp support",
    )


def _profile_check() -> Check:
    from hazmat.backends.container.seccomp import DENIED, UnsafeProfile, load_profile

    try:
        profile = load_profile()
    except UnsafeProfile as exc:
        return Check("seccomp profile", False, str(exc), "unset HAZMAT_SECCOMP_BASE")
    if profile.text:
        origin = Path(profile.source + ".source")  # written by scripts/ensure-engine.sh
        said = origin.read_text(errors="replace").strip() if origin.is_file() else ""
        return Check(
            "seccomp profile",
            True,
            f"derived from {profile.source}{f' ({said})' if said else ''}: the native ABI "
            f"alone, without {', '.join(sorted(DENIED))}, sockets limited",
        )
    return Check(
        "seccomp profile",
        False,
        "no base profile: runc containers get Docker's default (ptrace allowed)",
        "bash scripts/ensure-engine.sh (as root)",
    )


def _runc_check(raw: dict[str, Any]) -> Check:
    """The runc of the engine and of the OCI tier, and whether each has the 2025 fixes."""
    from hazmat.backends.oci.driver import runtime_binary
    from hazmat.cli.doctor_runc import runc_check

    return runc_check(raw, runtime_binary(Runtime.RUNC))


def _image_check(builder: ImageBuilder, name: str) -> Check:
    from hazmat.images.builder import RECIPES

    status = builder.status(RECIPES[name])
    label = f"image {status.recipe.ref}"
    if not status.present:
        return Check(label, False, "not built", f"hazmat images build --lang {name}")
    detail = f"{status.image_id}, {status.size_mb:.0f} MB, built {status.built or '?'}"
    if not status.current:
        stale = f"{detail}, from another recipe than this hazmat's (an older build)"
        return Check(label, False, stale, f"hazmat images build --missing --lang {name}")
    return Check(label, True, detail)


def _runtime_check(
    engine: Engine, runtime: Runtime, known: frozenset[str], recipe: str | None
) -> Check:
    """Prove the runtime works by running a one-line program under it."""
    from hazmat.backends.docker.driver import DockerBackend
    from hazmat.images.builder import RECIPES
    from hazmat.sandbox import Sandbox

    name = f"runtime {runtime.value}"
    if runtime.value not in known:
        return Check(
            name,
            False,
            "not registered with the engine",
            "run `bash scripts/ensure-engine.sh` or add it to /etc/docker/daemon.json",
        )
    if recipe is None:
        return Check(name, False, "registered, but no image to try it with", "hazmat images build")
    language = RECIPES[recipe].languages[0]
    code = get_language(language).hello
    sandbox = Sandbox(Policy(), backend=DockerBackend(engine))
    result = sandbox.run(code, language, runtime=runtime, trust="trusted")
    if result.outcome is Outcome.OK and result.stdout.strip() == "1":
        return Check(name, True, f"ran a {language} container in {result.duration_ms:.0f} ms")
    return Check(
        name,
        False,
        f"test run gave {result.outcome.value}: {result.error or result.stderr.strip()[:200]}",
        "see the engine's log",
    )


def _leftovers(engine: Engine) -> Check:
    from hazmat.backends.container.engine import map_docker_errors
    from hazmat.backends.container.owners import LABEL, abandoned

    with map_docker_errors():
        listed = engine.api.containers(all=True, filters={"label": LABEL})
    found = [c for c in listed if abandoned(c.get("Labels") or {})]
    if not found:
        live = f"none ({len(listed)} in use by running hazmat processes)" if listed else "none"
        return Check("leftover containers", True, live)
    return Check(
        "leftover containers",
        False,
        f"{len(found)} hazmat container(s) on the engine",
        "they are removed by the next run once their owner is gone; "
        "or: docker rm -f $(docker ps -aq --filter label=hazmat)",
    )
