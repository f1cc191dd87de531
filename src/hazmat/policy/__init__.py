"""Policy: the limits and runtime for each trust level, loaded from YAML and validated.

A policy file looks like this (every key optional)::

    default_trust: untrusted
    trust:
      untrusted:
        preset: strict        # start from a preset, then override single keys
        runtime: runsc
        assess:               # what each risk level leads to: run, warn or block
          high: block         # BLOCKED always blocks unless the caller gives a reason
          semgrep: async      # off, async (after the run) or sync (before)
      unknown:
        runtime: runc
        assess:
          runtime_for:        # the least runtime code assessed at a risk level runs under
            high: runsc       # (the default: HIGH, and BLOCKED run on an override, get gVisor)
      trusted:
        memory_mb: 1024
    images:
      python: python:3.12-slim

Unknown keys, wrong types and impossible values raise `PolicyError` naming the file and the key.
"""

from __future__ import annotations

import dataclasses
import enum
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from hazmat._exceptions import InputError, PolicyError, quoted
from hazmat.egress.rules import Network, matches
from hazmat.egress.secrets import Secret
from hazmat.egress.settings import NetworkSettings
from hazmat.policy.build_flags import DEFAULT_BUILD_FLAGS, check_allowlist
from hazmat.policy.packages import PackageSettings

__all__ = [
    "PRESETS",
    "Action",
    "AssessSettings",
    "AuditSettings",
    "Clock",
    "HostResources",
    "Limits",
    "Policy",
    "Runtime",
    "SemgrepMode",
    "TrustLevel",
    "TrustSettings",
]

MiB = 1024 * 1024


class TrustLevel(enum.StrEnum):
    """How much the code's author is trusted; each level has its own limits."""

    UNTRUSTED = "untrusted"
    UNKNOWN = "unknown"
    TRUSTED = "trusted"


class Runtime(enum.StrEnum):
    """The OCI runtime a container runs under: runc (namespaces) or runsc (gVisor)."""

    RUNC = "runc"
    RUNSC = "runsc"

    @property
    def strength(self) -> int:
        """How strong a boundary: runc (namespaces) 0, runsc (a second kernel) 1."""
        return list(Runtime).index(self)


class Clock(enum.StrEnum):
    """What a run's `timeout` measures: wall-clock time (a run, a session's call), or the CPU
    time of the program and all its processes, with wall-clock time as a backstop for a
    program that sleeps or waits (a grader's test: backends/container/cpu_time.py)."""

    WALL = "wall"
    CPU = "cpu"


# Bounds on every limit: (minimum, maximum). Values outside are refused, not clamped.
_BOUNDS: dict[str, tuple[float, float]] = {
    "memory_mb": (32, 1024 * 1024),
    "cpus": (0.01, 1024),
    "measured_cpus": (0.01, 1024),
    "pids": (8, 1_000_000),
    "timeout_s": (0.1, 24 * 3600),
    "compile_timeout_s": (0.1, 3600),
    "compile_memory_mb": (0, 1024 * 1024),
    "output_bytes": (1024, 1024 * MiB),
    "tmpfs_mb": (1, 64 * 1024),
    "max_code_bytes": (1, 64 * MiB),
    "max_file_bytes": (1, 1024 * MiB),
    "max_files": (0, 10_000),
    "max_download_bytes": (1, 4096 * MiB),
    "nofile": (16, 1_048_576),
    "max_displays": (0, 1000),
    "max_display_bytes": (0, 1024 * MiB),
    "shown_output_bytes": (256, 1024 * MiB),
}


