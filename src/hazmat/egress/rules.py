"""What the allowlist proxy accepts: host names, allowlist entries, ports and addresses.

Everything here is pure and strict. A host name is ASCII letters, digits, `-` and `.` in
labels of 1-63 characters (253 in all), lower-cased, one trailing dot dropped; anything else
(NUL, control characters, `%`, `@`, spaces, brackets, an all-numeric last label such as an
IPv4 literal in any of its shorthand forms) is refused. An allowlist entry is such a name, or
`*.` and such a name, which matches every name below it but not the name itself. An address
a name resolves to must be globally routable unicast: loopback, private, link-local (cloud
metadata services), shared (CGNAT), reserved, multicast and unspecified addresses are refused,
also when embedded in an IPv6 address (IPv4-mapped, 6to4, Teredo), unless the operator lists
the range as reachable (an internal package mirror).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Sequence

from hazmat._exceptions import quoted

__all__ = [
    "Address",
    "Refused",
    "check_address",
    "check_host",
    "check_pattern",
    "covered_by",
    "matches",
]

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network

_LABEL = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$")


class Refused(Exception):
    """A connection the proxy refuses; the message is the reason, recorded in the audit log."""


def check_host(raw: str) -> str:
    """The canonical form of a host name, or Refused."""
    if any(ord(c) < 33 or ord(c) > 126 for c in raw):
        raise Refused("the host name has control, space or non-ASCII characters")
    host = raw.lower()
    host = host[:-1] if host.endswith(".") else host
    if not host or len(host) > 253:
        raise Refused("the host name is empty or too long")
    labels = host.split(".")
    if not all(_LABEL.match(label) for label in labels):
        raise Refused("not a host name (letters, digits, '-' and '.' only)")
    if labels[-1].isdigit() or re.fullmatch(r"0x[0-9a-f]*", labels[-1]):
        raise Refused("an IP address, not a host name")
    return host


def check_pattern(raw: str) -> str:
    """An allowlist entry in canonical form (`name` or `*.name`); ValueError when invalid."""
    wildcard = raw.startswith("*.")
    try:
        host = check_host(raw[2:] if wildcard else raw)
    except Refused as exc:
        raise ValueError(f"{quoted(raw)}: {exc}") from None
    if wildcard and "." not in host:
        raise ValueError(f"{quoted(raw)}: a wildcard needs a domain with at least two labels")
    return f"*.{host}" if wildcard else host


def matches(host: str, patterns: Iterable[str]) -> bool:
    """Whether a canonical host name is on the allowlist."""
    for pattern in patterns:
        if pattern.startswith("*."):
            if host.endswith(pattern[1:]):
                return True
        elif host == pattern:
            return True
    return False


def covered_by(pattern: str, patterns: Sequence[str]) -> bool:
    """Whether an entry allows nothing more than `patterns` do (a per-run list may narrow the
    policy's, never widen it)."""
    if pattern.startswith("*."):
        return any(
            (p.startswith("*.") and pattern.endswith(p[1:])) or p == pattern for p in patterns
        )
    return matches(pattern, patterns)


def _embedded(address: Address) -> list[Address]:
    if isinstance(address, ipaddress.IPv6Address):
        inner = [address.ipv4_mapped, address.sixtofour]
        inner += list(address.teredo or ())
        return [a for a in inner if a is not None]
    return []


def check_address(address: Address, reachable: Sequence[Network] = ()) -> None:
    """Refused unless `address` is globally routable unicast, or in a `reachable` range; an
    IPv4 address it embeds (mapped, 6to4, Teredo) must be public whatever `reachable` says."""
    waived = any(address in network for network in reachable)
    for candidate in (address, *_embedded(address)):
        if candidate is address and waived:
            continue
        if (
            not candidate.is_global
            or candidate.is_multicast
            or candidate.is_loopback
            or candidate.is_link_local
            or candidate.is_private
            or candidate.is_reserved
            or candidate.is_unspecified
        ):
            raise Refused(f"resolves to {address}, which is not a public address")
