"""Which sessions may install packages, from where, and how much (`packages` in the policy).

```yaml
packages:
  levels: [trusted, unknown]          # the trust levels whose sessions may install; default none
  python:
    index: https://pypi.mirror.example/simple/   # pip's index (https); default: none
    hosts: [files.mirror.example]     # more hosts the index sends pip to for its files
  ca_bundle: /etc/ssl/certs/corp.pem  # CA certificates for an index behind TLS interception
  max_mb: 200                         # the files of one install, all together
  max_packages: 30                    # names asked in one install, and files downloaded
  timeout_s: 120                      # the download's time
  memory_mb: 256                      # pip's memory in the download sandbox (room for the
                                      # files is added: three times max_mb)
  cache: /var/cache/hazmat/wheels     # the host's cache of downloaded files, by hash
```

Installing is off unless both `levels` and `python.index` are given: an operator names the
index its sessions may use (hazmat names none). The download runs in a sandbox of its own with
the index's hosts as its only network, through the allowlist proxy (hazmat/packages/).
"""

from __future__ import annotations

import os
import urllib.parse
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hazmat._exceptions import quoted
from hazmat.egress.rules import check_pattern

__all__ = ["PackageSettings", "default_cache_dir", "parse_packages"]

BOUNDS = {
    "max_mb": (1, 1024),
    "max_packages": (1, 1000),
    "timeout_s": (5, 3600),
    "memory_mb": (64, 64 * 1024),
}
KEYS = frozenset({"levels", "python", "ca_bundle", "cache", *BOUNDS})


@dataclass(frozen=True)
class PackageSettings:
    levels: tuple[str, ...] = ()
    index: str | None = None  # python.index
    hosts: tuple[str, ...] = ()  # python.hosts
    ca_bundle: str | None = None
    cache: str | None = None  # default: default_cache_dir()
    max_mb: int = 200
    max_packages: int = 30
    timeout_s: float = 120.0
    memory_mb: int = 256

    def allows(self, level: str, language: str) -> bool:
        """Whether a session of `language` at `level` may install packages."""
        return language == "python" and self.index is not None and level in self.levels

    @property
    def reach(self) -> tuple[list[str], list[int]]:
        """The hosts and ports the download may reach: the index's, and `hosts` on its port."""
        url = urllib.parse.urlsplit(self.index or "")
        port = url.port or 443
        return sorted({url.hostname or "", *self.hosts} - {""}), [port]

    def cache_dir(self) -> Path:
        return Path(self.cache) if self.cache else default_cache_dir()


def default_cache_dir() -> Path:
    """`$HAZMAT_CACHE_DIR/wheels`, else `$XDG_CACHE_HOME/hazmat/wheels` (~/.cache/...)."""
    if os.environ.get("HAZMAT_CACHE_DIR"):
        return Path(os.environ["HAZMAT_CACHE_DIR"]) / "wheels"
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "hazmat" / "wheels"


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
    index, hosts = _python(data.get("python", {}))
    paths: dict[str, Any] = {}
    for key in ("ca_bundle", "cache"):
        value = data.get(key)
        if value is not None and (not isinstance(value, str) or not value):
            raise ValueError(f".{key}: expected a path")
        paths[key] = value
    return PackageSettings(tuple(dict.fromkeys(levels)), index, hosts, **paths, **numbers)


def _python(data: object) -> tuple[str | None, tuple[str, ...]]:
    if not isinstance(data, Mapping):
        raise ValueError(f".python: expected a mapping, got {type(data).__name__}")
    unknown = sorted(set(data) - {"index", "hosts"})
    if unknown:
        raise ValueError(f".python.{unknown[0]}: unknown key (known keys: hosts, index)")
    index = data.get("index")
    if index is not None:
        url = urllib.parse.urlsplit(index) if isinstance(index, str) else None
        if url is None or url.scheme != "https" or not url.hostname or url.username:
            raise ValueError(f".python.index: expected an https:// URL, got {quoted(index)}")
        index = index.rstrip("/") + "/"
    hosts = data.get("hosts", [])
    if not isinstance(hosts, list) or not all(isinstance(h, str) for h in hosts):
        raise ValueError(".python.hosts: expected a list of host names")
    for i, host in enumerate(hosts):
        if "*" in host:
            raise ValueError(f".python.hosts[{i}]: a host name, not a pattern ({quoted(host)})")
        try:
            check_pattern(host)
        except ValueError as exc:
            raise ValueError(f".python.hosts[{i}]: {exc}") from None
    return index, tuple(hosts)
