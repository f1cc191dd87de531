"""Secrets that never enter the sandbox (`egress.secrets` in the policy): the allowlist proxy
adds each to the requests a run sends to its one host, in a header, over TLS it terminates
itself (egress/intercept.py); the program never holds the value.

```yaml
egress:
  secrets:
    github:                      # its name: what the audit log records, never the value
      host: api.github.com       # the one host it is sent to (a name, not a pattern)
      from_env: GITHUB_TOKEN     # read from hazmat's own environment when a run opens
      header: Authorization      # default: Authorization
      format: "Bearer {value}"   # default: "{value}"; "basic" for HTTP basic auth (user:password)
      levels: [trusted]          # the trust levels whose runs get it (required)
      tenants: [acme]            # only these tenants' runs (by their keys); default: all
```

A run gets the secrets of its trust level whose host is on its allowlist (and, for a secret
with `tenants`, only a run of one of those tenants: the service names a key's runs by their
tenant, `CALLER`); its program is told nothing but where hazmat's CA is (the proxy's
certificates for those hosts are signed by it).
"""

from __future__ import annotations

import base64
import os
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass

from hazmat._exceptions import InfraError, quoted
from hazmat.egress.rules import check_pattern

__all__ = ["CALLER", "TENANT_NAME", "HeldSecret", "Secret", "parse_secrets", "tenant_of"]

_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{0,63}")
_HEADER = re.compile(r"[A-Za-z0-9!#$%&'*+.^_`|~-]{1,64}")  # an HTTP token (RFC 9110 5.1)
_KEYS = frozenset({"host", "from_env", "header", "format", "levels", "tenants"})
# A tenant's name, and how the service names a tenant key's runs (the audit log's caller:
# service/tenant_keys.py's `Key.caller`): what a secret's `tenants` matches
TENANT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
CALLER = "tenant:{tenant} key:{key}"
_CALLER = re.compile(rf"tenant:({TENANT_NAME.pattern}) key:[0-9a-f]{{12}}")


def tenant_of(caller: str | None) -> str | None:
    """The tenant whose key made a run with `caller` (None: not a tenant key's run)."""
    found = _CALLER.fullmatch(caller or "")
    return found.group(1) if found else None


@dataclass(frozen=True)
class Secret:
    """One secret as the policy names it: where it goes and where its value is read."""

    name: str
    host: str
    from_env: str
    levels: tuple[str, ...]
    header: str = "Authorization"
    format: str = "{value}"  # or "basic"
    tenants: tuple[str, ...] = ()  # only these tenants' runs get it; (): every run's

    def for_caller(self, caller: str | None) -> bool:
        """Whether a run with `caller` gets it: any, or one of its tenants' keys' runs."""
        return not self.tenants or tenant_of(caller) in self.tenants

    def held(self) -> HeldSecret:
        """Its value, read now from hazmat's environment (`InfraError` if it is not set)."""
        value = os.environ.get(self.from_env, "")
        if not value:
            raise InfraError(
                f"egress.secrets.{self.name}: the environment variable {self.from_env} of "
                "hazmat's process is not set, so no run can be given this secret"
            )
        hidden = [value.encode()]
        if self.format == "basic":
            token = base64.b64encode(value.encode())
            shown, hidden = b"Basic " + token, [*hidden, token]
        else:
            shown = self.format.replace("{value}", value).encode()
        if any(c in shown for c in b"\r\n\0"):
            raise InfraError(f"egress.secrets.{self.name}: its value holds a line break or NUL")
        return HeldSecret(self.name, self.host, self.header, shown, (shown, *hidden))


@dataclass(frozen=True)
class HeldSecret:
    """A secret with its value, as the proxy holds it for one run's gate."""

    name: str
    host: str
    header: str
    header_value: bytes  # what the request gets
    hidden: tuple[bytes, ...]  # what is scrubbed from answers: the header's value, the value

    def __repr__(self) -> str:  # never the value, in a log or a traceback
        return f"HeldSecret({self.name!r}, host={self.host!r}, header={self.header!r})"


def parse_secrets(data: object, level_names: Collection[str]) -> tuple[Secret, ...]:
    """`egress.secrets` from the policy; ValueError(".name.key: problem") when invalid."""
    if not isinstance(data, Mapping):
        raise ValueError(f": expected a mapping of secret names, got {type(data).__name__}")
    found = []
    for name, entry in data.items():
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise ValueError(f": {quoted(name)} is not a secret's name (letters, digits, _.-)")
        found.append(_secret(name, entry, level_names))
    return tuple(found)


def _secret(name: str, entry: object, level_names: Collection[str]) -> Secret:
    if not isinstance(entry, Mapping):
        raise ValueError(f".{name}: expected a mapping, got {type(entry).__name__}")
    unknown = sorted(set(entry) - _KEYS)
    if unknown:
        raise ValueError(f".{name}.{unknown[0]}: unknown key (known: {', '.join(sorted(_KEYS))})")
    host = entry.get("host")
    if not isinstance(host, str) or "*" in host:
        raise ValueError(f".{name}.host: expected one host name, not a pattern: {quoted(host)}")
    try:
        check_pattern(host)
    except ValueError as exc:
        raise ValueError(f".{name}.host: {exc}") from None
    source = entry.get("from_env")
    if not isinstance(source, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", source):
        raise ValueError(f".{name}.from_env: expected an environment variable's name")
    header = entry.get("header", "Authorization")
    if not isinstance(header, str) or not _HEADER.fullmatch(header):
        raise ValueError(f".{name}.header: expected an HTTP header's name, got {quoted(header)}")
    shape = entry.get("format", "{value}")
    if not isinstance(shape, str) or (shape != "basic" and shape.count("{value}") != 1):
        raise ValueError(f'.{name}.format: expected "basic" or a text holding {{value}} once')
    levels = entry.get("levels")
    if not isinstance(levels, list) or not levels or not all(x in level_names for x in levels):
        known = ", ".join(level_names)
        raise ValueError(f".{name}.levels: expected a list of trust levels ({known})")
    tenants = entry.get("tenants", [])  # absent: every tenant's runs; given: never empty
    if not isinstance(tenants, list) or ("tenants" in entry and not tenants) or not all(
        isinstance(t, str) and TENANT_NAME.fullmatch(t) for t in tenants
    ):
        raise ValueError(f".{name}.tenants: expected a list of tenants' names (hazmat keys list)")
    return Secret(name, host.lower(), source, tuple(levels), header, shape, tuple(tenants))
