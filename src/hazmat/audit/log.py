"""The audit log writer: segments, one writer at a time, group commit, and a writer that never
extends a log it cannot vouch for.

On open, under the lock, the writer compares the log on disk with every signed checkpoint it
must honour (the log's own, the last seal's and the anchor's newest) at their tree sizes, using
the block index and the last block's records (O(n / 1024) hashing and at most ~1024 records
read, the same at 10 or 1,000,000 records). Any difference, a missing key, a segment without its
seal or a file that is not part of the log is `AuditDamaged`: nothing is written and nothing
runs until a person looks (`hazmat audit verify`). The only damage repaired is a crash tail: a
final line without its newline (or NUL padding), cut off and recorded
(`log.recovered_torn_tail`). See docs/audit.md.

An `append` returns once its record is on disk (every byte written, then fdatasync); concurrent
appends and checkpoints in one process go through one gate and share a write and a sync.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import rfc8785

from hazmat._closing import Closable
from hazmat._exceptions import AuditDamaged, AuditError
from hazmat.audit.anchor import append_note, last_note
from hazmat.audit.checkpoint import (
    Checkpoint,
    CheckpointError,
    Signer,
    load_or_create_key,
    read_note,
)
from hazmat.audit.index import BLOCK, BlockEntry, BlockIndex
from hazmat.audit.layout import (
    CHECKPOINT,
    ORIGIN,
    PUBKEY,
    check_directory,
    flocked,
    fsync_dir,
    io_message,
    list_log,
    segment_name,
    write_atomic,
    write_fully,
)
from hazmat.audit.merkle import Frontier, leaf_hash, perfect_root
from hazmat.audit.records import GENESIS, LineError, Record, encode_line, parse_line_exact, utc_now
from hazmat.audit.tree import LogTree, Position, TreeError
from hazmat.policy import AuditSettings

__all__ = ["AuditLog", "default_audit_dir", "open_audit_log", "segment_name"]

_INVESTIGATE = "run `hazmat audit verify --pubkey FILE --anchor DIR` to investigate"


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


@dataclass
class _Tail:
    """Where the log ends, as this process last saw it."""

    segment: int = 1
    segment_first: int = 0
    size: int = 0  # bytes in the current segment file
    frontier: Frontier = field(default_factory=Frontier)
    prev: str = GENESIS
    block: list[bytes] = field(default_factory=list)  # leaves of the unfinished 1024-block

    @property
    def seq(self) -> int:
        return self.frontier.size

    def copy(self) -> _Tail:
        return replace(self, frontier=self.frontier.copy(), block=list(self.block))

    def add(self, leaf: bytes) -> bool:
        """Append a leaf; True when it completes a block."""
        self.frontier.append(leaf)
        self.prev = leaf.hex()
        self.block.append(leaf)
        return len(self.block) == BLOCK


@dataclass
class _Ticket:
    kind: str | None  # None: a checkpoint, taken after the records before it
    data: dict[str, Any] = field(default_factory=dict)
    canonical_data: bytes = b""
    seq: int = -1
    note: str = ""
    error: BaseException | None = None
    done: bool = False


class AuditLog(Closable):
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
        lock_timeout: float = 30.0,
    ) -> None:
        self.dir = Path(directory) if directory else default_audit_dir()
        self.anchor = Path(anchor) if anchor else None
        self.checkpoint_every = checkpoint_every
        self.checkpoint_seconds = checkpoint_seconds
        self.segment_records = segment_records
        self.keep_segments = keep_segments
        self.lock_timeout = lock_timeout
        self._cv = threading.Condition()
        self._pending: list[_Ticket] = []
        self._flushing = False
        self._tail: _Tail | None = None
        self._last_checkpoint = (0, time.monotonic())
        self._closed = False
        self._closing = False
        self.index = BlockIndex(self.dir)
        try:
            self.dir.mkdir(parents=True, exist_ok=True, mode=0o700)
            check_directory(self.dir)
            for sub in ("segments", "seals", "index"):
                (self.dir / sub).mkdir(exist_ok=True, mode=0o700)
            self._lock_fd = os.open(
                self.dir / "lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600
            )
        except OSError as exc:
            raise AuditError(f"cannot open the audit log {self.dir}: {io_message(exc)}") from None
        try:
            with self._locked():
                self.origin = self._origin()
                self.signer, created = self._signer()
                self._tail = self._open_tail()
                if self.keep_segments is not None:
                    self._apply_retention(self._tail)  # finishes an expiry a crash interrupted
            if created:
                self.append("log.key_created", {"public_key": self.signer.verifier.encode()})
        except OSError as exc:
            os.close(self._lock_fd)
            raise AuditError(f"cannot open the audit log {self.dir}: {io_message(exc)}") from None
        except BaseException:
            os.close(self._lock_fd)
            raise

    # --- public --------------------------------------------------------------------------

    def append(self, kind: str, data: dict[str, Any]) -> int:
        """Append one record; returns its seq once it is durable on disk."""
        try:
            canonical = rfc8785.dumps(data)  # serialized in the caller's thread
        except (ValueError, TypeError) as exc:
            raise AuditError(f"cannot record {kind}: {exc}") from None
        return self._submit(_Ticket(kind, data, canonical)).seq

    @property
    def size(self) -> int:
        """The records in the log as this writer last saw it: the next record's seq, or less
        when another process appended since."""
        tail = self._tail
        return 0 if tail is None else tail.seq

    def checkpoint(self) -> str:
        """Write a signed checkpoint of the log as it is now (after every append already
        acknowledged); returns the note."""
        return self._submit(_Ticket(None)).note

    def close(self) -> None:
        """Write a final checkpoint and release the lock file."""
        with self._cv:
            if self._closing:
                return
            self._closing = True
        try:
            self.checkpoint()
        finally:
            with self._cv:
                self._closed = True
            os.close(self._lock_fd)


    # --- the gate: one batch at a time, records and checkpoints in order ------------------

    def _submit(self, ticket: _Ticket) -> _Ticket:
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
                        if not t.done:
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
        return ticket

    @contextmanager
    def _locked(self) -> Iterator[None]:
        with flocked(self._lock_fd, self.dir / "lock", self.lock_timeout):
            yield

    def _write_batch(self, batch: list[_Ticket]) -> None:
        with self._locked():
            tail = self._sync()
            records = [t for t in batch if t.kind is not None]
            if records:
                items = [(t.kind or "", t.canonical_data) for t in records]
                for ticket, seq in zip(records, self._write_records(tail, items), strict=True):
                    ticket.seq = seq
                self._after_write(tail)
            if len(records) < len(batch):
                note = self._write_checkpoint(tail)
                for t in batch:
                    t.note = note

    def _write_records(self, tail: _Tail, items: list[tuple[str, bytes]]) -> list[int]:
        """Append records in one write and one sync; returns their seqs. Holds the lock. On any
        error the file is cut back to where it was and the tail is unchanged."""
        new = tail.copy()
        chunks, seqs, blocks = [], [], []
        offset = new.size
        for kind, canonical in items:
            record = Record(new.seq, utc_now(), kind, new.prev, {})
            line, leaf = encode_line(record, canonical)
            chunks.append(line)
            seqs.append(record.seq)
            offset += len(line)
            if new.add(leaf):
                blocks.append((new.seq // BLOCK - 1, perfect_root(new.block), offset))
                new.block = []
        data = b"".join(chunks)
        path = self._segment_path(new.segment)
        try:
            created = not path.exists()
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
            try:
                try:
                    write_fully(fd, data)
                    os.fdatasync(fd)  # the data and the file size; nothing else is needed
                except OSError:
                    _cut_back(fd, tail.size)
                    raise
            finally:
                os.close(fd)
            if created:
                fsync_dir(path.parent)
        except OSError as exc:
            raise AuditError(f"cannot write the audit log {path}: {io_message(exc)}") from None
        new.size += len(data)
        for b, digest, end in blocks:
            self.index.put(b, BlockEntry(digest, new.segment, end))
        tail.__dict__.update(new.__dict__)
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
        if self.anchor:
            append_note(self.anchor, note)  # first: the anchor is never behind the log's own
        try:
            write_atomic(self.dir / CHECKPOINT, note.encode())
        except OSError as exc:
            raise AuditError(
                f"cannot write a checkpoint in {self.dir}: {io_message(exc)}"
            ) from None
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
        try:
            write_atomic(self._seal_path(tail.segment), json.dumps(seal, indent=1).encode())
        except OSError as exc:
            raise AuditError(f"cannot seal segment {tail.segment}: {io_message(exc)}") from None
        sealed = tail.segment
        tail.segment += 1
        tail.segment_first = tail.seq
        tail.size = 0
        self._append_event(tail, "log.segment_sealed", {"segment": sealed, "end_seq": tail.seq})
        self._apply_retention(tail)

    def _apply_retention(self, tail: _Tail) -> None:
        """Expire the oldest sealed segments beyond `keep_segments`, crash-safely: first their
        leaf hashes are kept (`NNNNNN.leaves`), then a `log.retention` record and a checkpoint
        covering it are written, and only then are the record files deleted. A crash at any
        point leaves a log that verifies, and the next writer finishes the job."""
        if self.keep_segments is None:
            return
        listing = list_log(self.dir)
        sealed = sorted(n for n in listing.segments if n < tail.segment)
        expired = sealed[: max(0, len(sealed) - self.keep_segments)]
        if not expired:
            return
        tree = LogTree(self.dir, listing)
        try:
            for number in expired:
                span = next(s for s in tree.spans if s.number == number)
                leaves = b"".join(
                    e.leaf for e in tree.entries(span.first, Position(number, 0), span.end)
                )
                write_atomic(self.dir / "segments" / f"{segment_name(number)}.leaves", leaves)
        except (TreeError, StopIteration) as exc:
            raise AuditDamaged(f"cannot expire segments {expired}: {exc}; {_INVESTIGATE}") from None
        except OSError as exc:
            raise AuditError(f"cannot expire segments {expired}: {io_message(exc)}") from None
        # One number covers every expired segment (the oldest go first), so the newest
        # retention record still tells the verifier after older ones expired too.
        self._append_event(
            tail, "log.retention", {"expired_through": expired[-1], "removed": expired}
        )
        self._write_checkpoint(tail)
        for number in expired:
            self._segment_path(number).unlink(missing_ok=True)
        fsync_dir(self.dir / "segments")

    def _append_event(self, tail: _Tail, kind: str, data: dict[str, Any]) -> None:
        """Append one of the log's own events while already holding the lock."""
        self._write_records(tail, [(kind, rfc8785.dumps(data))])

    # --- opening: what is on disk, against what was signed -----------------------------------

    def _segment_path(self, number: int) -> Path:
        return self.dir / "segments" / f"{segment_name(number)}.jsonl"

    def _seal_path(self, number: int) -> Path:
        return self.dir / "seals" / f"{segment_name(number)}.json"

    def _damaged(self, what: str) -> AuditDamaged:
        return AuditDamaged(f"the audit log {self.dir} cannot be extended: {what}; {_INVESTIGATE}")

    def _open_tail(self) -> _Tail:
        try:
            return self._check_and_read()
        except TreeError as exc:
            raise self._damaged(str(exc)) from None
        except OSError as exc:
            raise AuditError(f"cannot read the audit log {self.dir}: {io_message(exc)}") from None

    def _check_and_read(self) -> _Tail:
        listing = list_log(self.dir)
        if listing.unexpected:
            names = ", ".join(str(p.relative_to(self.dir)) for p in listing.unexpected[:5])
            raise self._damaged(f"files that are not part of the log: {names}")
        for number in range(1, listing.last + 1):
            if number not in listing.segments and number not in listing.leaves:
                raise self._damaged(f"segment {segment_name(number)} is missing")
            if number < listing.last and number not in listing.seals:
                raise self._damaged(f"segment {segment_name(number)} has no seal")
        tree = LogTree(self.dir, listing)
        tree.index = self.index
        tree.write_index = True
        tree.parse = False  # the roots bind the hashes; the records after them are parsed below
        checkpoints = self._honoured(listing)
        for source, cp in checkpoints:
            tree.fresh = {(cp.size - 1) // BLOCK}  # record size-1 itself is always read and hashed
            try:
                ok = tree.root(cp.size) == cp.root
            except TreeError:
                ok = False
            if not ok:  # a stale or forged index costs a recomputation, never a verdict
                tree.distrust_index()
                try:
                    ok = tree.root(cp.size) == cp.root
                except TreeError as exc:
                    raise self._damaged(f"{source} signs {cp.size} records: {exc}") from None
            if not ok:
                raise self._damaged(
                    f"the first {cp.size} records on disk are not those {source} signed"
                )
        start = max((cp.size for _, cp in checkpoints), default=0)
        return self._read_after(tree, listing.last in listing.seals, start)

    def _honoured(self, listing: Any) -> list[tuple[str, Checkpoint]]:
        """Every checkpoint the writer must not contradict: the log's own, the newest seal's
        and the anchor's newest. Two different roots for one size is a fork."""
        notes: list[tuple[str, str]] = []
        own = self.dir / CHECKPOINT
        if own.exists():
            notes.append((str(own), read_note(own)))
        if listing.seals:
            number = max(listing.seals)
            try:
                notes.append(
                    (
                        f"seal {number:06d}",
                        json.loads(listing.seals[number].read_bytes())["checkpoint"],
                    )
                )
            except (ValueError, KeyError, TypeError):
                raise self._damaged(f"seal {number:06d} is unreadable") from None
        if self.anchor:
            note = last_note(self.anchor)
            if note is not None:
                notes.append((f"the anchor {self.anchor}", note))
        found: list[tuple[str, Checkpoint]] = []
        for source, note in notes:
            try:
                cp = self.signer.verifier.open(note)
            except CheckpointError as exc:
                raise self._damaged(f"{source} is not signed by this log's key: {exc}") from None
            for other, seen in found:
                if seen.size == cp.size and seen.root != cp.root:
                    raise self._damaged(f"{other} and {source} sign different logs of {cp.size}")
            found.append((source, cp))
        return sorted(found, key=lambda item: item[1].size)

    def _read_after(self, tree: LogTree, last_sealed: bool, start: int) -> _Tail:
        """The tail: the frontier at `start` (already checked against the checkpoints), then
        every record after it, chained; a torn final line is cut and recorded."""
        tail = _Tail()
        if tree.spans:
            tree.fresh = {(start - 1) // BLOCK}
            tail.frontier = tree.frontier(start)
            if start:
                tail.prev = tree.block_leaves((start - 1) // BLOCK)[(start - 1) % BLOCK].hex()
                tail.block = (
                    tree.block_leaves(start // BLOCK)[: start % BLOCK] if start % BLOCK else []
                )
            position = tree.start_of(start) if start else Position(tree.spans[0].number, 0)
            tree.parse = True
            for entry in tree.entries(start, position):
                if entry.record is None or entry.record.prev != tail.prev:
                    raise TreeError(f"record {entry.seq} does not chain to record {entry.seq - 1}")
                if tail.add(entry.leaf):
                    self.index.put(
                        entry.seq // BLOCK,
                        BlockEntry(perfect_root(tail.block), entry.end.segment, entry.end.offset),
                    )
                    tail.block = []
                position = entry.end
            span = tree.spans[-1]
            tail.segment, tail.segment_first = span.number, span.first
            tail.size = position.offset if position.segment == span.number else 0
            if last_sealed:
                tail.segment, tail.segment_first, tail.size = span.number + 1, tail.seq, 0
            elif not span.expired:
                torn = span.path.stat().st_size - tail.size
                if torn:
                    self._cut_torn_tail(tail, span.path, torn)
        self._last_checkpoint = (start, time.monotonic())
        if tail.seq - tail.segment_first >= self.segment_records:
            self._seal(tail)
        return tail

    def _sync(self) -> _Tail:
        """Bring the cached tail up to date with what other processes appended."""
        tail = self._tail
        if tail is None:
            tail = self._tail = self._open_tail()
        while True:
            path = self._segment_path(tail.segment)
            try:
                size = path.stat().st_size if path.exists() else 0
                if size != tail.size:
                    self._read_on(tail, path, size)
                if not self._seal_path(tail.segment).exists():
                    return tail
                self._follow_seal(tail)  # another process sealed it: go on in the next one
            except OSError as exc:
                raise AuditError(f"cannot read the audit log {path}: {io_message(exc)}") from None

    def _read_on(self, tail: _Tail, path: Path, size: int) -> None:
        if size < tail.size:
            raise self._damaged(f"{path.name} shrank from {tail.size} to {size} bytes")
        with path.open("rb") as f:
            f.seek(tail.size)
            data = f.read(size - tail.size)
        complete = data[: data.rfind(b"\n") + 1]
        for line in complete.splitlines():
            try:
                record, stored, body = parse_line_exact(line)
            except LineError as exc:
                raise self._damaged(f"{path.name}, record after {tail.seq - 1}: {exc}") from None
            leaf = leaf_hash(body)
            if record.seq != tail.seq or record.prev != tail.prev or stored != leaf.hex():
                raise self._damaged(f"{path.name}: record {record.seq} does not continue the log")
            tail.size += len(line) + 1
            if tail.add(leaf):
                tail.block = []  # its writer stored the block's index entry
        if len(complete) < len(data):
            self._cut_torn_tail(tail, path, len(data) - len(complete))

    def _follow_seal(self, tail: _Tail) -> None:
        seal = json.loads(self._seal_path(tail.segment).read_bytes())
        if seal.get("end_seq") != tail.seq or seal.get("final_hash") != tail.prev:
            raise self._damaged(f"seal {tail.segment:06d} does not match its segment")
        tail.segment, tail.segment_first, tail.size = tail.segment + 1, tail.seq, 0

    def _cut_torn_tail(self, tail: _Tail, path: Path, length: int) -> None:
        with path.open("r+b") as f:
            f.seek(tail.size)
            torn = f.read(length)
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

    # --- identity ----------------------------------------------------------------------------

    def _origin(self) -> str:
        path = self.dir / ORIGIN
        if not path.exists():
            if self._has_history():
                raise self._damaged(f"{path} is missing")
            name = f"hazmat.audit/{socket.gethostname()}/{secrets.token_hex(4)}"
            write_atomic(path, (name + "\n").encode())
        return path.read_text().strip()

    def _signer(self) -> tuple[Signer, bool]:
        """The signing key; created only for a log with no history (a new key for an existing
        log would let anyone re-sign it). Also keeps `pubkey`, the verifier key, beside it."""
        path = self.dir / "key.ed25519"
        if not path.exists() and self._has_history():
            raise self._damaged(
                f"the signing key {path} is missing but the log has history; restore the key "
                "from a backup (a new key is never made for an existing log)"
            )
        try:
            key, created = load_or_create_key(path)
        except FileExistsError:  # another process created it between our check and our create
            key, created = load_or_create_key(path)
        except CheckpointError as exc:
            raise self._damaged(str(exc)) from None
        signer = Signer(self.origin, key)
        public = signer.verifier.encode() + "\n"
        pubkey = self.dir / PUBKEY
        if not pubkey.exists():
            write_atomic(pubkey, public.encode())
        elif pubkey.read_bytes() != public.encode():
            raise self._damaged(f"{pubkey} does not match the signing key")
        return signer, created

    def _has_history(self) -> bool:
        listing = list_log(self.dir)
        return bool(listing.last) or (self.dir / CHECKPOINT).exists()


def _cut_back(fd: int, size: int) -> None:
    """After a failed write: remove whatever part of it reached the file."""
    try:
        os.ftruncate(fd, size)
        os.fsync(fd)
    except OSError:
        pass  # then the next writer finds a torn tail (never acknowledged) and cuts it