@dataclass(frozen=True)
class Limits:
    """Resource limits for one run. Every field is validated when the object is built."""

    memory_mb: int
    cpus: float
    pids: int
    timeout_s: float
    output_bytes: int
    tmpfs_mb: int
    max_code_bytes: int
    max_file_bytes: int
    max_files: int = 64
    nofile: int = 256
    # the output files of one run or session download together, as sent (hard links count
    # once per name): bytes actually moved, not only files counted
    max_download_bytes: int = 16 * MiB
    compile_timeout_s: float = 60.0  # the build step (Go, TypeScript), before timeout_s starts
    # the build step's memory (compilers need more than most programs), at least memory_mb
    compile_memory_mb: int = 0
    # a Python run's displays (charts, tables: displays.py): how many, and their data together
    max_displays: int = 16
    max_display_bytes: int = 8 * MiB
    # the CPUs a run on the CPU clock gets (a grader's test): a whole one, so that its own
    # wall-clock time is close to its CPU time; a task may ask for less, never more
    measured_cpus: float = 1.0
    # what a model is shown of each output stream (hazmat.tools, MCP): its head and tail, with
    # a marker saying what was cut and where the whole stream is (tools/shown.py)
    shown_output_bytes: int = 16 * 1024

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            problem = number_problem(f.name, getattr(self, f.name))
            if problem:
                raise PolicyError(f"{f.name}: {problem}")

    def replace(self, **changes: Any) -> Limits:
        """A copy with some limits changed (validated like any other)."""
        return dataclasses.replace(self, **changes)

    @property
    def build_memory_mb(self) -> int:
        """The build step's memory budget: `compile_memory_mb`, never less than the program's."""
        return max(self.compile_memory_mb, self.memory_mb)

    def clamped(self, host: HostResources) -> Limits:
        """These limits, lowered where they exceed what the host can safely give."""
        memory = min(self.memory_mb, host.max_memory_mb)
        build = min(self.compile_memory_mb, host.max_memory_mb)
        cpus = min(self.cpus, float(host.cpus))
        measured = min(self.measured_cpus, float(host.cpus))
        return self.replace(
            memory_mb=memory, compile_memory_mb=build, cpus=cpus, measured_cpus=measured
        )

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


_FRACTIONAL = {"cpus", "measured_cpus", "timeout_s", "compile_timeout_s"}


def limit_bounds(name: str) -> tuple[float, float]:
    """The lowest and highest value the limit `name` may have, in any policy."""
    return _BOUNDS[name]


def number_problem(name: str, value: object) -> str | None:
    """What is wrong with `value` for the limit `name`, or None."""
    low, high = _BOUNDS[name]
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"expected a number, got {quoted(value)}"
    if name not in _FRACTIONAL and not isinstance(value, int):
        return f"expected a whole number, got {quoted(value)}"
    if not math.isfinite(value) or not low <= value <= high:
        return f"{quoted(value)} is outside the allowed range {low:g}..{high:g}"
    return None


PRESETS: Mapping[str, Limits] = MappingProxyType(
    {
        "standard": Limits(
            memory_mb=512,
            cpus=0.5,
            pids=64,
            timeout_s=30,
            output_bytes=1 * MiB,
            tmpfs_mb=64,
            max_code_bytes=256 * 1024,
            max_file_bytes=8 * MiB,
            compile_memory_mb=1024,
        ),
        "strict": Limits(
            memory_mb=256,
            cpus=0.5,
            pids=32,
            timeout_s=15,
            output_bytes=256 * 1024,
            tmpfs_mb=32,
            max_code_bytes=128 * 1024,
            max_file_bytes=1 * MiB,
            max_files=16,
            max_download_bytes=4 * MiB,
            nofile=128,
            compile_timeout_s=30.0,
            compile_memory_mb=512,
            max_displays=8,
            max_display_bytes=2 * MiB,
        ),
    }
)

DEFAULT_PRESET = {
    TrustLevel.UNTRUSTED: "strict",
    TrustLevel.UNKNOWN: "standard",
    TrustLevel.TRUSTED: "standard",
}


@dataclass(frozen=True)
class HostResources:
    """What the machine running the containers has; limits are clamped to a safe share of it."""

    cpus: int
    memory_mb: int
    memory_share: float = 0.5

    @property
    def max_memory_mb(self) -> int:
        return max(32, int(self.memory_mb * self.memory_share))


class Action(enum.StrEnum):
    """What a risk level leads to: run, run with a warning, or block."""

    RUN = "run"
    WARN = "warn"
    BLOCK = "block"


