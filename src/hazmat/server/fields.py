"""A JSON request body to `Sandbox.run`'s arguments, within what the caller's key may ask for.

The body takes the same fields as `Sandbox.run` (docs/api.md; decoded by wire.py); bytes come
as text or, under a `_base64` name, base64. What a key may not ask for is refused with
`NotPermitted` (403): a trust level above its own, a weaker runtime than its level's, an
override without the key's leave.
The caller is always the key's tenant, never a field.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from hazmat._exceptions import InputError, NotPermitted
from hazmat.policy import Policy, Runtime, TrustLevel, parse_trust
from hazmat.tenant_keys import Key
from hazmat.wire import options_from_wire

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
MAX_DEPTH = 32  # the API's deepest body is 3 levels (files_base64: {name: data})
# a string, or what is left of one that never ends: every attempt matches at once (no retry
# from each later quote, which made an unterminated string quadratic)
_STRINGS = re.compile(rb'"[^"\\]*(?:\\.?[^"\\]*)*"?', re.DOTALL)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_ONE_KIND = bytes.maketrans(b"{}", b"[]")  # depth is the same; the decoder checks the kinds


def parse_body(body: bytes) -> dict[str, Any]:
    """The body as a JSON object, or `InputError` saying what is wrong with it: not UTF-8
    (where), not JSON (the decoder's words and position), nested too deeply, not an object.
    Its nesting is measured before it is decoded: deeper than `MAX_DEPTH` is refused (a 400,
    never the decoder's recursion error)."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"the request body is not UTF-8 (byte {exc.start}: {exc.reason}); send UTF-8 JSON"
        ) from None
    check_depth(body)
    data = _decoded(text)
    if not isinstance(data, dict):
        raise InputError(f"the request body must be a JSON object, not {type(data).__name__}")
    return data


def _decoded(text: str | bytes) -> Any:
    try:
        return json.loads(text)
    except RecursionError:  # brackets that do not match, too many to reach their error
        raise InputError(f"the request body is nested deeper than {MAX_DEPTH} levels") from None
    except ValueError as exc:
        raise InputError(f"the request body is not JSON: {exc}") from None


def check_depth(body: bytes) -> None:
    """Refuse JSON nested deeper than `MAX_DEPTH`, without decoding it, at C speed: strings are
    cut out (a bracket inside one does not count), then each pass removes the innermost pairs;
    pairs left after `MAX_DEPTH` passes are deeper than that. Brackets that do not pair up are
    no JSON: the decoder says where (it meets the first one within `MAX_DEPTH` levels, or its
    recursion limit, which is said as nesting)."""
    nul = body.find(b"\x00")
    if nul >= 0:  # UTF-16 or UTF-32, which the decoder would take: quotes fall apart
        raise InputError(
            f"the request body is not JSON: a NUL byte at byte {nul} (send UTF-8, not UTF-16 "
            "or UTF-32)"
        )
    brackets = _STRINGS.sub(b"", body).translate(_ONE_KIND, _NOT_BRACKETS)
    for _ in range(MAX_DEPTH):  # one pass removes exactly one level: the innermost pairs
        inner = brackets.replace(b"[]", b"")
        if inner == brackets:
            break  # all paired (empty), or what is left does not pair up
        brackets = inner
    else:
        if b"[]" in brackets:
            raise InputError(f"the request body is nested deeper than {MAX_DEPTH} levels")
    if brackets:
        _decoded(body)  # raises: the brackets do not match
        raise InputError("the request body is not JSON: its brackets do not match")


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
