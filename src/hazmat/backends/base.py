"""The backend protocol: one required method, `execute`, plus `close()` and context management.
(The lease protocol the warm pool uses to talk to whatever starts its containers is the pool's
own: backends/pool/lease.py.)"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from hazmat._closing import Closable
from hazmat._exceptions import InfraError
from hazmat.backends.container.cpu_time import CpuLimit
from hazmat.displays import DISPLAY_FILE, display_cap
from hazmat.languages import Language, get_language
from hazmat.policy import Clock, HostResources, Limits, Runtime, TrustLevel
from hazmat.watch import Watch

__all__ = [
    "Backend",
    "Job",
    "KeptBackend",
    "Program",
    "RunReport",
    "Spec",
    "local_resources",
]


# gVisor's own memory in a sandbox's cgroup, at most, with room to spare (17-25 MB measured
# idle: docs/batch.md, "Runtimes"; backends/container/memory.py)
RUNSC_MEMORY_MB = 64


@dataclass(frozen=True)
class Spec:
    """What a container is made for. Its settings depend on nothing else, so a container
    started ahead of time for a spec can take any job with that spec (the warm pool's key)."""

    language: str
    image: str
    runtime: Runtime
    memory_mb: int
    cpus: float
    pids: int
    tmpfs_mb: int
    nofile: int
    # the host directory of the run's allowlist proxy socket (egress/proxy.py), mounted into
    # the container; such a container is made for one run and never pooled
    egress: str | None = None
    # a container kept for a session's many calls (backends/agent/session_agent.py), never pooled
    session: bool = False
    # the build step's memory when it differs from the program's (0: it does not): the
    # container starts with it and gets `memory_mb` once the build is done (a single run's,
    # not a session's: a session's container has `memory_mb` throughout)
    build_memory_mb: int = 0
    # a kept container for one submission's test cases (backends/kept/kept_build.py): built once,
    # each test a fresh process from the state right after the build; it keeps the build's budget
    kept_build: bool = False
    # a session that may install packages (hazmat/packages/): its /tmp allows exec, so that
    # the compiled extensions installed there load (noexec is hygiene, not the boundary)
    packages: bool = False
    # compiler flags after the language's own (build_flags.py, checked against the policy): the
    # build command is the container's, so a container is made for them
    build_flags: tuple[str, ...] = ()

    @property
    def exec_tmp(self) -> bool:
        """Whether /tmp allows exec: a compiled language's build, or installed packages."""
        return get_language(self.language).exec_tmp or self.packages

    @property
    def start_memory_mb(self) -> int:
        """The container's memory limit (its cgroup's) when it starts."""
        if self.build_memory_mb and (self.kept_build or not self.session):
            return self.build_memory_mb + self.runtime_memory_mb
        return self.program_cgroup_mb

    @property
    def program_cgroup_mb(self) -> int:
        """The container's memory limit (its cgroup's) while the program runs."""
        return self.memory_mb + self.runtime_memory_mb

    @property
    def runtime_memory_mb(self) -> int:
        """What the cgroup's limit adds for the runtime's own memory: under runsc a backstop
        (backends/container/memory.py: a run's and a test's memory is judged below it, a
        session's call is ended below it); under runc nothing."""
        return RUNSC_MEMORY_MB if self.runtime is Runtime.RUNSC else 0

    @classmethod
    def of(
        cls,
        language: str,
        image: str,
        runtime: Runtime,
        limits: Limits,
        egress: str | None = None,
        build_flags: tuple[str, ...] = (),
    ) -> Spec:
        lang = get_language(language)
        build = limits.build_memory_mb if lang.build else limits.memory_mb
        return cls(
            language,
            image,
            runtime,
            limits.memory_mb,
            limits.cpus,
            limits.pids,
            limits.tmpfs_mb,
            max(limits.nofile, lang.min_nofile),  # what the language needs to start
            egress,
            build_memory_mb=build if build != limits.memory_mb else 0,
            build_flags=build_flags,
        )


@dataclass(frozen=True)
class Program:
    """What a job hands the program: its input files (source first), stdin, env and args,
    and the output files wanted back with their caps. The agent's wire format for it is
    backends/agent/single.py's; nothing outside backends/ needs to know it."""

    files: Mapping[str, bytes]
    want: Sequence[str]
    stdin: bytes
    max_file_bytes: int
    nonce: str = ""  # the job's secret markers (agent/single.py): made here when not given
    env: Mapping[str, str] = field(default_factory=dict)
    args: Sequence[str] = ()
    max_total_bytes: int | None = None  # the wanted files together; None: no more than each
    # what the Python runner is asked to show (displays.py): {"max": n, "bytes": b,
    # "formats": [...]}; None: no display is asked, and the runner changes nothing
    displays: Mapping[str, Any] | None = None
    own_bytes: int = 0  # the most hazmat's own wanted files (absolute paths) may hold

    @property
    def wanted(self) -> tuple[str, ...]:
        """The files the agent collects: the caller's, then the runner's display file."""
        return (*self.want, DISPLAY_FILE) if self.displays else tuple(self.want)

    @property
    def own_cap(self) -> int:
        """The most each of hazmat's own files may hold: `own_bytes`, and the display file."""
        if not self.displays:
            return self.own_bytes
        shown = display_cap(int(self.displays["max"]), int(self.displays["bytes"]))
        return max(self.own_bytes, shown)

    @property
    def total_cap(self) -> int:
        """What the wanted files may come to together."""
        each = self.max_file_bytes * max(1, len(self.want))
        return each if self.max_total_bytes is None else min(each, self.max_total_bytes)

    def __post_init__(self) -> None:
        if not self.nonce:
            object.__setattr__(self, "nonce", secrets.token_hex(16))


@dataclass(frozen=True)
class Job:
    """A validated request, resolved against the policy: what exactly to run, and how."""

    language: Language
    image: str
    limits: Limits
    runtime: Runtime
    trust: TrustLevel
    program: Program
    egress: str | None = None  # see Spec.egress
    watch: Watch | None = field(default=None, compare=False)  # output as it comes (watch.py)
    clock: Clock = Clock.WALL  # what limits.timeout_s measures (backends/container/cpu_time.py)
    build_flags: tuple[str, ...] = ()  # see Spec.build_flags

    @property
    def spec(self) -> Spec:
        return Spec.of(
            self.language.name, self.image, self.runtime, self.limits, self.egress,
            self.build_flags,
        )  # fmt: skip

    @property
    def cpu_limit(self) -> CpuLimit | None:
        """The program's CPU-time limit, on the CPU clock."""
        return CpuLimit(self.limits.timeout_s) if self.clock is Clock.CPU else None

    @property
    def program_s(self) -> float:
        """The longest the program itself may take, in wall-clock time."""
        cpu = self.cpu_limit
        return cpu.cap_s if cpu is not None else self.limits.timeout_s

    @property
    def wall_s(self) -> float:
        """The longest the job may take: its build step's budget, then the program's."""
        build = self.limits.compile_timeout_s if self.language.build else 0.0
        return build + self.program_s


@dataclass(frozen=True)
class RunReport:
    """The facts a backend observed; `Sandbox` derives the outcome from them."""

    exit_code: int | None
    stdout: bytes
    stderr: bytes
    duration_ms: float
    program_ms: float | None = None  # the program's own wall-clock time (after any build)
    container_id: str | None = None
    timed_out: bool = False
    # on the CPU clock, why the program was stopped (backends/container/cpu_time.py): `cpu` (its CPU
    # time reached the limit, or passed it by its end), `idle` (the wall-clock backstop),
    # `busy` (the machine starved it); None: the wall clock's limit. `memory`: a session's
    # call under runsc that neared its cgroup's limit (backends/container/memory.py)
    stopped_by: str | None = None
    compile_timed_out: bool = False  # the build step ran out of its own budget
    build_status: int | None = None  # the build step's exit status (None: no build step ran)
    build_ms: float | None = None
    oom_killed: bool = False
    output_exceeded: bool = False
    cancelled: bool = False  # the caller's watch stopped the run
    # a session's call past its time (or cancelled) told to stop rather than killed: the last
    # word the host said, "interrupt" (the kept interpreter interrupted, the call's other
    # processes killed) or "kill" (the interpreter too); the session goes on when its end came
    told: str | None = None
    files: Mapping[str, bytes] = field(default_factory=lambda: MappingProxyType({}))
    displays: bytes | None = None  # the runner's display file as collected (displays.py)
    notes: tuple[str, ...] = ()
    # the program's own peak, from its cgroup on the host (backends/container/memory.py), and
    # whether it passed the program's limit (under runsc the cgroup's is a backstop above it)
    peak_memory_bytes: int | None = None
    memory_exceeded: bool = False
    cpu_time_ms: float | None = None
    pids_refused: int = 0  # forks and threads the pids limit refused during the run
    peak_tasks: int | None = None  # the most host tasks at once in the container's cgroup
    # bytes the build step left in use, more than the program may have: it did not run
    held_after_build: int | None = None
    pooled: bool | None = None  # None: the backend has no pool


class Backend(Closable):
    """Runs one `Job` in a fresh, isolated environment and reports what happened.

    Subclasses implement `execute`; they may raise `InfraError` (never for the code's own
    failures, which are facts in the report). A backend that finds a security problem outside
    any run (a pool checking a container it made) reports it to `on_security_event`.
    """

    on_security_event: Callable[[str, dict[str, Any]], None] | None = None
    keeps_containers = False  # whether `keep` works (a kept build falls back to single runs)
    one_budget = False  # a session's container: builds share the program's memory budget

    @property
    def tier(self) -> str | None:
        """What makes its sandboxes: "docker" (the engine) or "oci" (runc and runsc
        directly); None: no container (a test's fake)."""
        return None

    @property
    def fixed_runtime(self) -> Runtime | None:
        """The runtime every job runs under, whatever the job asks (a session's container,
        started already); None: each job's own."""
        return None

    def execute(self, job: Job) -> RunReport:
        raise NotImplementedError  # pragma: no cover

    def resources(self) -> HostResources:
        """What the machine running the jobs has; limits are clamped to a share of it."""
        return local_resources()

    def warm(self, spec: Spec) -> None:
        """Prepare for jobs of `spec` ahead of time, if the backend can (a pool fills)."""

    def wait_warm(self, spec: Spec, timeout_s: float) -> bool:
        """Wait until the preparation for `spec` is complete; False if it did not finish."""
        return True

    def prepare(self, job: Job) -> None:
        """A job is coming (its assessment is under way): start what it will need, if the
        backend can. Nothing of the job goes anywhere before `execute`; what `execute` does
        not use is released by `settle`."""

    def settle(self) -> None:
        """Do the housekeeping held back while a run's caller waited for its result (removing
        used containers, refilling a pool). `Sandbox` calls it once the run is recorded."""

    def keep(self, spec: Spec, lifetime_s: float) -> KeptBackend:
        """Start one container kept for a session's many calls (backends/kept/session.py), checked
        like any other; it is removed after `lifetime_s` by any reaper if nobody closes it."""
        raise InfraError(f"{type(self).__name__} cannot keep a container for a session")

    def ready_kinds(self) -> set[tuple[str, str]]:
        """The (language, runtime) pairs that have a warm container ready now."""
        return set()

    def waiting_for_core(self) -> int:
        """How many programs on the CPU clock wait for a core now (backends/container/cores.py)."""
        return 0

    def runtimes(self) -> set[str]:
        """The runtimes that can take a job now; empty while the engine does not answer."""
        return {runtime.value for runtime in Runtime}

    def reap(self) -> list[str]:
        """Remove what processes that died left behind (containers past their deadline);
        what was removed."""
        return []

    def remove_leftovers(self, before: float) -> int:
        """The engine is back after an outage: remove this process's containers made before
        `before` (time.time()), which died with it and no run can be using; how many."""
        return 0

    def close(self) -> None:
        """Release what the backend holds. Safe to call more than once."""



class KeptBackend(Backend):
    """One container kept for a session's calls (`Backend.keep`): `execute` is a call that
    runs a program, `call(job, "files")` one that only writes and reads files; `end` removes
    the container, after which every call raises `SessionClosed` saying why."""

    ended: str | None = None  # why the session's container is gone, once it is
    one_budget = True
    # a call past its time, or cancelled, is asked to stop and given this long before its
    # container is killed (the session goes on if it stops: sessions/); None: killed at once
    interrupt_grace_s: float | None = None

    @property
    def container_id(self) -> str | None:
        raise NotImplementedError  # pragma: no cover

    def call(self, job: Job, mode: str, archive: bytes = b"") -> RunReport:
        raise NotImplementedError  # pragma: no cover

    def limit_memory(self, job: Job) -> int | None:
        """Set the program's memory limit once a build is done (backends/kept/kept_build.py)."""
        return None

    def cpu_seconds(self) -> float | None:
        """The CPU time the container has used so far (None: unknown)."""
        return None

    def busy(self) -> bool:
        """Whether a call is running."""
        return False

    def end(self, why: str, now: bool = False) -> None:
        raise NotImplementedError  # pragma: no cover


def local_resources() -> HostResources:
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // (1024 * 1024)
    return HostResources(cpus=cpus or 1, memory_mb=int(memory))
