"""The audit log writer: segments, one writer at a time, group commit, torn-tail recovery.

Layout of the log directory::

    origin                 the log's name, also the checkpoint signing key's name
    key.ed25519            the signing key (PEM, mode 0600), created on first use
    lock                   flock(2) target: one writer at a time, across processes
    segments/000001.jsonl  records, one canonical JSON line each
    seals/000001.json      a sealed segment: its signed checkpoint, final hash and frontier
    checkpoint             the latest signed checkpoint (C2SP signed note)

An `append` returns once its record is on disk (fsync); concurrent appends in one process share
one write and one fsync. On taking the lock the writer catches up with whatever other
processes appended. A final line without its newline (a writer killed mid-write) is cut off
and a `log.recovered_torn_tail` event is recorded; any other damage stops the writer
(`AuditDamaged`), it is never repaired silently.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import secrets
import socket
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import rfc8785

from hazmat._exceptions import AuditDamaged, AuditError
from hazmat.audit.checkpoint import Checkpoint, Signer, load_or_create_key
from hazmat.audit.merkle import Frontier, leaf_hash
from hazmat.audit.records import GENESIS, LineError, Record, encode_line, parse_line_exact, utc_now
from hazmat.policy import AuditSettings

__all__ = ["AuditLog", "default_audit_dir", "open_audit_log", "segment_name"]


def default_audit_dir() -> Path:
    """`$HAZMAT_AUDIT_DIR`, else `$XDG_STATE_HOME/hazmat/audit` (~/.local/state/hazmat/audit)."""
    explicit = os.environ.get("HAZMAT_AUDIT_DIR")
    if explicit:
        return Path(explicit)
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "hazmat" / "audit"


def open_audit_log(settings: AuditSettings) -> AuditLog:
    """The audit log a policy's `audit` settings describe. `HAZMAT_AUDIT_DIR` wins over the
    policy's `audit.dir`, so the CLI, the API and the verifier can all be pointed elsewhere."""
    directory = os.environ.get("HAZMAT_AUDIT_DIR") or settings.dir or default_audit_dir()
    return AuditLog(
        Path(directory).expanduser(),
        anchor=Path(settings.anchor).expanduser() if settings.anchor else None,
        checkpoint_every=settings.checkpoint_every,
        checkpoint_seconds=settings.checkpoint_seconds,
        segment_records=settings.segment_records,
        keep_segments=settings.keep_segments,
    )


def segment_name(number: int) -> str:
    return f"{number:06d}"


@dataclass
class _Tail:
    """Where the log ends, as this process last saw it."""

    segment: int = 1
    segment_first: int = 0
    size: int = 0  # bytes in the current segment file
    frontier: Frontier = field(default_factory=Frontier)
    prev: str = GENESIS

    @property
    def seq(self) -> int:
        return self.frontier.size


@dataclass
class _Ticket:
    kind: str
    data: dict[str, Any]
    canonical_data: bytes
    seq: int = -1
    error: BaseException | None = None
    done: bool = False


