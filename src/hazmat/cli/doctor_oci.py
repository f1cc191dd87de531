"""`hazmat doctor`'s checks of the direct OCI tier (backends/oci/driver.py): the runtime binaries,
tini, cgroups this process may create, and the images' prepared root file systems. A failure
counts against the exit status only when the policy asks for the tier (`backend: oci`);
otherwise it is printed as a warning (with `backend: auto`, the default, the tier is then not
picked: the `backend` line says which one runs)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

from hazmat.cli.doctor_check import Check
from hazmat.policy import Runtime

if TYPE_CHECKING:
    from hazmat.backends.container.engine import Engine

__all__ = ["oci_checks"]


def oci_checks(engine: Engine, needed: bool) -> list[Check]:
    from hazmat.backends.oci.driver import find_init, runtime_binary
    from hazmat.backends.oci.rootfs import RootFs
    from hazmat.images.builder import RECIPES, ImageBuilder

    checks = []
    for runtime in Runtime:
        binary = runtime_binary(runtime)
        if binary is None:
            checks.append(
                Check(
                    f"oci tier: {runtime.value}",
                    False,
                    f"no {runtime.value} binary found",
                    "bash scripts/ensure-engine.sh installs runc and runsc (or set "
                    f"HAZMAT_{runtime.value.upper()} to one)",
                    needed,
                )
            )
            continue
        version = _first_line([str(binary), "--version"])
        checks.append(Check(f"oci tier: {runtime.value}", True, f"{binary}: {version}"))
    init = find_init()
    checks.append(
        Check("oci tier: init", True, f"{init} (mounted as each sandbox's first process)")
        if init is not None
        else Check(
            "oci tier: init",
            False,
            "no tini (docker-init) on this host",
            "apt install tini (Docker's docker.io package brings docker-init)",
            needed,
        )
    )
    checks.append(_cgroup_check(needed))
    builder = ImageBuilder(engine)
    rootfs = RootFs(engine)
    checks.append(_agent_check(rootfs.tier_dir))
    prepared = {p.name for p in rootfs.prepared()}
    missing = []
    for recipe in RECIPES.values():
        status = builder.status(recipe)
        short = status.image_id  # the first 12 digits of the ID; a folder has 24
        if status.present and short and not any(name.startswith(short) for name in prepared):
            missing.append(recipe.ref)
    detail = f"{len(prepared)} prepared under {rootfs.base}"
    checks.append(
        Check("oci tier: root file systems", True, detail)
        if not missing
        else Check(
            "oci tier: root file systems",
            False,
            f"{detail}; not yet for {', '.join(missing)} (each is exported on its first run, "
            "which then takes seconds)",
            "hazmat images export",
            needed,
        )
    )
    return checks


def _agent_check(folder: Path) -> Check:
    """Which agent the tier's sandboxes (single runs and sessions) get: the compiled one, built
    here once, or the shell agents (a warning only: they work, a byte per read)."""
    from hazmat.backends.agent.compiled import compiled_agent, why_not_compiled

    binary = compiled_agent(folder)
    if binary is not None:
        return Check("oci tier: agent", True, f"compiled, one process per sandbox: {binary}")
    why = why_not_compiled(folder) or "?"
    return Check("oci tier: agent", False, f"the shell agents run: {why}", "apt install gcc", False)


def _cgroup_check(needed: bool) -> Check:
    """Whether this process can make the sandboxes' cgroups (the runtime makes them as the
    user hazmat runs as): every controller the limits need, created and removed here."""
    from hazmat.backends.container.cgroup import CGROUP_ROOT
    from hazmat.backends.oci.prerequisites import CONTROLLERS_V1, cgroup_problem

    problem = cgroup_problem()
    if problem is None:
        unified = (CGROUP_ROOT / "cgroup.controllers").is_file()
        kind = "v2" if unified else "v1 (" + ", ".join(CONTROLLERS_V1) + ")"
        return Check("oci tier: cgroups", True, f"cgroup {kind}: this process can create them")
    return Check("oci tier: cgroups", False, problem.why, problem.fix, needed)


def _first_line(command: list[str]) -> str:
    try:
        out = subprocess.run(command, capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"does not answer ({exc})"
    return (out.stdout.splitlines() or ["?"])[0]