class SemgrepMode(enum.StrEnum):
    """When Semgrep runs: never, after the run (findings go to the audit log), or before."""

    OFF = "off"
    ASYNC = "async"
    SYNC = "sync"


RISK_NAMES = ("low", "medium", "high", "blocked")  # the assessment's levels, as policy keys


@dataclass(frozen=True)
class AssessSettings:
    """What a trust level does with each risk level. BLOCKED always blocks (no key for it).

    `runtime_for` maps a risk level (low, medium, high) to the least runtime code assessed at
    that level or above runs under: by default HIGH code (and BLOCKED code run on an override)
    runs under gVisor even at a level whose runtime is runc (run/routing.py)."""

    low: Action = Action.RUN
    medium: Action = Action.RUN
    high: Action = Action.WARN
    semgrep: SemgrepMode = SemgrepMode.OFF
    override_min_chars: int = 20
    runtime_for: Mapping[str, Runtime] = field(
        default_factory=lambda: MappingProxyType({"high": Runtime.RUNSC})
    )

    def action(self, level: str) -> Action:
        """The action for a risk level name (LOW, MEDIUM, HIGH, BLOCKED)."""
        key = str(level).lower()
        if key == "blocked":
            return Action.BLOCK
        return Action(getattr(self, key))

    def least_runtime(self, level: str) -> tuple[Runtime, str] | None:
        """The strongest runtime `runtime_for` asks of code at risk level `level` (LOW ..
        BLOCKED; an entry covers its level and those above it), with the entry's key; None
        when it asks none."""
        rank = RISK_NAMES.index(str(level).lower())
        found = [
            (runtime, key)
            for key, runtime in self.runtime_for.items()
            if RISK_NAMES.index(key) <= rank
        ]
        return max(found, key=lambda pair: pair[0].strength, default=None)


@dataclass(frozen=True)
class TrustSettings:
    """What one trust level gets: its limits, runtime and what its assessment leads to."""

    limits: Limits
    runtime: Runtime = Runtime.RUNC
    assess: AssessSettings = field(default_factory=AssessSettings)
    # language -> the image its runs get at this level (over the policy's top-level `images`)
    images: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    # images a caller may choose per run at this level, beyond the default and hazmat's own
    # variants of the language's image (python-data for python): see run/image_choice.py
    allow_images: tuple[str, ...] = ()
    network: NetworkSettings = field(default_factory=NetworkSettings)  # egress/settings.py
    # language -> the compiler flags a run may ask for at this level (build_flags.py): every
    # key a language that takes flags (an alias is kept under the language's name), every flag
    # one hazmat may pass, checked here however the settings were made
    build_flags: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: DEFAULT_BUILD_FLAGS)

    def __post_init__(self) -> None:
        if not isinstance(self.build_flags, Mapping):
            raise PolicyError(
                f"build_flags: expected a mapping, got {type(self.build_flags).__name__}"
            )
        try:
            checked = check_allowlist(self.build_flags)
        except PolicyError as exc:
            raise PolicyError(f"build_flags.{exc}") from None
        object.__setattr__(self, "build_flags", checked)  # frozen: set here only


# gVisor for code nobody trusts: a second kernel between the program and the host's. It
# costs a little on the warm path (docs/benchmarks.md); where runsc is not registered, runs
# at this level fail closed until the policy says `runtime: runc` (docs/security.md).
DEFAULT_RUNTIME = {
    TrustLevel.UNTRUSTED: Runtime.RUNSC,
    TrustLevel.UNKNOWN: Runtime.RUNC,
    TrustLevel.TRUSTED: Runtime.RUNC,
}


def default_levels() -> Mapping[TrustLevel, TrustSettings]:
    return MappingProxyType(
        {
            level: TrustSettings(PRESETS[name], runtime=DEFAULT_RUNTIME[level])
            for level, name in DEFAULT_PRESET.items()
        }
    )


