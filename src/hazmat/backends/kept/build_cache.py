"""Builds shared across tasks: the same source, built once (kept_build.py).

A grader's task builds its submission once for all its test cases. Graders of courses and
reinforcement-learning runs see the same source many times (resubmissions, a model's repeated
answer, one solution against several problems' tests); this cache keeps each successful build's
archive, so the next kept build of the same source starts from it without building again.

The key is everything the build's result depends on, hashed: the owner (a tenant's key, a
grader's caller: no build crosses from one owner to another), the kind of container (language,
image, runtime and the limits that shape it: `Spec`), the language's build step, and every file
the build sees (the source and the task's own), names and bytes. Only a build that succeeded
within its limits is kept; a compile error is built again (its time limit makes it depend on
load). The archive is the host's copy, which no test can change (kept_build.py), so a test
run from a cached build starts from exactly what the build left.

The cache is one per `Sandbox`, bounded in bytes (least recently used first out), and lives in
memory: a new process builds again.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass

from hazmat.backends.base import Spec

__all__ = ["BUILD_CACHE_BYTES", "BuildCache", "Built"]

BUILD_CACHE_BYTES = 128 * 1024 * 1024  # archives held at most, per Sandbox


@dataclass(frozen=True)
class Built:
    """One successful build: its archive, the files it saw, how long it took."""

    archive: bytes
    files: Mapping[str, bytes]
    build_ms: float | None


class BuildCache:
    """Successful builds by key (`key`), at most `max_bytes` of archives; thread-safe."""

    def __init__(self, max_bytes: int = BUILD_CACHE_BYTES) -> None:
        self.max_bytes = max_bytes
        self.hits = 0
        self.misses = 0
        self._held = 0
        self._builds: OrderedDict[str, Built] = OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def key(owner: str | None, spec: Spec, build: str, files: Mapping[str, bytes]) -> str:
        """What a build's result depends on, hashed (see the module's words)."""
        digest = hashlib.sha256()
        for part in (owner or "", repr(spec), build):
            digest.update(part.encode() + b"\0")
        for name in sorted(files):
            digest.update(name.encode() + b"\0" + hashlib.sha256(files[name]).digest())
        return digest.hexdigest()

    def get(self, key: str) -> Built | None:
        with self._lock:
            found = self._builds.get(key)
            if found is None:
                self.misses += 1
                return None
            self._builds.move_to_end(key)
            self.hits += 1
            return found

    def put(self, key: str, built: Built) -> None:
        """Keep `built` (unless its archive alone is over the bound), dropping the least
        recently used builds to make room."""
        size = len(built.archive)
        if size > self.max_bytes:
            return
        with self._lock:
            old = self._builds.pop(key, None)
            if old is not None:
                self._held -= len(old.archive)
            while self._builds and self._held + size > self.max_bytes:
                _, dropped = self._builds.popitem(last=False)
                self._held -= len(dropped.archive)
            self._builds[key] = built
            self._held += size

    def __len__(self) -> int:
        return len(self._builds)
