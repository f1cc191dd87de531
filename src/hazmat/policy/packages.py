"""Which sessions may install packages, from where, and how much (`packages` in the policy).

```yaml
packages:
  levels: [trusted, unknown]          # the trust levels whose sessions may install; default none
  python:
    index: https://pypi.mirror.example/simple/   # pip's index (https); default: none
    hosts: [files.mirror.example]     # more hosts the index sends pip to for its files
  npm:
    registry: https://npm.mirror.example/        # npm's registry (https); default: none
    hosts: []                         # more hosts its packuments send npm to for tarballs
  ca_bundle: /etc/ssl/certs/corp.pem  # CA certificates for an index behind TLS interception
  trial_index: false                  # true: the index may be http:// on this machine's loopback
  max_mb: 200                         # the files of one install, all together
  max_packages: 30                    # names asked in one install, and files downloaded
  timeout_s: 120                      # the download's time, and the install's in the session
  memory_mb: 256                      # pip's or npm's memory in the download sandbox
  cache: /var/cache/hazmat/packages   # the host's cache of downloaded files, by hash
```

Installing is off unless `levels` and an index are given: an operator names the index its
sessions may use (hazmat names none). Python sessions install from `python.index`,
JavaScript and TypeScript sessions from `npm.registry`. The download runs in a sandbox of its
own with the index's hosts as its only network, through the allowlist proxy (hazmat/packages/).

For a trial on one machine (a `pypiserver` or `verdaccio` beside hazmat), `trial_index: true`
lets the index or registry be an `http://` URL on the host's loopback (`localhost`,
`127.0.0.1`, `[::1]`): the proxy then forwards plain HTTP requests for that one origin, and
only those, to the loopback address (docs/security.md, "A trial index"). Off by default;
`hazmat doctor --policy` says when it is on. Never for a service others use: anything on that
port of the host is then reachable from a download's sandbox.
"""

from __future__ import annotations

import ipaddress
import urllib.parse
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hazmat._cache import cache_folder
from hazmat._exceptions import quoted
from hazmat.egress.rules import check_pattern
from hazmat.egress.trial import loopback_address

__all__ = ["PackageSettings", "Source", "parse_packages"]

BOUNDS = {
    "max_mb": (1, 1024),
    "max_packages": (1, 1000),
    "timeout_s": (5, 3600),
    "memory_mb": (64, 64 * 1024),
}
# each kind of source: its section, the key of its URL, and the languages that install from it
SOURCES = {"python": ("index", ("python",)), "npm": ("registry", ("javascript", "typescript"))}
KEYS = frozenset({"levels", "ca_bundle", "cache", "trial_index", *SOURCES, *BOUNDS})


@dataclass(frozen=True)
class Source:
    """A package index (pip's) or registry (npm's), and the hosts it sends its clients to."""

    kind: str  # "python" or "npm"
    url: str
    hosts: tuple[str, ...] = ()

    def reach(self) -> tuple[list[str], list[int]]:
        """The hosts and ports a download may reach: the URL's, and `hosts` on its port."""
        url = urllib.parse.urlsplit(self.url)
        return sorted({url.hostname or "", *self.hosts} - {""}), [self.origin[1]]

    @property
    def origin(self) -> tuple[str, int]:
        """The URL's host and port (443 or 80 by default)."""
        url = urllib.parse.urlsplit(self.url)
        return url.hostname or "", url.port or (80 if url.scheme == "http" else 443)

    @property
    def on_trial(self) -> bool:
        """Whether it is a trial index: http:// on loopback (`trial_index`)."""
        return self.url.startswith("http://")


@dataclass(frozen=True)
class PackageSettings:
    levels: tuple[str, ...] = ()
    python: Source | None = None
    npm: Source | None = None
    ca_bundle: str | None = None
    cache: str | None = None  # default: hazmat's cache folder's packages/
    trial_index: bool = False  # an http:// index on loopback allowed (the module's docstring)
    max_mb: int = 200
    max_packages: int = 30
    timeout_s: float = 120.0
    memory_mb: int = 256

    def source(self, language: str) -> Source | None:
        """Where a session of `language` installs from; None: nowhere."""
        for source in (self.python, self.npm):
            if source is not None and language in SOURCES[source.kind][1]:
                return source
        return None

    def allows(self, level: str, language: str) -> bool:
        """Whether a session of `language` at `level` may install packages."""
        return self.source(language) is not None and level in self.levels

    def cache_dir(self) -> Path:
        return Path(self.cache) if self.cache else cache_folder("packages")

    def trial_origins(self) -> tuple[tuple[str, int], ...]:
        """The origins (host, port) of the sources that are trial indexes: the proxy forwards
        plain HTTP to these, and to nothing else."""
        return tuple(s.origin for s in (self.python, self.npm) if s is not None and s.on_trial)