@dataclass(frozen=True)
class AuditSettings:
    """Where the audit log lives and how it behaves (see docs/audit.md)."""

    dir: str | None = None  # default: $HAZMAT_AUDIT_DIR, else $XDG_STATE_HOME/hazmat/audit
    anchor: str | None = None  # a directory (another volume) that receives checkpoint copies
    checkpoint_every: int = 1000
    checkpoint_seconds: float = 10.0
    segment_records: int = 10_000
    keep_segments: int | None = None  # None: keep every segment
    code_cap: int = 64 * 1024  # bytes of code stored in each run record


AUDIT_BOUNDS = {
    "checkpoint_every": (1, 10**9),
    "checkpoint_seconds": (0.001, 86_400),
    "segment_records": (10, 10**9),
    "keep_segments": (1, 10**9),
    "code_cap": (0, 64 * MiB),
}


@dataclass(frozen=True)
class PoolSettings:
    """The warm pool: containers started ahead of time, each for exactly one run.

    `size` containers are kept ready per kind (language, image, limits, runtime) to begin
    with, and up to `max_size` when its runs find none ready (backends/pool/sizing.py), at most
    `max_containers` in all; `refill_concurrency` are started at once; a ready container older
    than `max_age_s` is replaced. `prewarm` names languages whose pool (for the default trust
    level) fills when the sandbox opens; any other kind fills after its first run. The
    per-user local server that keeps a pool warm for `hazmat run` (cli/local_server.py) stops
    after `server_idle_s` without a request.
    """

    size: int = 2
    max_size: int = 8
    refill_concurrency: int = 2
    max_age_s: float = 300.0
    max_containers: int = 16
    prewarm: tuple[str, ...] = ()
    server_idle_s: float = 600.0


POOL_BOUNDS = {
    "size": (0, 64),
    "max_size": (0, 256),
    "refill_concurrency": (1, 32),
    "max_age_s": (1, 86_400),
    "max_containers": (0, 1024),
    "server_idle_s": (1, 86_400),
}


@dataclass(frozen=True)
class SessionTemplate:
    """A named way to open a session (`sessions.templates`): its language, its image (None:
    the level's for the language), and its trust level (None: the caller's key's). A front-end
    whose clients name templates (E2B's SDK, server/protocols/e2b.py) opens sessions by it; the
    caller's key stays the ceiling (a template cannot raise a level)."""

    language: str
    image: str | None = None
    trust: TrustLevel | None = None


# E2B's SDKs' own template names: its code interpreter's default and its base sandbox
DEFAULT_TEMPLATES: Mapping[str, SessionTemplate] = MappingProxyType(
    {
        "code-interpreter-v1": SessionTemplate("python", "python-data"),
        "base": SessionTemplate("bash"),
    }
)


@dataclass(frozen=True)
class SessionSettings:
    """Sessions: a container kept between calls (sessions/).

    A call that runs past its time limit (or is cancelled) is interrupted and the session goes
    on; if it has not stopped `interrupt_grace_s` later its processes are all ended, the kept
    interpreter's too (the files stay, the variables go), and if even that has not ended it
    another `interrupt_grace_s` later, the session ends with its container.
    A session ends `idle_s` seconds after its last call, `lifetime_s` after it opened, or
    once its container has used `cpu_s` seconds of CPU in all, whichever comes first; at most
    `max_open` are open at once per Sandbox. An idle one is paused instead when `on_idle` is
    "pause"; a paused session is kept `keep_paused_s` in `store`. Memory, pids and the tmpfs
    are the trust level's limits, for the whole session.
    """

    idle_s: float = 300.0
    lifetime_s: float = 3600.0
    cpu_s: float = 600.0
    max_open: int = 8
    # what an idle session becomes: "end" (its container removed, nothing kept) or "pause"
    # (its files, and what can be saved of Python's variables, kept for resume: sessions/)
    on_idle: str = "end"
    keep_paused_s: float = 7 * 86_400.0  # how long a paused session is kept
    store: str | None = None  # where: default $HAZMAT_SESSIONS_DIR, else the state directory
    interrupt_grace_s: float = 2.0
    # names a front-end's clients open sessions by (E2B's templates): SessionTemplate
    templates: Mapping[str, SessionTemplate] = field(default_factory=lambda: DEFAULT_TEMPLATES)


