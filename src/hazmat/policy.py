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
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

import yaml

from hazmat._exceptions import HazmatError, InputError, PolicyError
from hazmat.egress.settings import NetworkSettings, parse_network
from hazmat.languages import get_language

__all__ = [
    "PRESETS",
    "Action",
    "AssessSettings",
    "AuditSettings",
    "HostResources",
    "Limits",
    "Policy",
    "Runtime",
    "SemgrepMode",
    "TrustLevel",
    "TrustSettings",
    "load_policy",
    "parse_policy",
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


# Bounds on every limit: (minimum, maximum). Values outside are refused, not clamped.
_BOUNDS: dict[str, tuple[float, float]] = {
    "memory_mb": (32, 1024 * 1024),
    "cpus": (0.01, 1024),
    "pids": (8, 1_000_000),
    "timeout_s": (0.1, 24 * 3600),
    "compile_timeout_s": (0.1, 3600),
    "output_bytes": (1024, 1024 * MiB),
    "tmpfs_mb": (1, 64 * 1024),
    "max_code_bytes": (1, 64 * MiB),
    "max_file_bytes": (1, 1024 * MiB),
    "max_files": (0, 10_000),
    "nofile": (16, 1_048_576),
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
    compile_timeout_s: float = 60.0  # the build step (Go, TypeScript), before timeout_s starts

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            problem = _number_problem(f.name, getattr(self, f.name))
            if problem:
                raise PolicyError(f"{f.name}: {problem}")

    def replace(self, **changes: Any) -> Limits:
        """A copy with some limits changed (validated like any other)."""
        return dataclasses.replace(self, **changes)

    def clamped(self, host: HostResources) -> Limits:
        """These limits, lowered where they exceed what the host can safely give."""
        memory = min(self.memory_mb, host.max_memory_mb)
        cpus = min(self.cpus, float(host.cpus))
        return self.replace(memory_mb=memory, cpus=cpus)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


_FRACTIONAL = {"cpus", "timeout_s", "compile_timeout_s"}


def _number_problem(name: str, value: object) -> str | None:
    """What is wrong with `value` for the limit `name`, or None."""
    low, high = _BOUNDS[name]
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"expected a number, got {value!r}"
    if name not in _FRACTIONAL and not isinstance(value, int):
        return f"expected a whole number, got {value!r}"
    if not math.isfinite(value) or not low <= value <= high:
        return f"{value!r} is outside the allowed range {low:g}..{high:g}"
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
            nofile=128,
            compile_timeout_s=30.0,
        ),
    }
)

