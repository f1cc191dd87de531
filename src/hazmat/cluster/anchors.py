"""The service's copy of every worker's signed audit checkpoints (docs/scale.md, "Evidence").

Each worker publishes its audit log's newest checkpoint to a Redis stream (cluster/worker.py).
The service reads the stream and appends each checkpoint to an anchor of that worker's own
(`<folder>/<worker>/checkpoints`, audit/anchor.py), after checking its signature against the
worker's verifier key, which the service pins the first time it sees the worker
(`<folder>/<worker>/pubkey`): a checkpoint signed by another key is refused and logged. Then

    hazmat audit verify --log <worker's log> --pubkey <folder>/<w>/pubkey --anchor <folder>/<w>

checks the worker's log against what the service holds: a log cut back or rewritten after a
checkpoint reached the service no longer matches its anchor.
"""

from __future__ import annotations

import logging
import re
import threading
from pathlib import Path
from typing import Any

from hazmat.audit.anchor import append_note, last_note
from hazmat.audit.checkpoint import CheckpointError, VerifierKey
from hazmat.audit.layout import PUBKEY, write_atomic
from hazmat.cluster.keys import CHECKPOINTS, audit_key

__all__ = ["WORKER_NAME", "AnchorCollector"]

log = logging.getLogger(__name__)

WORKER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,62}")  # also a directory name
POSITION = ".position"  # the last stream entry copied, so that a restart resumes there


class AnchorCollector:
    """Copies checkpoints from the stream into `folder` on a thread of its own."""

    def __init__(self, client: Any, folder: Path) -> None:
        self.redis = client
        self.folder = folder
        self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.refused = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="hazmat-anchors", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self.collect(block_ms=None)  # what arrived last

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.collect(block_ms=500)
            except Exception:  # Redis away: try again (the position is kept on disk)
                log.warning("anchors: cannot read the checkpoints", exc_info=True)
                self._stop.wait(1.0)

    def collect(self, block_ms: int | None) -> int:
        """Copy what is new in the stream; returns how many checkpoints were kept."""
        position = self.folder / POSITION
        last = position.read_text().strip() if position.exists() else "0-0"
        got: Any = self.redis.xread({CHECKPOINTS: last}, block=block_ms, count=500)
        kept = 0
        for _stream, entries in got or ():
            for entry_id, fields in entries:
                kept += self._keep(_text(fields[b"worker"]), _text(fields[b"note"]))
                last = _text(entry_id)
            write_atomic(position, last.encode())
        return kept

    def _keep(self, worker: str, note: str) -> int:
        if not WORKER_NAME.fullmatch(worker):
            log.warning("anchors: refused a checkpoint from a worker named %r", worker)
            self.refused += 1
            return 0
        anchor = self.folder / worker
        try:
            self._key(worker, anchor).open(note)
        except CheckpointError as exc:
            log.warning("anchors: refused a checkpoint of worker %s: %s", worker, exc)
            self.refused += 1
            return 0
        if last_note(anchor) == note:
            return 0
        append_note(anchor, note)
        return 1

    def _key(self, worker: str, anchor: Path) -> VerifierKey:
        """The worker's verifier key: pinned at first sight, never replaced."""
        pinned = anchor / PUBKEY
        if not pinned.exists():
            published = self.redis.get(audit_key(worker))
            if published is None:
                raise CheckpointError("the worker has published no verifier key")
            key = VerifierKey.decode(published)  # bytes: CheckpointError if not UTF-8
            anchor.mkdir(parents=True, exist_ok=True, mode=0o700)
            write_atomic(pinned, (key.encode() + "\n").encode())
        return VerifierKey.read(pinned)


def _text(value: Any) -> str:
    """A stream field as text: bytes that are not UTF-8 replaced, so that such an entry is
    refused (a worker name that does not match, a note whose signature fails) and passed
    over, never raised on (the collector retried it for ever, anchoring nothing after it)."""
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