SESSION_BOUNDS = {
    "idle_s": (1, 86_400),
    "lifetime_s": (1, 7 * 86_400),
    "cpu_s": (1, 7 * 86_400),
    "max_open": (0, 1024),
    "keep_paused_s": (60, 90 * 86_400),
    "interrupt_grace_s": (0.1, 60),
}


BACKENDS = ("auto", "docker", "oci")


@dataclass(frozen=True)
class Policy:
    """Limits and runtime per trust level, plus image overrides per language."""

    levels: Mapping[TrustLevel, TrustSettings] = field(default_factory=default_levels)
    images: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    audit: AuditSettings = field(default_factory=AuditSettings)
    default_trust: TrustLevel = TrustLevel.UNTRUSTED
    source: str = "<built-in>"
    pool: PoolSettings = field(default_factory=PoolSettings)
    sessions: SessionSettings = field(default_factory=SessionSettings)
    # non-public ranges the allowlist proxy may connect to (`egress.reachable`: a mirror)
    reachable: tuple[Network, ...] = ()
    # what makes the containers: "docker" (the engine), "oci" (runc and runsc directly, from
    # bundles over prepared root file systems: backends/oci/driver.py), or "auto": the OCI
    # tier where its prerequisites hold, else Docker (backends/oci/prerequisites.py)
    backend: str = "auto"
    # which sessions may install packages, from which index (policy/packages.py)
    packages: PackageSettings = field(default_factory=PackageSettings)
    # secrets the allowlist proxy adds to requests for their hosts (`egress.secrets`)
    secrets: tuple[Secret, ...] = ()

    def __post_init__(self) -> None:
        if self.backend not in BACKENDS:
            raise PolicyError(
                f"{self.source}: backend: expected one of {', '.join(BACKENDS)}, "
                f"got {quoted(self.backend)}"
            )
        missing = set(TrustLevel) - set(self.levels)
        if missing:
            names = ", ".join(sorted(level.value for level in missing))
            raise PolicyError(f"{self.source}: trust levels missing: {names}")

    def settings(self, trust: TrustLevel | str) -> TrustSettings:
        return self.levels[parse_trust(trust)]

    def secrets_for(
        self, trust: TrustLevel | str, allow: Sequence[str], caller: str | None = None
    ) -> list[Secret]:
        """The secrets a run at `trust` with the allowlist `allow` gets: its level's, for a
        host on its list, and of a secret bound to tenants only a run of theirs (`caller`, as
        the service names a key's runs: egress/secrets.py)."""
        level = parse_trust(trust).value
        return [
            s
            for s in self.secrets
            if level in s.levels and matches(s.host, allow) and s.for_caller(caller)
        ]

    def longest_run_s(self) -> float:
        """The longest a run may take under this policy: a timeout plus its compile budget."""
        return max(s.limits.timeout_s + s.limits.compile_timeout_s for s in self.levels.values())

    @classmethod
    def preset(cls, name: str) -> Policy:
        """A policy that gives every trust level the same preset (`standard` or `strict`)."""
        limits = preset_limits(name, "preset")
        levels = {level: TrustSettings(limits) for level in TrustLevel}
        return cls(levels=MappingProxyType(levels), source=f"<preset {name}>")


def parse_trust(value: TrustLevel | str) -> TrustLevel:
    """The trust level named by `value`; an unknown name is an `InputError`."""
    try:
        return TrustLevel(value)
    except ValueError:
        names = ", ".join(level.value for level in TrustLevel)
        raise InputError(
            f"unknown trust level {quoted(value)} (expected one of: {names})"
        ) from None


def preset_limits(name: object, key: str) -> Limits:
    if not isinstance(name, str) or name not in PRESETS:
        raise PolicyError(f"unknown {key} {quoted(name)} (expected one of: {', '.join(PRESETS)})")
    return PRESETS[name]
