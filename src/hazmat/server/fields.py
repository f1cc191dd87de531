"""A JSON request body to `Sandbox.run`'s arguments, within what the caller's key may ask for.

The body takes the same fields as `Sandbox.run` (docs/api.md; decoded by wire.py); bytes come
as text or, under a `_base64` name, base64. What a key may not ask for is refused with
`NotPermitted` (403): a trust level above its own, a weaker runtime than its level's, an
override without the key's leave.
The caller is always the key's tenant, never a field.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hazmat._exceptions import InputError, NotPermitted
from hazmat.json_input import MAX_DEPTH, check_depth, loads
from hazmat.policy import Policy, Runtime, TrustLevel, parse_trust
from hazmat.service.tenant_keys import Key
from hazmat.service.wire import options_from_wire

__all__ = [
    "ASSESS_FIELDS",
    "MAX_DEPTH",
    "check_depth",
    "parse_body",
    "run_arguments",
    "trust_for",
]

ASSESS_FIELDS = ("code", "language", "trust", "semgrep")
_RANK = {TrustLevel.UNTRUSTED: 0, TrustLevel.UNKNOWN: 1, TrustLevel.TRUSTED: 2}


def parse_body(body: bytes) -> dict[str, Any]:
    """The body as a JSON object, or `InputError` saying what is wrong with it: not UTF-8
    (where), not JSON (the decoder's words and position), nested too deeply, a number too
    long, a lone surrogate (which field), not an object (json_input.py: every JSON body of
    the service is decoded there)."""
    data = loads(body, "the request body")
    if not isinstance(data, dict):
        raise InputError(f"the request body must be a JSON object, not {type(data).__name__}")
    return data


def run_arguments(
    data: Mapping[str, Any], key: Key, policy: Policy
) -> tuple[Any, str, dict[str, Any]]:
    """(code, language, options) for `Sandbox.run` (wire.py decodes the body), within what the
    key may ask for, with the caller set from the key."""
    code, language, options = options_from_wire(data)
    trust = trust_for(data.get("trust"), key)
    options["trust"] = trust
    if not key.any_runtime:
        _check_runtime(options.get("runtime"), policy.settings(trust).runtime)
    if options.get("override_reason") is not None and not key.override:
        raise NotPermitted("this API key may not override a block (create it with --override)")
    options["caller"] = key.caller
    return code, language, options


def trust_for(value: object, key: Key) -> TrustLevel:
    """The trust level asked for, at most the key's own (the key's by default)."""
    if value is None:
        return key.trust
    if not isinstance(value, str):
        raise InputError(f"field 'trust' must be a string, not {type(value).__name__}")
    level = parse_trust(value)
    if _RANK[level] > _RANK[key.trust]:
        raise NotPermitted(f"this API key runs at trust {key.trust.value!r} at most, not {value!r}")
    return level


def _check_runtime(value: object, level_runtime: Runtime) -> None:
    """A caller may ask for gVisor where its level has runc, never the other way round."""
    if value == Runtime.RUNC.value and level_runtime is Runtime.RUNSC:
        raise NotPermitted("this trust level runs under runsc; a key cannot ask for runc")
