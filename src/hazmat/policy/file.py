"""Reading a policy file: YAML to a validated `Policy` (policy.py has the model and the
presets). Every error is a `PolicyError` that names the file and the key."""

from __future__ import annotations

import dataclasses
import enum
import re
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

import yaml

from hazmat._exceptions import HazmatError, PolicyError, quoted
from hazmat.egress.rules import Network
from hazmat.egress.secrets import Secret, parse_secrets
from hazmat.egress.settings import parse_network, parse_reachable
from hazmat.languages import get_language
from hazmat.policy import (
    AUDIT_BOUNDS,
    BACKENDS,
    DEFAULT_PRESET,
    DEFAULT_RUNTIME,
    POOL_BOUNDS,
    SESSION_BOUNDS,
    Action,
    AssessSettings,
    AuditSettings,
    Limits,
    Policy,
    PoolSettings,
    Runtime,
    SemgrepMode,
    SessionSettings,
    SessionTemplate,
    TrustLevel,
    TrustSettings,
    default_levels,
    number_problem,
    parse_trust,
    preset_limits,
)
from hazmat.policy.build_flags import DEFAULT_BUILD_FLAGS, check_allowlist
from hazmat.policy.packages import PackageSettings, parse_packages

__all__ = ["load_policy", "parse_policy"]


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
    known = {
        "version", "default_trust", "trust", "images", "audit", "pool", "sessions", "egress",
        "backend", "packages",
    }  # fmt: skip
    _no_unknown_keys(top, known, source, "")
    if top.get("version", 1) != 1:
        raise PolicyError(
            f"{source}: version: only version 1 is known, got {quoted(top['version'])}"
        )
    levels = dict(default_levels())
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
        sessions=_parse_sessions(top.get("sessions", {}), source),
        reachable=_parse_egress(top.get("egress", {}), source),
        secrets=_parse_secrets(top.get("egress", {}), source),
        backend=_parse_backend(top.get("backend", "auto"), source),
        packages=_parse_packages(top.get("packages", {}), source),
    )


def _parse_backend(value: object, source: str) -> str:
    if value not in BACKENDS:
        raise PolicyError(
            f"{source}: backend: expected one of {', '.join(BACKENDS)}, got {quoted(value)}"
        )
    return str(value)


def _parse_egress(data: object, source: str) -> tuple[Network, ...]:
    values = _mapping(data, source, "egress")
    _no_unknown_keys(values, {"reachable", "secrets"}, source, "egress")
    try:
        return parse_reachable(values.get("reachable", []))
    except ValueError as exc:
        raise PolicyError(f"{source}: egress.reachable{exc}") from None


def _parse_secrets(data: object, source: str) -> tuple[Secret, ...]:
    values = _mapping(data, source, "egress")
    try:
        return parse_secrets(values.get("secrets", {}), [level.value for level in TrustLevel])
    except ValueError as exc:
        raise PolicyError(f"{source}: egress.secrets{exc}") from None


def _parse_packages(data: object, source: str) -> PackageSettings:
    try:
        return parse_packages(data, [level.value for level in TrustLevel])
    except ValueError as exc:
        raise PolicyError(f"{source}: packages{exc}") from None


def _parse_pool(data: object, source: str) -> PoolSettings:
    values = dict(_mapping(data, source, "pool"))
    _no_unknown_keys(values, {f.name for f in dataclasses.fields(PoolSettings)}, source, "pool")
    _check_numbers(values, POOL_BOUNDS, PoolSettings, source, "pool")
    prewarm = values.get("prewarm", [])
    if not isinstance(prewarm, list) or not all(isinstance(x, str) for x in prewarm):
        raise PolicyError(f"{source}: pool.prewarm: expected a list of language names")
    names = [_wrap(source, "pool.prewarm", get_language, name).name for name in prewarm]
    values["prewarm"] = tuple(dict.fromkeys(names))
    return PoolSettings(**values)


