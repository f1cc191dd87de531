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
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hazmat._cache import cache_folder
from hazmat._exceptions import quoted
from hazmat.egress.rules import check_pattern

__all__ = ["PackageSettings", "Source", "parse_packages"]

BOUNDS = {
    "max_mb": (1, 1024),
    "max_packages": (1, 1000),
    "timeout_s": (5, 3600),
    "memory_mb": (64, 64 * 1024),
}
# each kind of source: its section, the key of its URL, and the languages that install from it
SOURCES = {"python": ("index", ("python",)), "npm": ("registry", ("javascript", "typescript"))}
KEYS = frozenset({"levels", "ca_bundle", "cache", *SOURCES, *BOUNDS})


@dataclass(frozen=True)
class Source:
    """A package index (pip's) or registry (npm's), and the hosts it sends its clients to."""

    kind: str  # "python" or "npm"
    url: str
    hosts: tuple[str, ...] = ()

    def reach(self) -> tuple[list[str], list[int]]:
        """The hosts and ports a download may reach: the URL's, and `hosts` on its port."""
        url = urllib.parse.urlsplit(self.url)
        return sorted({url.hostname or "", *self.hosts} - {""}), [url.port or 443]


@dataclass(frozen=True)
class PackageSettings:
    levels: tuple[str, ...] = ()
    python: Source | None = None
    npm: Source | None = None
    ca_bundle: str | None = None
    cache: str | None = None  # default: hazmat's cache folder's packages/
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
    sources: dict[str, Any] = {kind: _source(kind, data.get(kind, {})) for kind in SOURCES}
    paths: dict[str, Any] = {}
    for key in ("ca_bundle", "cache"):
        value = data.get(key)
        if value is not None and (not isinstance(value, str) or not value):
            raise ValueError(f".{key}: expected a path")
        paths[key] = value
    return PackageSettings(tuple(dict.fromkeys(levels)), **sources, **paths, **numbers)


def _source(kind: str, data: object) -> Source | None:
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
    parts = urllib.parse.urlsplit(url) if isinstance(url, str) else None
    if parts is None or parts.scheme != "https" or not parts.hostname or parts.username:
        raise ValueError(f".{kind}.{url_key}: expected an https:// URL, got {quoted(url)}")
    return Source(kind, url.rstrip("/") + "/", tuple(hosts))