_DEFAULT_PRESET = {
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


@dataclass(frozen=True)
class AssessSettings:
    """What a trust level does with each risk level. BLOCKED always blocks (no key for it)."""

    low: Action = Action.RUN
    medium: Action = Action.RUN
    high: Action = Action.WARN
    semgrep: SemgrepMode = SemgrepMode.OFF
    override_min_chars: int = 20

    def action(self, level: str) -> Action:
        """The action for a risk level name (LOW, MEDIUM, HIGH, BLOCKED)."""
        key = str(level).lower()
        if key == "blocked":
            return Action.BLOCK
        return Action(getattr(self, key))


@dataclass(frozen=True)
class TrustSettings:
    """What one trust level gets: its limits, runtime and what its assessment leads to."""

    limits: Limits
    runtime: Runtime = Runtime.RUNC
    assess: AssessSettings = field(default_factory=AssessSettings)
    # language -> the image its runs get at this level (over the policy's top-level `images`)
    images: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    # images a caller may choose per run at this level, beyond the default and hazmat's own
    # variants of the language's image (python-data for python): see image_choice.py
    allow_images: tuple[str, ...] = ()
    network: NetworkSettings = field(default_factory=NetworkSettings)  # egress/settings.py


# gVisor for code nobody trusts: a second kernel between the program and the host's. It
# costs a little on the warm path (docs/benchmarks.md); where runsc is not registered, runs
# at this level fail closed until the policy says `runtime: runc` (docs/security.md).
_DEFAULT_RUNTIME = {
    TrustLevel.UNTRUSTED: Runtime.RUNSC,
    TrustLevel.UNKNOWN: Runtime.RUNC,
    TrustLevel.TRUSTED: Runtime.RUNC,
}


def _default_levels() -> Mapping[TrustLevel, TrustSettings]:
    return MappingProxyType(
        {
            level: TrustSettings(PRESETS[name], runtime=_DEFAULT_RUNTIME[level])
            for level, name in _DEFAULT_PRESET.items()
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


_AUDIT_BOUNDS = {
    "checkpoint_every": (1, 10**9),
    "checkpoint_seconds": (0.001, 86_400),
    "segment_records": (10, 10**9),
    "keep_segments": (1, 10**9),
    "code_cap": (0, 64 * MiB),
}


@dataclass(frozen=True)
class PoolSettings:
    """The warm pool: containers started ahead of time, each for exactly one run.

    `size` containers are kept ready per kind (language, image, limits, runtime), at most
    `max_containers` in all; `refill_concurrency` are started at once; a ready container older
    than `max_age_s` is replaced. `prewarm` names languages whose pool (for the default trust
    level) fills when the sandbox opens; any other kind fills after its first run.
    """

    size: int = 2
    refill_concurrency: int = 2
    max_age_s: float = 300.0
    max_containers: int = 16
    prewarm: tuple[str, ...] = ()


_POOL_BOUNDS = {
    "size": (0, 64),
    "refill_concurrency": (1, 32),
    "max_age_s": (1, 86_400),
    "max_containers": (0, 1024),
}


@dataclass(frozen=True)
class Policy:
    """Limits and runtime per trust level, plus image overrides per language."""

    levels: Mapping[TrustLevel, TrustSettings] = field(default_factory=_default_levels)
    images: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    audit: AuditSettings = field(default_factory=AuditSettings)
    default_trust: TrustLevel = TrustLevel.UNTRUSTED
    source: str = "<built-in>"
    pool: PoolSettings = field(default_factory=PoolSettings)

    def __post_init__(self) -> None:
        missing = set(TrustLevel) - set(self.levels)
        if missing:
            names = ", ".join(sorted(level.value for level in missing))
            raise PolicyError(f"{self.source}: trust levels missing: {names}")

    def settings(self, trust: TrustLevel | str) -> TrustSettings:
        return self.levels[parse_trust(trust)]

    @classmethod
    def preset(cls, name: str) -> Policy:
        """A policy that gives every trust level the same preset (`standard` or `strict`)."""
        limits = _preset(name, "preset")
        levels = {level: TrustSettings(limits) for level in TrustLevel}
        return cls(levels=MappingProxyType(levels), source=f"<preset {name}>")


def parse_trust(value: TrustLevel | str) -> TrustLevel:
    """The trust level named by `value`; an unknown name is an `InputError`."""
    try:
        return TrustLevel(value)
    except ValueError:
        names = ", ".join(level.value for level in TrustLevel)
        raise InputError(f"unknown trust level {value!r} (expected one of: {names})") from None


def load_policy(path: str | Path) -> Policy:
    """Read and validate a YAML policy file."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PolicyError(f"{path}: cannot read policy file: {exc}") from exc
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise PolicyError(f"{path}: not valid YAML: {exc}") from exc
    return parse_policy({} if data is None else data, source=str(path))


def parse_policy(data: object, source: str = "<policy>") -> Policy:
    """Validate a policy given as plain data (what `yaml.safe_load` returns)."""
    top = _mapping(data, source, "")
    known = {"version", "default_trust", "trust", "images", "audit", "pool"}
    _no_unknown_keys(top, known, source, "")
    if top.get("version", 1) != 1:
        raise PolicyError(f"{source}: version: only version 1 is known, got {top['version']!r}")
    levels = dict(_default_levels())
    trust = _mapping(top.get("trust", {}), source, "trust")
    for key, value in trust.items():
        level = _wrap(source, f"trust.{key}", parse_trust, key)
        levels[level] = _parse_level(value, level, source)
    images = _parse_images(top.get("images", {}), source, "images")
    default = _wrap(source, "default_trust", parse_trust, top.get("default_trust", "untrusted"))
    return Policy(
        levels=MappingProxyType(levels),
        images=images,
        audit=_parse_audit(top.get("audit", {}), source),
        default_trust=default,
        source=source,
        pool=_parse_pool(top.get("pool", {}), source),
    )


def _parse_pool(data: object, source: str) -> PoolSettings:
    values = dict(_mapping(data, source, "pool"))
    _no_unknown_keys(values, {f.name for f in dataclasses.fields(PoolSettings)}, source, "pool")
    for key, (low, high) in _POOL_BOUNDS.items():
        value = values.get(key)
        if value is None:
            continue
        wrong_type = isinstance(value, bool) or not isinstance(value, int | float)
        if wrong_type or (key != "max_age_s" and not isinstance(value, int)):
            raise PolicyError(f"{source}: pool.{key}: expected a number, got {value!r}")
        if not low <= value <= high:
            raise PolicyError(f"{source}: pool.{key}: {value!r} is outside {low:g}..{high:g}")
    prewarm = values.get("prewarm", [])
    if not isinstance(prewarm, list) or not all(isinstance(x, str) for x in prewarm):
        raise PolicyError(f"{source}: pool.prewarm: expected a list of language names")
    names = [_wrap(source, "pool.prewarm", get_language, name).name for name in prewarm]
    values["prewarm"] = tuple(dict.fromkeys(names))
    return PoolSettings(**values)


def _parse_audit(data: object, source: str) -> AuditSettings:
    values = dict(_mapping(data, source, "audit"))
    _no_unknown_keys(values, {f.name for f in dataclasses.fields(AuditSettings)}, source, "audit")
    for key in ("dir", "anchor"):
        if key in values and (not isinstance(values[key], str) or not values[key].strip()):
            raise PolicyError(f"{source}: audit.{key}: expected a directory path")
    for key, (low, high) in _AUDIT_BOUNDS.items():
        value = values.get(key)
        if value is None:
            continue
        wrong_type = isinstance(value, bool) or not isinstance(value, int | float)
        if wrong_type or (key != "checkpoint_seconds" and not isinstance(value, int)):
            raise PolicyError(f"{source}: audit.{key}: expected a number, got {value!r}")
        if not low <= value <= high:
            raise PolicyError(f"{source}: audit.{key}: {value!r} is outside {low:g}..{high:g}")
    return AuditSettings(**values)


def _parse_level(data: object, level: TrustLevel, source: str) -> TrustSettings:
    where = f"trust.{level.value}"
    values = dict(_mapping(data, source, where))
    allowed = {f.name for f in dataclasses.fields(Limits)} | {
        "preset",
        "runtime",
        "assess",
        "images",
        "allow_images",
        "network",
    }
    _no_unknown_keys(values, allowed, source, where)
    base_name = values.pop("preset", _DEFAULT_PRESET[level])
    base = _wrap(source, f"{where}.preset", _preset, base_name, "preset")
    runtime = _wrap(
        source, f"{where}.runtime", _runtime, values.pop("runtime", _DEFAULT_RUNTIME[level].value)
    )
    assess = _parse_assess(values.pop("assess", {}), source, f"{where}.assess")
    images = _parse_images(values.pop("images", {}), source, f"{where}.images")
    allow = values.pop("allow_images", [])
    if not isinstance(allow, list) or not all(isinstance(x, str) and x.strip() for x in allow):
        raise PolicyError(f"{source}: {where}.allow_images: expected a list of image names")
    try:
        network = parse_network(values.pop("network", {}))
    except ValueError as exc:
        raise PolicyError(f"{source}: {where}.network{exc}") from None
    for key, value in values.items():
        problem = _number_problem(key, value)
        if problem:
            raise PolicyError(f"{source}: {where}.{key}: {problem}")
    limits = base.replace(**values)
    allow_images = tuple(x.strip() for x in allow)
    return TrustSettings(limits, runtime, assess, images, allow_images, network)


def _parse_images(data: object, source: str, where: str) -> Mapping[str, str]:
    images = _mapping(data, source, where)
    for lang, image in images.items():
        _wrap(source, f"{where}.{lang}", get_language, lang)
        if not isinstance(image, str) or not image.strip():
            raise PolicyError(f"{source}: {where}.{lang}: expected an image name, got {image!r}")
    return MappingProxyType({get_language(k).name: v.strip() for k, v in images.items()})


def _parse_assess(data: object, source: str, where: str) -> AssessSettings:
    values = dict(_mapping(data, source, where))
    _no_unknown_keys(values, {f.name for f in dataclasses.fields(AssessSettings)}, source, where)
    parsed: dict[str, Any] = {}
    for key in ("low", "medium", "high"):
        if key in values:
            parsed[key] = _choice(Action, values[key], source, f"{where}.{key}")
    if "semgrep" in values:
        parsed["semgrep"] = _choice(SemgrepMode, values["semgrep"], source, f"{where}.semgrep")
    if "override_min_chars" in values:
        value = values["override_min_chars"]
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 10_000:
            raise PolicyError(
                f"{source}: {where}.override_min_chars: expected a whole number 1..10000, "
                f"got {value!r}"
            )
        parsed["override_min_chars"] = value
    return AssessSettings(**parsed)


def _choice(kind: type[enum.StrEnum], value: object, source: str, where: str) -> Any:
    # YAML 1.1 reads a bare `off` as False; accept it as the word it was meant to be.
    if value is False:
        value = "off"
    try:
        return kind(value) if isinstance(value, str) else kind(str(value))
    except ValueError:
        names = ", ".join(member.value for member in kind)
        raise PolicyError(f"{source}: {where}: {value!r} is not one of: {names}") from None


def _preset(name: object, key: str) -> Limits:
    if not isinstance(name, str) or name not in PRESETS:
        raise PolicyError(f"unknown {key} {name!r} (expected one of: {', '.join(PRESETS)})")
    return PRESETS[name]


def _runtime(value: object) -> Runtime:
    if isinstance(value, str) and value in Runtime.__members__.values():
        return Runtime(value)
    raise PolicyError(f"unknown runtime {value!r} (expected runc or runsc)")


def _wrap(source: str, where: str, func: Any, *args: Any) -> Any:
    """Call a validator, turning its error into a PolicyError that names the file and key."""
    try:
        return func(*args)
    except HazmatError as exc:
        raise PolicyError(f"{source}: {where}: {exc}") from None


def _mapping(value: object, source: str, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        label = where or "top level"
        raise PolicyError(f"{source}: {label}: expected a mapping, got {type(value).__name__}")
    for key in value:
        if not isinstance(key, str):
            raise PolicyError(f"{source}: {where or 'top level'}: key {key!r} is not a string")
    return value


def _no_unknown_keys(value: Mapping[str, Any], allowed: set[str], source: str, where: str) -> None:
    unknown = sorted(set(value) - allowed)
    if unknown:
        prefix = f"{where}." if where else ""
        known = ", ".join(sorted(allowed))
        raise PolicyError(f"{source}: {prefix}{unknown[0]}: unknown key (known keys: {known})")