def _parse_sessions(data: object, source: str) -> SessionSettings:
    values = dict(_mapping(data, source, "sessions"))
    fields = {f.name for f in dataclasses.fields(SessionSettings)}
    _no_unknown_keys(values, fields, source, "sessions")
    _check_numbers(values, SESSION_BOUNDS, SessionSettings, source, "sessions")
    if values.get("on_idle", "end") not in ("end", "pause"):
        raise PolicyError(
            f"{source}: sessions.on_idle: expected end or pause, got {quoted(values['on_idle'])}"
        )
    if not isinstance(values.get("store", ""), str | None):
        raise PolicyError(f"{source}: sessions.store: expected a directory path")
    if "templates" in values:
        values["templates"] = _parse_templates(values["templates"], source)
    return SessionSettings(**values)


TEMPLATE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def _parse_templates(data: object, source: str) -> Mapping[str, SessionTemplate]:
    """`sessions.templates`: name -> {language, image, trust} (the defaults replaced whole)."""
    found = {}
    for name, value in _mapping(data, source, "sessions.templates").items():
        where = f"sessions.templates.{name}"
        if not TEMPLATE_NAME.fullmatch(name):
            raise PolicyError(
                f"{source}: {where}: a template's name is letters, digits, '.', '_' and '-' "
                "(at most 64, a letter or digit first)"
            )
        values = _mapping(value, source, where)
        _no_unknown_keys(values, {"language", "image", "trust"}, source, where)
        language = values.get("language")
        if not isinstance(language, str):
            raise PolicyError(f"{source}: {where}.language: expected a language's name")
        lang = _wrap(source, f"{where}.language", get_language, language)
        image = values.get("image")
        if image is not None and not (isinstance(image, str) and image.strip()):
            raise PolicyError(f"{source}: {where}.image: expected an image name")
        trust = values.get("trust")
        level = None if trust is None else _choice(TrustLevel, trust, source, f"{where}.trust")
        found[name] = SessionTemplate(lang.name, image.strip() if image else None, level)
    return MappingProxyType(found)


def _check_numbers(
    values: Mapping[str, Any],
    bounds: Mapping[str, tuple[float, float]],
    kind: type,
    source: str,
    section: str,
) -> None:
    """Each bounded key is a number within its bounds (a whole one where the default is)."""
    defaults = {f.name: f.default for f in dataclasses.fields(kind)}
    for key, (low, high) in bounds.items():
        value = values.get(key)
        if value is None:
            continue
        wrong_type = isinstance(value, bool) or not isinstance(value, int | float)
        if wrong_type or (isinstance(defaults[key], int) and not isinstance(value, int)):
            raise PolicyError(f"{source}: {section}.{key}: expected a number, got {quoted(value)}")
        if not low <= value <= high:
            raise PolicyError(
                f"{source}: {section}.{key}: {quoted(value)} is outside {low:g}..{high:g}"
            )


def _parse_audit(data: object, source: str) -> AuditSettings:
    values = dict(_mapping(data, source, "audit"))
    _no_unknown_keys(values, {f.name for f in dataclasses.fields(AuditSettings)}, source, "audit")
    for key in ("dir", "anchor"):
        if key in values and (not isinstance(values[key], str) or not values[key].strip()):
            raise PolicyError(f"{source}: audit.{key}: expected a directory path")
    for key, (low, high) in AUDIT_BOUNDS.items():
        value = values.get(key)
        if value is None:
            continue
        wrong_type = isinstance(value, bool) or not isinstance(value, int | float)
        if wrong_type or (key != "checkpoint_seconds" and not isinstance(value, int)):
            raise PolicyError(f"{source}: audit.{key}: expected a number, got {quoted(value)}")
        if not low <= value <= high:
            raise PolicyError(
                f"{source}: audit.{key}: {quoted(value)} is outside {low:g}..{high:g}"
            )
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
        "build_flags",
    }
    _no_unknown_keys(values, allowed, source, where)
    base_name = values.pop("preset", DEFAULT_PRESET[level])
    base = _wrap(source, f"{where}.preset", preset_limits, base_name, "preset")
    runtime = _wrap(
        source, f"{where}.runtime", _runtime, values.pop("runtime", DEFAULT_RUNTIME[level].value)
    )
    assess = _parse_assess(values.pop("assess", {}), source, f"{where}.assess")
    images = _parse_images(values.pop("images", {}), source, f"{where}.images")
    allow = values.pop("allow_images", [])
    if not isinstance(allow, list) or not all(isinstance(x, str) and x.strip() for x in allow):
        raise PolicyError(f"{source}: {where}.allow_images: expected a list of image names")
    flags = _parse_build_flags(values.pop("build_flags", {}), source, f"{where}.build_flags")
    try:
        network = parse_network(values.pop("network", {}))
    except ValueError as exc:
        raise PolicyError(f"{source}: {where}.network{exc}") from None
    for key, value in values.items():
        problem = number_problem(key, value)
        if problem:
            raise PolicyError(f"{source}: {where}.{key}: {problem}")
    limits = base.replace(**values)
    allow_images = tuple(x.strip() for x in allow)
    return TrustSettings(limits, runtime, assess, images, allow_images, network, flags)