def parse_packages(data: object, level_names: Collection[str]) -> PackageSettings:
    """Settings from the policy's mapping; ValueError(".key: problem") when invalid."""
    if not isinstance(data, Mapping):
        raise ValueError(f": expected a mapping, got {type(data).__name__}")
    unknown = sorted(set(data) - KEYS)
    if unknown:
        raise ValueError(f".{unknown[0]}: unknown key (known keys: {', '.join(sorted(KEYS))})")
    levels = data.get("levels", [])
    if not isinstance(levels, list) or not all(x in level_names for x in levels):
        raise ValueError(f".levels: expected a list of trust levels ({', '.join(level_names)})")
    numbers: dict[str, Any] = {}
    for key, (low, high) in BOUNDS.items():
        value = data.get(key, getattr(PackageSettings, key))
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f".{key}: expected a number, got {quoted(value)}")
        if not low <= value <= high or (key != "timeout_s" and not isinstance(value, int)):
            raise ValueError(f".{key}: {quoted(value)} is not a whole number in {low}..{high}")
        numbers[key] = value
    trial = data.get("trial_index", False)
    if not isinstance(trial, bool):
        raise ValueError(f".trial_index: expected true or false, got {quoted(trial)}")
    sources: dict[str, Any] = {
        kind: _source(kind, data.get(kind, {}), trial) for kind in SOURCES
    }
    paths: dict[str, Any] = {}
    for key in ("ca_bundle", "cache"):
        value = data.get(key)
        if value is not None and (not isinstance(value, str) or not value):
            raise ValueError(f".{key}: expected a path")
        paths[key] = value
    return PackageSettings(
        tuple(dict.fromkeys(levels)), **sources, **paths, **numbers, trial_index=trial
    )


def _source(kind: str, data: object, trial: bool) -> Source | None:
    url_key = SOURCES[kind][0]
    if not isinstance(data, Mapping):
        raise ValueError(f".{kind}: expected a mapping, got {type(data).__name__}")
    unknown = sorted(set(data) - {url_key, "hosts"})
    if unknown:
        raise ValueError(f".{kind}.{unknown[0]}: unknown key (known keys: hosts, {url_key})")
    hosts = data.get("hosts", [])
    if not isinstance(hosts, list) or not all(isinstance(h, str) for h in hosts):
        raise ValueError(f".{kind}.hosts: expected a list of host names")
    for i, host in enumerate(hosts):
        if "*" in host:
            raise ValueError(f".{kind}.hosts[{i}]: a host name, not a pattern ({quoted(host)})")
        try:
            check_pattern(host)
        except ValueError as exc:
            raise ValueError(f".{kind}.hosts[{i}]: {exc}") from None
    url = data.get(url_key)
    if url is None:
        return None
    parts = _split(url)
    if parts is None or parts.scheme not in ("https", "http") or not parts.hostname:
        raise ValueError(f".{kind}.{url_key}: expected an https:// URL, got {quoted(url)}")
    if parts.username is not None or parts.password is not None:
        raise ValueError(f".{kind}.{url_key}: credentials in the URL are not taken")
    if parts.scheme == "http":
        _check_trial(f".{kind}.{url_key}", parts, trial, hosts)
    return Source(kind, url.rstrip("/") + "/", tuple(hosts))


def _split(url: object) -> urllib.parse.SplitResult | None:
    """`url`'s parts, or None when it is not a URL (a port out of range, say)."""
    if not isinstance(url, str):
        return None
    try:
        parts = urllib.parse.urlsplit(url)
        _ = parts.port  # a port out of range raises here
    except ValueError:
        return None
    return parts


def _check_trial(
    key: str, parts: urllib.parse.SplitResult, trial: bool, hosts: list[str]
) -> None:
    """An http:// index is taken only for a trial, on loopback, with no other hosts."""
    shown = quoted(parts.geturl())
    if not trial:
        raise ValueError(
            f"{key}: expected an https:// URL, got {shown} (an http:// index on this "
            "machine's loopback, for a trial, needs packages.trial_index: true)"
        )
    host = parts.hostname or ""
    try:
        loopback = ipaddress.ip_address(loopback_address(host)).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        raise ValueError(
            f"{key}: an http:// index must be on this machine's loopback (localhost, "
            f"127.0.0.1, [::1]), got {shown}"
        )
    if hosts:
        raise ValueError(f"{key}: a trial index on loopback sends its clients to no other hosts")
