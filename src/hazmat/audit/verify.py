"""Verify an audit log: every record, the chain, the Merkle tree, seals and every checkpoint.

The report says which range was verified, which was expected (the longest of the log and every
checkpoint given or found), a verdict — `intact`, `crash` (only a torn or NUL-padded tail after
the last complete record: nothing acknowledged is missing) or `tampered` — and the first
problem with its seq, segment and kind: `unparseable`, `hash_mismatch`, `chain_break`,
`reordered`, `missing_segment`, `missing_seal`, `unexpected_file`, `bad_signature`,
`truncated`, `fork`, `empty_anchor`.

The verifier needs no private key: the verifier key comes from `--pubkey` (kept elsewhere, the
strong case) or the log's own `pubkey` file. It reads a consistent snapshot: under a shared lock
it reads the checkpoints and opens every file, then reads them without the lock, so a writer
appending beside it is never mistaken for damage.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Iterable
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import rfc8785
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from hazmat._exceptions import AuditError, InputError
from hazmat.audit.anchor import ANCHOR_FILE, parse_notes, read_notes
from hazmat.audit.checkpoint import Checkpoint, CheckpointError, VerifierKey, read_note
from hazmat.audit.layout import CHECKPOINT, PUBKEY, flocked, list_log, segment_name
from hazmat.audit.merkle import Frontier, leaf_hash
from hazmat.audit.records import GENESIS, LineError, Record, parse_line_exact
from hazmat.json_input import loads

__all__ = ["Problem", "Report", "log_key", "verify_log"]


@dataclass(frozen=True)
class Problem:
    kind: str
    seq: int | None
    segment: int | None
    detail: str


@dataclass
class Report:
    ok: bool = True
    verdict: str = "intact"  # intact | crash | tampered
    verified_from: int = 0
    verified_to: int = 0  # exclusive
    expected_to: int = 0
    records: int = 0
    expired_segments: list[int] = field(default_factory=list)
    checkpoints: list[str] = field(default_factory=list)
    checkpoints_verified: int = 0
    key: str = ""
    crash: dict[str, int] | None = None  # segment, bytes, after_seq of a crash tail
    problem: Problem | None = None

    def fail(self, kind: str, seq: int | None, segment: int | None, detail: str) -> None:
        if self.problem is None:
            self.problem = Problem(kind, seq, segment, detail)
        self.ok = False
        self.verdict = "tampered"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class _Stop(Exception):
    pass


@dataclass
class _Snapshot:
    listing: Any
    notes: list[tuple[str, str]]
    sizes: dict[Path, int]
    fds: dict[Path, int]
    seals: dict[int, bytes]


def verify_log(
    directory: Path,
    key: VerifierKey | None = None,
    checkpoint_files: Iterable[Path] = (),
    anchor: Path | None = None,
) -> Report:
    report = Report()
    key = key or log_key(directory, report)
    if key is None:
        return report
    report.key = key.encode()
    given = []
    for path in checkpoint_files:
        try:
            given.extend(_notes_in(path))
        except (OSError, AuditError, ValueError) as exc:
            report.fail("bad_signature", None, None, f"checkpoint {path}: {exc}")
    with ExitStack() as stack:
        snapshot = _snapshot(directory, anchor, stack, report)
        checkpoints = _open_checkpoints(key, given + snapshot.notes, report)
        try:
            if snapshot.listing.unexpected:
                names = ", ".join(
                    str(p.relative_to(directory)) for p in snapshot.listing.unexpected
                )
                report.fail("unexpected_file", None, None, f"not part of the log: {names}")
                raise _Stop
            _Walk(directory, key, checkpoints, snapshot, report).run()
        except _Stop:
            pass
    report.expected_to = max([report.verified_to, *(cp.size for _, cp in checkpoints)])
    return report


def log_key(directory: Path, report: Report) -> VerifierKey | None:
    """The verifier key in the log's own `pubkey` file (weaker than one kept elsewhere)."""
    path = directory / PUBKEY
    try:
        return VerifierKey.read(path)
    except (OSError, CheckpointError) as exc:
        report.fail("bad_signature", None, None, f"no usable verifier key {path}: {exc}")
        return None