def _parse_build_flags(data: object, source: str, where: str) -> Mapping[str, tuple[str, ...]]:
    """A level's allowlist of compiler flags per language: each language named replaces
    hazmat's default list for it (an empty list allows none); build_flags.check_allowlist
    checks every key and flag."""
    given = _mapping(data, source, where)
    try:
        named = check_allowlist(given)
    except PolicyError as exc:
        raise PolicyError(f"{source}: {where}.{exc}") from None
    return MappingProxyType({**DEFAULT_BUILD_FLAGS, **named})


def _parse_images(data: object, source: str, where: str) -> Mapping[str, str]:
    images = _mapping(data, source, where)
    for lang, image in images.items():
        _wrap(source, f"{where}.{lang}", get_language, lang)
        if not isinstance(image, str) or not image.strip():
            raise PolicyError(
                f"{source}: {where}.{lang}: expected an image name, got {quoted(image)}"
            )
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
                f"got {quoted(value)}"
            )
        parsed["override_min_chars"] = value
    if "runtime_for" in values:
        parsed["runtime_for"] = _parse_runtime_for(values["runtime_for"], source, where)
    return AssessSettings(**parsed)


def _parse_runtime_for(data: object, source: str, where: str) -> Mapping[str, Runtime]:
    """`assess.runtime_for`: risk level (low, medium, high) -> the least runtime its code runs
    under; `{}` turns the routing off (run/routing.py)."""
    where = f"{where}.runtime_for"
    values = _mapping({} if data is None else data, source, where)
    _no_unknown_keys(values, {"low", "medium", "high"}, source, where)
    return MappingProxyType(
        {key: _wrap(source, f"{where}.{key}", _runtime, value) for key, value in values.items()}
    )


def _choice(kind: type[enum.StrEnum], value: object, source: str, where: str) -> Any:
    # YAML 1.1 reads a bare `off` as False; accept it as the word it was meant to be.
    if value is False:
        value = "off"
    try:
        return kind(value) if isinstance(value, str) else kind(str(value))
    except ValueError:
        names = ", ".join(member.value for member in kind)
        raise PolicyError(f"{source}: {where}: {quoted(value)} is not one of: {names}") from None


def _runtime(value: object) -> Runtime:
    if isinstance(value, str) and value in Runtime.__members__.values():
        return Runtime(value)
    raise PolicyError(f"unknown runtime {quoted(value)} (expected runc or runsc)")


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
            raise PolicyError(
                f"{source}: {where or 'top level'}: key {quoted(key)} is not a string"
            )
    return value


def _no_unknown_keys(value: Mapping[str, Any], allowed: set[str], source: str, where: str) -> None:
    unknown = sorted(set(value) - allowed)
    if unknown:
        prefix = f"{where}." if where else ""
        known = ", ".join(sorted(allowed))
        raise PolicyError(f"{source}: {prefix}{unknown[0]}: unknown key (known keys: {known})")
