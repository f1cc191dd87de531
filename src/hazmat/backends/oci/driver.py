"""The direct OCI tier: sandboxes created by runc or runsc themselves from an OCI bundle, with
no daemon in the path of a run (policy `backend: oci`, or `auto`, the default, where it can run:
prerequisites.py).

Each sandbox is a bundle folder (config.json from backends/oci/spec.py, over the image's root
file system prepared once by backends/oci/rootfs.py and mounted read-only) and one
`<runtime> run` process whose stdin, stdout and stderr are pipes, joined into one framed
socket by backends/oci/relay.py. From there on the run is the same as the Docker tier's
(backends/container/backend.py): the agent says it is ready, the settings are read back
(backends/oci/readback.py; what is waited for before, and how: backends/oci/wait.py) before the
sandbox may take its one job, the pump sends the job and enforces time and output from the
host, the cgroup is sampled from the host, and the sandbox is killed and deleted after its
run. This module is the tier's driver: start, kill, final state, discard, and the reaper.

Every bundle carries the owner's annotations (backends/container/owners.py), so any hazmat process's
`reap()` removes what a killed process left behind, and its program's uid is claimed by a
file created exclusively, so no two live sandboxes on this host share one (a range of its
own, apart from the Docker backend's: both share the kernel).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
import shutil
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hazmat._exceptions import InfraError, SettingsMismatch
from hazmat.backends.agent.compiled import compiled_agent
from hazmat.backends.agent.runners import READY_LINE
from hazmat.backends.base import Job, Spec, local_resources
from hazmat.backends.container.backend import READY_TIMEOUT_S, ContainerBackend
from hazmat.backends.container.cgroup import Cgroup
from hazmat.backends.container.engine import Engine
from hazmat.backends.container.owners import LABEL, abandoned
from hazmat.backends.container.seccomp import SeccompProfile, usable_profile
from hazmat.backends.container.started import Started
from hazmat.backends.container.stream import NotReady, wait_ready
from hazmat.backends.container.uids import UID_BASE, UID_COUNT, Uids
from hazmat.backends.oci.memcg import (
    make_memory_cgroup,
    memory_cgroup,
    remove_memory_cgroup,
    runtime_cgroup,
)
from hazmat.backends.oci.readback import (
    cgroup_problems,
    check_bundle,
    check_kernel,
    load_config,
    sandbox_problems,
)
from hazmat.backends.oci.relay import Relay
from hazmat.backends.oci.rootfs import RootFs
from hazmat.backends.oci.spec import bundle_config
from hazmat.backends.oci.wait import FirstProcess, runtime_state, wait_for_pid
from hazmat.policy import HostResources, Runtime

__all__ = ["OciBackend", "OciDriver", "OciStarted", "find_init", "runtime_binary"]

log = logging.getLogger(__name__)
# gVisor's flags, as the engine is given them (scripts/ensure-engine.sh): no network of its
# own, the ptrace platform, host unix sockets only for the mounted allowlist proxy socket
RUNSC_FLAGS = ("--network=none", "--platform=ptrace", "--host-uds=open")
RUNSC_PATHS = (Path("/var/lib/hazmat/runsc/runsc"),)  # Debian 13's, when ensure-engine put it
# Debian unstable's runc (the 2025 fixes), when ensure-engine put it: the engine it starts runs it
RUNC_PATHS = (Path("/var/lib/hazmat/runc/bin/runc"),)
INIT_PATHS = (Path("/usr/bin/docker-init"), Path("/usr/bin/tini"))
# the OCI tier's uids: the range after the Docker backend's (the kernel is the same)
OCI_UID_BASE = UID_BASE + UID_COUNT
_KILL_TIMEOUT_S = 30
# The bundle's config.json for a spec and the program's uid (oci_spec.bundle_config's keywords:
# rootfs, init, cgroup, annotations, seccomp); a test gives one that asks for more
Bundle = Callable[..., dict[str, Any]]
# How the driver calls its runtime (subprocess.run's arguments); a test gives one that fails
Call = Callable[..., "subprocess.CompletedProcess[bytes]"]


def runtime_binary(runtime: Runtime) -> Path | None:
    """The runtime's binary: $HAZMAT_RUNC / $HAZMAT_RUNSC, else the one hazmat installs,
    else the first on PATH; None when there is none."""
    override = os.environ.get(f"HAZMAT_{runtime.value.upper()}")
    if override:
        return Path(override) if os.access(override, os.X_OK) else None
    fixed = RUNSC_PATHS if runtime is Runtime.RUNSC else RUNC_PATHS
    for path in fixed:
        if os.access(path, os.X_OK):
            return path
    found = shutil.which(runtime.value)
    return Path(found) if found else None


def find_init() -> Path | None:
    """The host's tini, mounted into each sandbox as its first process (as the engine's)."""
    return next((p for p in INIT_PATHS if os.access(p, os.X_OK)), None)


@dataclass
class OciStarted(Started):
    """A sandbox of the OCI tier: `attached` is its relay; `process` the runtime's `run`, and
    `ended` set once that process has ended and been collected (its `returncode` is then set)."""

    process: subprocess.Popen[bytes] | None = None
    bundle: Path | None = None
    uid_file: Path | None = None
    memcg: Path | None = None  # a runsc sandbox's memory cgroup, hazmat's own (memcg.py)
    ended: threading.Event = field(default_factory=threading.Event)


def _collect(process: subprocess.Popen[bytes], ended: threading.Event) -> None:
    process.wait()
    ended.set()


class OciBackend(ContainerBackend):
    """Runs each job in a sandbox nobody used before, made by runc or runsc directly. The
    engine given (or DOCKER_HOST's) is used only to prepare an image's root file system."""

    def __init__(
        self,
        engine: Engine | None = None,
        seccomp: SeccompProfile | None = None,
        base: Path | None = None,
        run_dir: Path | None = None,
        *,
        bundle: Bundle = bundle_config,
        call: Call = subprocess.run,
    ) -> None:
        engine = engine or Engine()
        driver = OciDriver(engine, usable_profile(seccomp), base, run_dir, bundle, call)
        super().__init__(driver)
        self.driver: OciDriver = driver

    @property
    def tier(self) -> str:
        return "oci"

    @property
    def engine(self) -> Engine:
        """The engine that prepares an image's root file system."""
        return self.driver.engine

    @property
    def run_dir(self) -> Path:
        """The tier's state on this host: bundles, uid claims, the runtimes' own folders."""
        return self.driver.run_dir


class OciDriver:
    """Makes, checks and removes the tier's sandboxes (`Driver`): bundles, the runtime's
    processes, and a claim file per uid."""

    local = True  # the runtime runs here

    def __init__(
        self,
        engine: Engine,
        seccomp: SeccompProfile,
        base: Path | None,
        run_dir: Path | None,
        bundle: Bundle,
        call: Call,
    ) -> None:
        self.engine = engine
        self.seccomp = seccomp
        self.rootfs = RootFs(engine, base)
        self.run_dir = run_dir or Path(os.environ.get("HAZMAT_OCI_RUN") or "/run/hazmat-oci")
        self.uids = Uids(OCI_UID_BASE, UID_COUNT)
        self.bundle = bundle
        self.call = call
        self._lock = threading.Lock()
        self._live: dict[str, OciStarted] = {}

    def resources(self) -> HostResources:
        return local_resources()

    def agent(self) -> Path | None:
        """The compiled agent, built for this host once (backends/agent/compiled.py); None: the
        shell agents run (no C compiler here)."""
        return compiled_agent(self.rootfs.tier_dir)

    def runtimes(self) -> set[str]:
        return {r.value for r in Runtime if runtime_binary(r) is not None}

    def runtime_command(self, runtime: Runtime) -> list[str]:
        """The runtime's command line up to its subcommand (its state folder, gVisor's flags)."""
        binary = runtime_binary(runtime)
        if binary is None:
            raise InfraError(
                f"the OCI tier needs the {runtime.value} binary and this host has none "
                f"(install it, or set HAZMAT_{runtime.value.upper()}; `hazmat doctor` checks)"
            )
        flags = RUNSC_FLAGS if runtime is Runtime.RUNSC else ()
        return [str(binary), "--root", str(self.run_dir / runtime.value), *flags]

    def start(self, spec: Spec, labels: dict[str, str], expires: float) -> OciStarted:
        """Write the bundle, run the runtime, wait until the agent is ready, read the
        settings back. Raises `SettingsMismatch` (after removing the sandbox) when they differ
        from the policy's, and `InfraError` when the sandbox does not get ready."""
        init = find_init()
        if init is None:
            raise InfraError("the OCI tier needs tini (docker-init) on the host: apt install tini")
        command = self.runtime_command(spec.runtime)
        rootfs = self.rootfs.path(spec.image)
        cid = f"hazmat-{secrets.token_hex(8)}"
        uid, uid_file = self._claim_uid(cid)
        bundle = self.run_dir / "bundles" / cid
        memcg = None
        try:
            annotations = {**labels, f"{LABEL}.uid": str(uid)}
            cgroup = _cgroup(cid)
            if spec.runtime is Runtime.RUNSC:  # in, or inside, hazmat's own (memcg.py)
                cgroup = runtime_cgroup(cgroup)
            config = self.bundle(
                spec, uid, rootfs=rootfs, init=init, cgroup=cgroup, annotations=annotations,
                seccomp=self.seccomp.text, agent=self.agent(),
            )  # fmt: skip
            bundle.mkdir(parents=True, mode=0o700)
            (bundle / "config.json").write_text(json.dumps(config))
            (bundle / "runtime").write_text(spec.runtime.value)
            if spec.runtime is Runtime.RUNSC:
                memcg = _own_memory_cgroup(cid, config)
            started = self._launch(spec, command, cid, uid, bundle, expires)
        except BaseException:
            self._delete(command, cid, bundle)
            if memcg is not None:
                remove_memory_cgroup(memcg)
            self._release_uid(uid, uid_file, cid)
            raise
        started.uid_file = uid_file
        started.memcg = memcg
        try:
            wait_ready(started.sock, READY_LINE, READY_TIMEOUT_S)
            started.born = time.monotonic()
            self._check(started)
        except BaseException as exc:
            try:
                self.discard(started)
            except Exception as failed:  # the first error is the one to report; close() retries
                log.warning("sandbox %s: could not discard it: %s", cid, str(failed))
            if isinstance(exc, NotReady):
                raise InfraError(f"sandbox {cid} did not get ready: {exc}") from None
            raise
        return started

    def _launch(
        self, spec: Spec, command: list[str], cid: str, uid: int, bundle: Path, expires: float
    ) -> OciStarted:
        stdin_r, stdin_w = os.pipe()
        stdout_r, stdout_w = os.pipe()
        stderr_r, stderr_w = os.pipe()
        try:
            process = subprocess.Popen(
                [*command, "run", *_keep(spec.runtime), "--bundle", str(bundle),
                 "--pid-file", str(bundle / "pid"), cid],
                stdin=stdin_r, stdout=stdout_w, stderr=stderr_w, start_new_session=True,
            )  # fmt: skip
        except OSError as exc:
            for fd in (stdin_r, stdin_w, stdout_r, stdout_w, stderr_r, stderr_w):
                os.close(fd)
            raise InfraError(f"could not start {command[0]}: {exc}") from exc
        for fd in (stdin_r, stdout_w, stderr_w):
            os.close(fd)
        # the runtime's exit is collected however the sandbox ends, even one a caller dropped
        # without discarding it (the reaper kills it then): never a zombie. Every wait on the
        # runtime is a wait on `ended`, which this thread sets.
        ended = threading.Event()
        threading.Thread(
            target=_collect, args=(process, ended), name="hazmat-oci-wait", daemon=True
        ).start()
        try:
            relay = Relay(stdin_w, stdout_r, stderr_r)
        except BaseException:
            for fd in (stdin_w, stdout_r, stderr_r):
                with contextlib.suppress(OSError):
                    os.close(fd)
            process.kill()  # `runc|runsc run` itself; start()'s _delete removes the sandbox
            ended.wait()
            raise
        started = OciStarted(
            spec, cid, uid, relay, relay.sock, time.monotonic(), expires, None,
            process=process, bundle=bundle, ended=ended,
        )  # fmt: skip
        with self._lock:
            self._live[cid] = started
        return started

    def _check(self, started: OciStarted) -> None:
        """Read the applied settings back; the sandbox takes no job if any differs. Its pid
        file and its process are waited for and held as backends/oci/wait.py says."""
        assert started.bundle is not None and started.process is not None
        spec = started.spec
        pid = wait_for_pid(started.bundle / "pid", started.ended, started.cid, spec.runtime.value)
        first = FirstProcess(pid, started.process.pid, started.cid)
        try:
            problems = cgroup_problems(pid, spec)
            if spec.runtime is Runtime.RUNC:
                problems += check_kernel(pid, spec, started.uid)
            else:
                problems += sandbox_problems(pid, spec)
                problems += check_bundle(self._held_config(started), spec, started.uid)
            cgroup = Cgroup.of_pid(pid)
            if cgroup is not None and started.memcg is not None:
                cgroup = cgroup.counted_in(started.memcg)
            if first.ended():
                raise InfraError(f"sandbox {started.cid} ended while its settings were read")
        finally:
            first.close()
        if problems:
            raise SettingsMismatch(
                f"sandbox {started.cid} differs from the policy: " + "; ".join(problems), problems
            )
        started.cgroup = cgroup

    def _held_config(self, started: OciStarted) -> dict[str, Any]:
        """The config.json of the bundle the runtime says it runs (`state`)."""
        command = self.runtime_command(started.spec.runtime)
        state = runtime_state(command, started.cid, started.ended)
        try:
            return load_config(Path(state["bundle"]))
        except (ValueError, OSError) as exc:
            raise InfraError(f"sandbox {started.cid}: its bundle is unreadable: {exc}") from None

    def kill(self, started: Started) -> None:
        with self._lock:
            live = started.cid in self._live
        if not live:
            return
        self.call(
            [*self.runtime_command(started.spec.runtime), "kill", "--all", started.cid, "KILL"],
            capture_output=True, timeout=_KILL_TIMEOUT_S, check=False,
        )  # fmt: skip

    def final_state(self, started: Started, job: Job) -> tuple[int | None, bool]:
        """The runtime's exit status (128 + the signal for a killed sandbox), once its process
        has ended (killed if it has not within `_KILL_TIMEOUT_S`); the cgroup's OOM count is
        read by the run itself."""
        assert isinstance(started, OciStarted) and started.process is not None
        if not started.ended.wait(_KILL_TIMEOUT_S):
            self.kill(started)
            if not started.ended.wait(_KILL_TIMEOUT_S):
                raise InfraError(
                    f"sandbox {started.cid}: {started.spec.runtime.value} did not end in "
                    f"{2 * _KILL_TIMEOUT_S:g} s after its run, killed after the first half"
                )
        return started.process.returncode, False

    def program_memory(self, started: Started, job: Job) -> int | None:
        if started.cgroup is None:
            raise InfraError(f"sandbox {started.cid}: its cgroup is not writable from here")
        return started.cgroup.limit_memory(job.spec.program_cgroup_mb * 1024 * 1024)

    def discard(self, started: Started) -> None:
        """Close the relay, kill and delete the sandbox, remove its bundle, free its uid. The
        sandbox stays in `_live` until all that is done, so that one whose discard failed
        (a runtime that did not answer in time) is still there for `close()` to retry."""
        assert isinstance(started, OciStarted)
        with contextlib.suppress(OSError):
            started.attached.close()
        command = self.runtime_command(started.spec.runtime)
        process = started.process
        # `ended`, not poll(): the waiter thread holds the wait, so poll() says "running".
        # A kept runc sandbox (`_keep`) needs no kill of its own: `delete --force` kills it.
        kept = _keep(started.spec.runtime)
        if process is not None and not started.ended.is_set() and not kept:
            try:
                self.call(
                    [*command, "kill", "--all", started.cid, "KILL"],
                    capture_output=True, timeout=_KILL_TIMEOUT_S, check=False,
                )  # fmt: skip
            except (OSError, subprocess.SubprocessError) as exc:  # the runtime process is
                log.warning("sandbox %s: %s kill failed: %s", started.cid, command[0], exc)
            _wait_ended(started)
        assert started.bundle is not None
        self._delete(command, started.cid, started.bundle)
        if kept:
            _wait_ended(started)
        if started.memcg is not None:
            remove_memory_cgroup(started.memcg)
        with self._lock:
            self._live.pop(started.cid, None)
        self._release_uid(started.uid, started.uid_file, started.cid)

    def _delete(self, command: list[str], cid: str, bundle: Path) -> None:
        if Path(command[0]).name == "runc" and not (Path(command[2]) / cid).exists():
            # runc's `run` deleted its container on the way out: no state is left to delete
            shutil.rmtree(bundle, ignore_errors=True)
            return
        self.call(
            [*command, "delete", "--force", cid],
            capture_output=True, timeout=_KILL_TIMEOUT_S, check=False,
        )  # fmt: skip
        shutil.rmtree(bundle, ignore_errors=True)

    # -- uids: a file per uid, created exclusively, naming the sandbox that holds it ----------

    def _claim_uid(self, cid: str) -> tuple[int, Path]:
        folder = self.run_dir / "uids"
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        for _ in range(8):
            uid = self.uids.take()
            path = folder / str(uid)
            try:
                fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
            except FileExistsError:
                self.uids.release(uid)
                continue
            try:
                os.write(fd, cid.encode())
            finally:
                os.close(fd)
            return uid, path
        raise InfraError("no free sandbox uid after 8 tries")

    def _release_uid(self, uid: int, path: Path | None, cid: str) -> None:
        if path is not None:
            _unclaim(path, cid)
        self.uids.release(uid)

    # -- what processes that died left behind ----------------------------------------------

    def bundles(self) -> list[tuple[Path, dict[str, str]]]:
        folder = self.run_dir / "bundles"
        found = []
        for bundle in sorted(folder.iterdir()) if folder.is_dir() else []:
            try:
                annotations = load_config(bundle).get("annotations") or {}
            except (OSError, ValueError):
                annotations = {}
            found.append((bundle, {str(k): str(v) for k, v in annotations.items()}))
        return found

    def _remove_bundle(self, bundle: Path, labels: dict[str, str]) -> None:
        try:
            kinds = [Runtime((bundle / "runtime").read_text().strip())]
        except (OSError, ValueError):
            kinds = list(Runtime)
        for kind in kinds:
            if runtime_binary(kind) is not None:
                command = self.runtime_command(kind)
                self.call(
                    [*command, "kill", "--all", bundle.name, "KILL"],
                    capture_output=True, timeout=_KILL_TIMEOUT_S, check=False,
                )  # fmt: skip
                self._delete(command, bundle.name, bundle)
        uid = labels.get(f"{LABEL}.uid", "")
        if uid.isdigit():
            _unclaim(self.run_dir / "uids" / uid, bundle.name)
        memcg = memory_cgroup(_cgroup(bundle.name))
        if memcg is not None:
            with contextlib.suppress(OSError):  # runc's, or one a live process is still in
                remove_memory_cgroup(memcg)
        shutil.rmtree(bundle, ignore_errors=True)

    def reap(self) -> list[str]:
        """Remove sandboxes whose owner is gone or whose deadline has passed."""
        removed = []
        for bundle, labels in self.bundles():
            if labels and abandoned(labels):
                self._remove_bundle(bundle, labels)
                removed.append(bundle.name)
        return removed

    def remove_leftovers(self, before: float, token: str) -> int:
        return 0  # no engine outage to recover from: nothing but this host runs them

    def remove_mine(self, token: str) -> int:
        """The backend's sandboxes that are left (prepared for jobs that never came, or whose
        removal failed): each is discarded again, then any bundle labelled `token`."""
        with self._lock:
            left = list(self._live.values())
        for started in left:  # sandboxes whose discard failed: the runtime process is reaped
            try:
                self.discard(started)
            except (OSError, subprocess.SubprocessError) as exc:
                log.warning("sandbox %s: could not discard it: %s", started.cid, exc)
        removed = len(left)
        for bundle, labels in self.bundles():
            if labels.get(f"{LABEL}.backend") == token:
                self._remove_bundle(bundle, labels)
                removed += 1
        return removed

    def close(self) -> None:
        self.engine.close()


def _wait_ended(started: OciStarted) -> None:
    """Wait for the runtime's `run` to end; past `_KILL_TIMEOUT_S`, kill it (its sandbox goes
    with it)."""
    if started.process is not None and not started.ended.wait(_KILL_TIMEOUT_S):
        started.process.kill()
        started.ended.wait()


def _keep(runtime: Runtime) -> tuple[str, ...]:
    """runc keeps its sandbox, and so its cgroups, after the sandbox has ended, until hazmat
    deletes it: an OOM kill that ended the whole sandbox (its first process, or the agent,
    killed) is still counted when the run reads its cgroup. runsc has no such flag; its memory
    cgroup is hazmat's own (memcg.py)."""
    return ("--keep",) if runtime is Runtime.RUNC else ()


def _cgroup(cid: str) -> str:
    """The sandbox's cgroup path (the bundle's `cgroupsPath`)."""
    return f"/hazmat/{cid}"


def _own_memory_cgroup(cid: str, config: dict[str, Any]) -> Path | None:
    """Make a runsc sandbox's memory cgroup, with the bundle's limits (memcg.py)."""
    memory = config["linux"]["resources"]["memory"]
    try:
        return make_memory_cgroup(_cgroup(cid), memory["limit"], memory["swap"])
    except OSError as exc:
        raise InfraError(f"sandbox {cid}: could not make its memory cgroup: {exc}") from None


def _unclaim(path: Path, cid: str) -> None:
    """Remove a uid's claim file if `cid` still holds it: a sandbox reaped past its deadline
    and a new one given the same uid since must not lose the new one's claim (two live
    sandboxes would then share the uid). A claim file of an older hazmat, empty, is removed."""
    try:
        holder = path.read_text()
    except FileNotFoundError:
        return
    if holder in ("", cid):
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
