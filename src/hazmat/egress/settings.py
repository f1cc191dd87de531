"""The network a trust level allows (`trust.<level>.network` in the policy), and the narrower
list a single run may ask for.

```yaml
trust:
  trusted:
    network:
      allow: [files.example.org, "*.example.net"]   # default: [] (no network at all)
      ports: [443]                                  # default: [443]
```

A run may name its own list (`network=[...]`, `--allow-host`), each entry covered by the
level's list: a caller can narrow the policy, never widen it.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass

from hazmat._exceptions import quoted
from hazmat.egress.rules import Network, check_pattern, covered_by

__all__ = ["NetworkSettings", "narrowed", "parse_network", "parse_reachable"]


@dataclass(frozen=True)
class NetworkSettings:
    allow: tuple[str, ...] = ()
    ports: tuple[int, ...] = (443,)

    def to_dict(self) -> dict[str, list[str] | list[int]]:
        return {"allow": list(self.allow), "ports": list(self.ports)}


def parse_network(data: object) -> NetworkSettings:
    """Settings from the policy's mapping; ValueError("key: problem") when invalid."""
    if not isinstance(data, dict):
        raise ValueError(f": expected a mapping, got {type(data).__name__}")
    unknown = sorted(set(data) - {"allow", "ports"})
    if unknown:
        raise ValueError(f".{unknown[0]}: unknown key (known keys: allow, ports)")
    allow = data.get("allow", [])
    if not isinstance(allow, list) or not all(isinstance(x, str) for x in allow):
        raise ValueError(".allow: expected a list of host names")
    patterns = []
    for i, entry in enumerate(allow):
        try:
            patterns.append(check_pattern(entry))
        except ValueError as exc:
            raise ValueError(f".allow[{i}]: {exc}") from None
    ports = data.get("ports", [443])
    if (
        not isinstance(ports, list)
        or not ports
        or not all(isinstance(p, int) and not isinstance(p, bool) and 0 < p < 65536 for p in ports)
    ):
        raise ValueError(".ports: expected a non-empty list of port numbers 1..65535")
    return NetworkSettings(tuple(dict.fromkeys(patterns)), tuple(dict.fromkeys(ports)))


def narrowed(settings: NetworkSettings, requested: Sequence[str] | None) -> tuple[str, ...]:
    """The allowlist of one run: the level's, or the caller's narrower one. ValueError names
    an entry the level does not cover."""
    if requested is None:
        return settings.allow
    if isinstance(requested, str) or not isinstance(requested, Sequence):
        raise ValueError(f"network must be a list of host names, not {quoted(requested)}")
    chosen = []
    for entry in requested:
        if not isinstance(entry, str):
            raise ValueError(f"network entries are host names, not {quoted(entry)}")
        pattern = check_pattern(entry)
        if not covered_by(pattern, settings.allow):
            allowed = ", ".join(settings.allow) or "none"
            raise ValueError(
                f"network host {quoted(entry)} is not allowed at this trust level "
                f"(allowed: {allowed})"
            )
        chosen.append(pattern)
    return tuple(dict.fromkeys(chosen))


_NEVER: dict[str, tuple[Network, ...]] = {
    kind: tuple(ipaddress.ip_network(n) for n in nets)
    for kind, nets in {
        "loopback": ("127.0.0.0/8", "::1/128"),
        "link-local": ("169.254.0.0/16", "fe80::/10"),  # cloud metadata lives there
        "unspecified": ("0.0.0.0/8", "::/128"),
        "multicast": ("224.0.0.0/4", "ff00::/8"),
        # spellings of any IPv4 address (loopback and metadata among them)
        "IPv4-mapped": ("::ffff:0:0/96",),
        "6to4": ("2002::/16",),
        "NAT64": ("64:ff9b::/96", "64:ff9b:1::/48"),
        "Teredo": ("2001::/32",),
        "cloud metadata": ("fd00:ec2::254/128", "100.100.100.200/32"),  # AWS IPv6, Alibaba
    }.items()
}


def parse_reachable(data: object) -> tuple[Network, ...]:
    """The policy's `egress.reachable`: address ranges the operator declares reachable through
    the proxy although they are not public (an internal package mirror, `10.20.0.0/16`).
    Loopback, link-local (cloud metadata), multicast and unspecified ranges never are, nor the
    IPv6 forms that embed an IPv4 address, nor known metadata addresses: the proxy runs on the
    host. ValueError("key: problem") when invalid."""
    if not isinstance(data, list) or not all(isinstance(x, str) for x in data):
        raise ValueError(": expected a list of address ranges (10.20.0.0/16, fd00::/8)")
    ranges = []
    for i, text in enumerate(data):
        try:
            network = ipaddress.ip_network(text, strict=True)
        except ValueError as exc:
            raise ValueError(f"[{i}]: {exc}") from None
        for kind, forbidden in _NEVER.items():
            if any(network.overlaps(f) for f in forbidden if f.version == network.version):
                raise ValueError(f"[{i}]: {text} takes in {kind} addresses: never reachable")
        ranges.append(network)
    return tuple(dict.fromkeys(ranges))