def _notes_in(path: Path) -> list[tuple[str, str]]:
    """A checkpoint file: one signed note, or an anchor's `checkpoints` (one JSON per line)."""
    if path.is_dir():
        return [(f"{path}#{i + 1}", n) for i, n in enumerate(read_notes(path))]
    text = read_note(path)
    if text.startswith('"'):  # every line a JSON string, or AuditError naming the first not
        notes = parse_notes(text.encode())  # the caller names the file
        return [(f"{path}#{i + 1}", note) for i, note in enumerate(notes)]
    return [(str(path), text)]


def _snapshot(directory: Path, anchor: Path | None, stack: ExitStack, report: Report) -> _Snapshot:
    with ExitStack() as locked:
        lock = directory / "lock"
        try:
            fd = os.open(lock, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:
            fd = None  # a copied log, or no access to the lock: read without it
        if fd is not None:
            locked.callback(os.close, fd)
            locked.enter_context(flocked(fd, lock, 30.0, shared=True))
        return _read_snapshot(directory, anchor, stack, report)


def _read_snapshot(
    directory: Path, anchor: Path | None, stack: ExitStack, report: Report
) -> _Snapshot:
    notes: list[tuple[str, str]] = []
    if anchor is not None:
        found = []
        if (anchor / ANCHOR_FILE).exists():
            found = [
                (f"{anchor / ANCHOR_FILE}#{i + 1}", n) for i, n in enumerate(read_notes(anchor))
            ]
        if (anchor / CHECKPOINT).exists():  # an anchor written before the checkpoint history
            found.append((str(anchor / CHECKPOINT), read_note(anchor / CHECKPOINT)))
        if not found:
            report.fail("empty_anchor", None, None, f"the anchor {anchor} holds no checkpoint")
        notes += found
    own = directory / CHECKPOINT
    if own.exists():
        notes.append((str(own), read_note(own)))
    listing = list_log(directory)
    fds, sizes = {}, {}
    for path in [*listing.segments.values(), *listing.leaves.values()]:
        try:
            f = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError as exc:
            raise AuditError(f"cannot read {path}: {exc.strerror or exc}") from None
        stack.callback(os.close, f)
        fds[path], sizes[path] = f, os.fstat(f).st_size
    seals = {n: p.read_bytes() for n, p in listing.seals.items()}
    return _Snapshot(listing, notes, sizes, fds, seals)


def _open_checkpoints(
    key: VerifierKey, notes: list[tuple[str, str]], report: Report
) -> list[tuple[str, Checkpoint]]:
    out: list[tuple[str, Checkpoint]] = []
    for source, note in notes:
        try:
            out.append((source, key.open(note)))
            report.checkpoints.append(source)
        except CheckpointError as exc:
            report.fail("bad_signature", None, None, f"checkpoint {source}: {exc}")
    return out


class _Walk:
    def __init__(
        self,
        directory: Path,
        key: VerifierKey,
        checkpoints: list[tuple[str, Checkpoint]],
        snapshot: _Snapshot,
        report: Report,
    ) -> None:
        self.dir = directory
        self.key = key
        self.snap = snapshot
        self.report = report
        self.frontier = Frontier()
        self.prev = GENESIS
        self.roots: dict[int, list[tuple[str, Checkpoint]]] = {}
        for source, cp in checkpoints:
            self.roots.setdefault(cp.size, []).append((source, cp))
        self.retention: list[tuple[int, int]] = []  # (seq of the record, expired_through)
        self.signed = max(self.roots, default=0)  # the largest signed size seen

    def run(self) -> None:
        self._forks()
        listing = self.snap.listing
        last = listing.last
        for number in range(1, last + 1):
            seal = self._seal(number) if number in listing.seals else None
            if seal is None and number < last:
                self.report.fail(
                    "missing_seal",
                    self.frontier.size,
                    number,
                    f"segment {segment_name(number)} is followed by others but has no seal",
                )
                raise _Stop
            if number in listing.segments:
                self._segment(listing.segments[number], number, sealed=seal is not None)
            elif number in listing.leaves and seal is not None:
                self._leaves(listing.leaves[number], number, seal)
            else:
                self.report.fail(
                    "missing_segment",
                    self.frontier.size,
                    number,
                    f"segment {segment_name(number)} is missing",
                )
                raise _Stop
            if seal is not None:
                self._match_seal(seal, number)
        self.report.verified_to = self.frontier.size
        self._compare(last)
        for source_cps in self.roots.values():
            for source, cp in source_cps:
                if cp.size > self.frontier.size:
                    self.report.fail(
                        "truncated",
                        self.frontier.size,
                        last,
                        f"the log has {self.frontier.size} records; {source} signs {cp.size}",
                    )
                    raise _Stop
        self._check_retention(self.signed)

    def _forks(self, only: int | None = None) -> None:
        sizes = sorted(self.roots) if only is None else [only]
        for size in sizes:
            cps = self.roots.get(size, [])
            roots = {cp.root for _, cp in cps}
            if len(roots) > 1:
                sources = ", ".join(s for s, _ in cps)
                self.report.fail(
                    "fork",
                    size - 1,
                    None,
                    f"two different signed trees of {size} records: {sources}",
                )
                raise _Stop

    def _compare(self, segment: int) -> None:
        for source, cp in self.roots.get(self.frontier.size, []):
            if self.frontier.root() != cp.root:
                self.report.fail(
                    "hash_mismatch",
                    cp.size - 1,
                    segment,
                    f"the first {cp.size} records do not match {source}",
                )
                raise _Stop
            self.report.checkpoints_verified += 1
        self.roots.pop(self.frontier.size, None)

    def _read(self, path: Path) -> bytes:
        return os.pread(self.snap.fds[path], self.snap.sizes[path], 0)

    def _segment(self, path: Path, number: int, sealed: bool) -> None:
        data = self._read(path)
        complete = data[: data.rfind(b"\n") + 1]
        rest = data[len(complete) :]
        if rest and (sealed or number != self.snap.listing.last):
            self.report.fail(
                "unparseable", self.frontier.size, number, "a sealed segment ends mid-line"
            )
            raise _Stop
        rows = complete.split(b"\n")[:-1]
        parsed: list[tuple[Record, str, bytes] | LineError] = []
        for line in rows:
            try:
                parsed.append(parse_line_exact(line))
            except LineError as exc:
                parsed.append(exc)
        seqs = [p[0].seq if isinstance(p, tuple) else None for p in parsed]
        for i, item in enumerate(parsed):
            expected = self.frontier.size
            self._compare(number)
            if isinstance(item, LineError):
                self.report.fail("unparseable", expected, number, f"line {i + 1}: {item}")
                raise _Stop
            record, stored, body = item
            leaf = leaf_hash(body)
            if stored != leaf.hex():
                self.report.fail(
                    "hash_mismatch",
                    record.seq,
                    number,
                    f"line {i + 1}: the record does not hash to its stored hash",
                )
                raise _Stop
            if record.seq != expected:
                later = expected in seqs[i + 1 :]
                kind = "reordered" if record.seq < expected or later else "chain_break"
                self.report.fail(
                    kind,
                    expected,
                    number,
                    f"line {i + 1}: expected seq {expected}, found {record.seq}",
                )
                raise _Stop
            if record.prev != self.prev:
                self.report.fail(
                    "chain_break",
                    record.seq,
                    number,
                    f"line {i + 1}: prev does not match the previous record's hash",
                )
                raise _Stop
            if record.kind == "log.retention":
                through = record.data.get("expired_through")
                if type(through) is int:
                    self.retention.append((record.seq, through))
            self.frontier.append(leaf)
            self.prev = stored
            self.report.records += 1
        self._compare(number)
        if rest:
            if not _torn(rest):
                self.report.fail(
                    "unparseable",
                    self.frontier.size,
                    number,
                    "the final line is neither a record nor part of one (a crash leaves a "
                    "prefix of a record, maybe followed by NUL bytes)",
                )
                raise _Stop
            self.report.verdict = "crash"
            self.report.crash = {
                "segment": number,
                "bytes": len(rest),
                "after_seq": self.frontier.size - 1,
            }

    def _leaves(self, path: Path, number: int, seal: dict[str, Any]) -> None:
        data = self._read(path)
        count = seal["end_seq"] - seal["first_seq"]
        if seal["first_seq"] != self.frontier.size or len(data) != 32 * count:
            self.report.fail(
                "hash_mismatch",
                self.frontier.size,
                number,
                f"{path.name} does not hold the leaf hashes of records "
                f"{seal['first_seq']}..{seal['end_seq'] - 1}",
            )
            raise _Stop
        if self.frontier.size == self.report.verified_from:
            self.report.verified_from = seal["end_seq"]
        for at in range(0, len(data), 32):
            self._compare(number)
            self.frontier.append(data[at : at + 32])
            self.prev = data[at : at + 32].hex()
        self._compare(number)
        self.report.expired_segments.append(number)

    def _seal(self, number: int) -> dict[str, Any]:
        try:
            seal = loads(self.snap.seals[number], "the seal")  # bounded: a forger wrote it
            if not isinstance(seal, dict):
                raise TypeError(f"the seal is a {type(seal).__name__}, not an object")
            signature = base64.b64decode(seal.pop("signature"))
            Ed25519PublicKey.from_public_bytes(self.key.public).verify(
                signature, rfc8785.dumps(seal)
            )
            cp = self.key.open(seal["checkpoint"])
            frontier = Frontier(seal["end_seq"], [bytes.fromhex(h) for h in seal["frontier"]])
        except (
            ValueError,
            KeyError,
            TypeError,
            InputError,
            InvalidSignature,
            CheckpointError,
        ) as exc:
            self.report.fail(
                "bad_signature",
                None,
                number,
                f"seal {segment_name(number)}: {exc or 'bad signature'}",
            )
            raise _Stop from None
        if cp.size != seal["end_seq"] or frontier.root() != cp.root:
            self.report.fail(
                "bad_signature",
                seal["end_seq"],
                number,
                f"seal {segment_name(number)} does not match its own checkpoint",
            )
            raise _Stop
        self.roots.setdefault(cp.size, []).append((f"seal {segment_name(number)}", cp))
        self.signed = max(self.signed, cp.size)
        self._forks(cp.size)
        seal["_frontier"] = frontier
        return seal

    def _match_seal(self, seal: dict[str, Any], number: int) -> None:
        if (
            seal["end_seq"] != self.frontier.size
            or seal["final_hash"] != self.prev
            or seal["_frontier"].root() != self.frontier.root()
        ):
            self.report.fail(
                "hash_mismatch",
                self.frontier.size - 1,
                number,
                f"segment {segment_name(number)} does not match its seal",
            )
            raise _Stop

    def _check_retention(self, signed: int) -> None:
        """An expired segment needs a `log.retention` record, inside a signed checkpoint, that
        expired it. Anything else is a deleted segment."""
        covered = max((t for seq, t in self.retention if seq < signed), default=0)
        for number in self.report.expired_segments:
            if number > covered:
                self.report.fail(
                    "missing_segment",
                    None,
                    number,
                    f"segment {segment_name(number)} was removed without a signed retention record",
                )
                raise _Stop


_LINE_START = b'{"hash":"'
_RECORD_START = b'","record":{"data":'
_HEX = frozenset(b"0123456789abcdef")


def _torn(rest: bytes) -> bool:
    """What a writer killed mid-write leaves: a prefix of one record line, then possibly NULs
    (blocks allocated but never written), or NULs alone."""
    head = rest.rstrip(b"\x00")
    if b"\x00" in head or b"\n" in head:
        return False
    if len(head) <= len(_LINE_START):
        return _LINE_START.startswith(head)
    digest = head[len(_LINE_START) : len(_LINE_START) + 64]
    after = head[len(_LINE_START) + 64 :]
    return (
        head.startswith(_LINE_START)
        and set(digest) <= _HEX
        and (_RECORD_START.startswith(after) or after.startswith(_RECORD_START))
    )