class AuditLog:
    """Append-only, hash-chained, Merkle-tree audit log with signed checkpoints."""

    def __init__(
        self,
        directory: str | Path | None = None,
        *,
        anchor: str | Path | None = None,
        checkpoint_every: int = 1000,
        checkpoint_seconds: float = 10.0,
        segment_records: int = 10_000,
        keep_segments: int | None = None,
    ) -> None:
        self.dir = Path(directory) if directory else default_audit_dir()
        self.anchor = Path(anchor) if anchor else None
        self.checkpoint_every = checkpoint_every
        self.checkpoint_seconds = checkpoint_seconds
        self.segment_records = segment_records
        self.keep_segments = keep_segments
        self._cv = threading.Condition()
        self._pending: list[_Ticket] = []
        self._flushing = False
        self._tail: _Tail | None = None
        self._last_checkpoint = (0, time.monotonic())
        self._closed = False
        (self.dir / "segments").mkdir(parents=True, exist_ok=True, mode=0o700)
        (self.dir / "seals").mkdir(exist_ok=True, mode=0o700)
        self._lock_fd = os.open(self.dir / "lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            with self._locked():
                self.origin = self._origin()
                key, created = _load_key(self.dir / "key.ed25519")
                self.signer = Signer(self.origin, key)
                self._sync()  # on open: cut a torn final line (recorded), refuse other damage
        except BaseException:
            os.close(self._lock_fd)
            raise
        if created:
            self.append("log.key_created", {"public_key": self.signer.verifier.encode()})

    # --- public --------------------------------------------------------------------------

    def append(self, kind: str, data: dict[str, Any]) -> int:
        """Append one record; returns its seq once it is durable on disk."""
        try:
            canonical = rfc8785.dumps(data)  # serialized in the caller's thread
        except (ValueError, TypeError) as exc:
            raise AuditError(f"cannot record {kind}: {exc}") from None
        ticket = _Ticket(kind, data, canonical)
        with self._cv:
            if self._closed:
                raise AuditError("the audit log is closed")
            self._pending.append(ticket)
            while not ticket.done:
                if self._flushing:
                    self._cv.wait()
                    continue
                batch, self._pending = self._pending, []
                self._flushing = True
                self._cv.release()
                try:
                    self._write_batch(batch)
                except BaseException as exc:
                    for t in batch:
                        t.error = exc
                finally:
                    self._cv.acquire()
                    for t in batch:
                        t.done = True
                    self._flushing = False
                    self._cv.notify_all()
        if ticket.error is not None:
            if isinstance(ticket.error, AuditError):
                raise ticket.error
            raise AuditError(f"audit append failed: {ticket.error}") from ticket.error
        return ticket.seq

    def checkpoint(self) -> str:
        """Write a signed checkpoint of the log as it is now; returns the note."""
        with self._locked():
            tail = self._sync()
            return self._write_checkpoint(tail)

    def close(self) -> None:
        """Write a final checkpoint and release the lock file."""
        with self._cv:
            if self._closed:
                return
            self._closed = True
        try:
            self.checkpoint()
        finally:
            os.close(self._lock_fd)

    def __enter__(self) -> AuditLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- writing -------------------------------------------------------------------------

    @contextmanager
    def _locked(self) -> Iterator[None]:
        fcntl.flock(self._lock_fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)

    def _write_batch(self, batch: list[_Ticket]) -> None:
        with self._locked():
            tail = self._sync()
            items = [(t.kind, t.data, t.canonical_data) for t in batch]
            for ticket, seq in zip(batch, self._write_records(tail, items), strict=True):
                ticket.seq = seq
            self._after_write(tail)

    def _write_records(
        self, tail: _Tail, items: Sequence[tuple[str, dict[str, Any], bytes | None]]
    ) -> list[int]:
        """Append records in one write and one sync; returns their seqs. Holds the lock."""
        chunks, seqs = [], []
        for kind, data, canonical in items:
            record = Record(tail.seq, utc_now(), kind, tail.prev, data)
            line, leaf = encode_line(record, canonical)
            chunks.append(line)
            seqs.append(record.seq)
            tail.frontier.append(leaf)
            tail.prev = leaf.hex()
        data_bytes = b"".join(chunks)
        path = self._segment_path(tail.segment)
        created = not path.exists()
        try:
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, data_bytes)
                os.fdatasync(fd)  # the data and the file size; nothing else is needed to read it
            finally:
                os.close(fd)
            if created:
                _fsync_dir(path.parent)
        except BaseException:
            self._tail = None  # the cached tail ran ahead of the file: read it again next time
            raise
        tail.size += len(data_bytes)
        return seqs

    def _after_write(self, tail: _Tail) -> None:
        size, when = self._last_checkpoint
        due = tail.seq - size >= self.checkpoint_every
        if due or time.monotonic() - when >= self.checkpoint_seconds:
            self._write_checkpoint(tail)
        if tail.seq - tail.segment_first >= self.segment_records:
            self._seal(tail)

    def _write_checkpoint(self, tail: _Tail) -> str:
        note = self.signer.sign(Checkpoint(self.origin, tail.seq, tail.frontier.root()))
        _write_atomic(self.dir / "checkpoint", note.encode())
        if self.anchor:
            self.anchor.mkdir(parents=True, exist_ok=True)
            _write_atomic(self.anchor / "checkpoint", note.encode())
        self._last_checkpoint = (tail.seq, time.monotonic())
        return note

    def _seal(self, tail: _Tail) -> None:
        """End the current segment with a signed seal; the next record starts a new one."""
        note = self._write_checkpoint(tail)
        seal: dict[str, Any] = {
            "segment": tail.segment,
            "first_seq": tail.segment_first,
            "end_seq": tail.seq,
            "final_hash": tail.prev,
            "frontier": [h.hex() for h in tail.frontier.hashes],
            "checkpoint": note,
        }
        seal["signature"] = self.signer.sign_bytes(rfc8785.dumps(seal))
        _write_atomic(
            self.dir / "seals" / f"{segment_name(tail.segment)}.json",
            json.dumps(seal, indent=1).encode(),
        )
        sealed = tail.segment
        tail.segment += 1
        tail.segment_first = tail.seq
        tail.size = 0
        self._append_event(
            tail, "log.segment_sealed", {"segment": sealed, "end_seq": seal["end_seq"]}
        )
        self._apply_retention(tail)

    def _apply_retention(self, tail: _Tail) -> None:
        if self.keep_segments is None:
            return
        present = sorted(int(p.stem) for p in (self.dir / "segments").glob("*.jsonl"))
        sealed = [n for n in present if n < tail.segment]
        expired = sealed[: max(0, len(sealed) - self.keep_segments)]
        if not expired:
            return
        for number in expired:
            self._segment_path(number).unlink()
        _fsync_dir(self.dir / "segments")
        # One number covers every expired segment (retention removes the oldest first), so the
        # newest retention record still tells the verifier after older ones expired too.
        self._append_event(
            tail, "log.retention", {"expired_through": expired[-1], "removed": expired}
        )

    def _append_event(self, tail: _Tail, kind: str, data: dict[str, Any]) -> None:
        """Append one of the log's own events while already holding the lock."""
        self._write_records(tail, [(kind, data, None)])

    # --- reading the tail ------------------------------------------------------------------

    def _segment_path(self, number: int) -> Path:
        return self.dir / "segments" / f"{segment_name(number)}.jsonl"

    def _sync(self) -> _Tail:
        """Bring the cached tail up to date with the files (other writers, torn tails)."""
        tail = self._tail
        # One stat per batch: only when our segment was sealed (by another process) is the
        # seals directory read again.
        if tail is None or (self.dir / "seals" / f"{segment_name(tail.segment)}.json").exists():
            seals = sorted(int(p.stem) for p in (self.dir / "seals").glob("*.json"))
            tail = self._tail_after_seal(seals[-1]) if seals else _Tail()
        path = self._segment_path(tail.segment)
        size = path.stat().st_size if path.exists() else 0
        if size != tail.size:
            self._read_on(tail, path, size)
        self._tail = tail
        return tail

    def _tail_after_seal(self, number: int) -> _Tail:
        seal = json.loads((self.dir / "seals" / f"{segment_name(number)}.json").read_text())
        frontier = Frontier(seal["end_seq"], [bytes.fromhex(h) for h in seal["frontier"]])
        return _Tail(number + 1, seal["end_seq"], 0, frontier, seal["final_hash"])

    def _read_on(self, tail: _Tail, path: Path, size: int) -> None:
        if size < tail.size:
            raise AuditDamaged(
                f"{path} shrank from {tail.size} to {size} bytes; run `hazmat audit verify`"
            )
        with path.open("rb") as f:
            f.seek(tail.size)
            data = f.read(size - tail.size)
        complete = data[: data.rfind(b"\n") + 1]
        torn = data[len(complete) :]
        for line in complete.splitlines():
            try:
                record, stored, body = parse_line_exact(line)
            except LineError as exc:
                raise AuditDamaged(
                    f"{path}: record after seq {tail.seq - 1}: {exc}; run `hazmat audit verify`"
                ) from None
            leaf = leaf_hash(body)
            if record.seq != tail.seq or record.prev != tail.prev or stored != leaf.hex():
                raise AuditDamaged(
                    f"{path}: record {record.seq} does not continue the log at seq {tail.seq}; "
                    "run `hazmat audit verify`"
                )
            tail.frontier.append(leaf)
            tail.prev = stored
        tail.size += len(complete)
        if torn:
            self._cut_torn_tail(tail, path, torn)

    def _cut_torn_tail(self, tail: _Tail, path: Path, torn: bytes) -> None:
        with path.open("r+b") as f:
            f.truncate(tail.size)
            f.flush()
            os.fsync(f.fileno())
        self._append_event(
            tail,
            "log.recovered_torn_tail",
            {
                "segment": tail.segment,
                "bytes_cut": len(torn),
                "sha256_cut": hashlib.sha256(torn).hexdigest(),
            },
        )

    def _origin(self) -> str:
        path = self.dir / "origin"
        if not path.exists():
            name = f"hazmat.audit/{socket.gethostname()}/{secrets.token_hex(4)}"
            _write_atomic(path, (name + "\n").encode())
        return path.read_text().strip()


def _load_key(path: Path) -> tuple[Any, bool]:
    try:
        return load_or_create_key(path)
    except FileExistsError:  # another process created it between our check and our create
        return load_or_create_key(path)


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    _fsync_dir(path.parent)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
