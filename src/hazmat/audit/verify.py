"""Verify an audit log: every record, the chain, the Merkle tree, seals and checkpoints.

The report says which range was verified, which range was expected (the longest of the log
and every checkpoint given or found in the anchor), and the first problem: its seq, segment
and kind. Kinds: `unparseable`, `hash_mismatch`, `chain_break`, `reordered`,
`missing_segment`, `bad_signature`, `truncated`.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import rfc8785
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from hazmat.audit.checkpoint import (
    Checkpoint,
    CheckpointError,
    Signer,
    VerifierKey,
    load_or_create_key,
)
from hazmat.audit.log import segment_name
from hazmat.audit.merkle import Frontier, leaf_hash
from hazmat.audit.records import GENESIS, LineError, Record, parse_line_exact

__all__ = ["Problem", "Report", "log_key", "verify_log"]

_RETENTION = re.compile(rb'"expired_through":([0-9]+)')


@dataclass(frozen=True)
class Problem:
    kind: str
    seq: int | None
    segment: int | None
    detail: str


@dataclass
class Report:
    ok: bool = True
    verified_from: int = 0
    verified_to: int = 0  # exclusive
    expected_to: int = 0
    records: int = 0
    expired_segments: list[int] = field(default_factory=list)
    checkpoints: list[str] = field(default_factory=list)
    key: str = ""
    problem: Problem | None = None

    def fail(self, kind: str, seq: int | None, segment: int | None, detail: str) -> None:
        if self.problem is None:
            self.problem = Problem(kind, seq, segment, detail)
        self.ok = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class _Stop(Exception):
    pass


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
    notes = [(p, p.read_text()) for p in checkpoint_files]
    for candidate in (directory / "checkpoint", anchor / "checkpoint" if anchor else None):
        if candidate and candidate.exists():
            notes.append((candidate, candidate.read_text()))
    checkpoints = []
    for path, note in notes:
        try:
            checkpoints.append(key.open(note))
            report.checkpoints.append(str(path))
        except CheckpointError as exc:
            report.fail("bad_signature", None, None, f"checkpoint {path}: {exc}")
    try:
        _walk(directory, key, checkpoints, report)
    except _Stop:
        pass
    report.expected_to = max([report.verified_to, *(c.size for c in checkpoints)])
    return report


def log_key(directory: Path, report: Report) -> VerifierKey | None:
    """The verifier key of the log's own signing key (weaker than one kept elsewhere)."""
    path = directory / "key.ed25519"
    origin = directory / "origin"
    if not path.exists() or not origin.exists():
        report.fail("missing_segment", None, None, f"{directory} is not an audit log")
        return None
    private, _ = load_or_create_key(path)
    return Signer(origin.read_text().strip(), private).verifier


def _walk(directory: Path, key: VerifierKey, checkpoints: list[Checkpoint], report: Report) -> None:
    segments = {int(p.stem): p for p in (directory / "segments").glob("*.jsonl")}
    seals = {int(p.stem): p for p in (directory / "seals").glob("*.json")}
    expired = _expired(segments.values())
    last = max([*segments, *seals], default=0)
    frontier, prev = Frontier(), GENESIS
    roots = {c.size: c for c in checkpoints}
    for number in range(1, last + 1):
        if number not in segments:
            if number in expired and number in seals:
                frontier, prev = _resume_from_seal(seals[number], number, key, report)
                report.expired_segments.append(number)
                report.verified_from = frontier.size
                continue
            report.fail(
                "missing_segment",
                frontier.size,
                number,
                f"segment {segment_name(number)} is missing and no retention record expired it",
            )
            raise _Stop
        prev = _check_segment(segments[number], number, frontier, prev, roots, report)
        if number in seals:
            _check_seal(seals[number], number, frontier, prev, key, report)
    report.verified_to = frontier.size
    for cp in checkpoints:
        if cp.size > frontier.size:
            report.fail(
                "truncated",
                frontier.size,
                last,
                f"the log has {frontier.size} records; a signed checkpoint has {cp.size}",
            )
            raise _Stop
    if frontier.size in roots:
        _compare_root(roots[frontier.size], frontier, last, report)


def _check_segment(
    path: Path,
    number: int,
    frontier: Frontier,
    prev: str,
    roots: dict[int, Checkpoint],
    report: Report,
) -> str:
    lines = path.read_bytes().split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    parsed: list[tuple[Record, str, bytes] | LineError] = []
    for line in lines:
        try:
            parsed.append(parse_line_exact(line))
        except LineError as exc:
            parsed.append(exc)
    seqs = [p[0].seq if isinstance(p, tuple) else None for p in parsed]
    for i, item in enumerate(parsed):
        expected = frontier.size
        if expected in roots:
            _compare_root(roots[expected], frontier, number, report)
        if isinstance(item, LineError):
            report.fail("unparseable", expected, number, f"line {i + 1}: {item}")
            raise _Stop
        record, stored, body = item
        leaf = leaf_hash(body)
        if stored != leaf.hex():
            report.fail(
                "hash_mismatch",
                record.seq,
                number,
                f"line {i + 1}: the record does not hash to its stored hash",
            )
            raise _Stop
        if record.seq != expected:
            later = expected in seqs[i + 1 :]
            kind = "reordered" if record.seq < expected or later else "chain_break"
            report.fail(
                kind, expected, number, f"line {i + 1}: expected seq {expected}, found {record.seq}"
            )
            raise _Stop
        if record.prev != prev:
            report.fail(
                "chain_break",
                record.seq,
                number,
                f"line {i + 1}: prev does not match the previous record's hash",
            )
            raise _Stop
        frontier.append(leaf)
        prev = stored
        report.records += 1
    return prev


def _compare_root(cp: Checkpoint, frontier: Frontier, segment: int, report: Report) -> None:
    if frontier.root() != cp.root:
        report.fail(
            "hash_mismatch",
            cp.size - 1,
            segment,
            f"the tree of the first {cp.size} records does not match a signed checkpoint",
        )
        raise _Stop


def _load_seal(path: Path, key: VerifierKey, report: Report, number: int) -> dict[str, Any]:
    try:
        seal: dict[str, Any] = json.loads(path.read_text())
        signature = base64.b64decode(seal.pop("signature"))
        Ed25519PublicKey.from_public_bytes(key.public).verify(signature, rfc8785.dumps(seal))
        cp = key.open(seal["checkpoint"])
    except (ValueError, KeyError, InvalidSignature, CheckpointError) as exc:
        report.fail("bad_signature", None, number, f"seal {path.name}: {exc or 'bad signature'}")
        raise _Stop from None
    frontier = Frontier(seal["end_seq"], [bytes.fromhex(h) for h in seal["frontier"]])
    if cp.size != seal["end_seq"] or frontier.root() != cp.root:
        report.fail(
            "bad_signature",
            seal["end_seq"],
            number,
            f"seal {path.name} does not match its own checkpoint",
        )
        raise _Stop
    seal["_frontier"] = frontier
    return seal


def _check_seal(
    path: Path, number: int, frontier: Frontier, prev: str, key: VerifierKey, report: Report
) -> None:
    seal = _load_seal(path, key, report, number)
    if (
        seal["end_seq"] != frontier.size
        or seal["final_hash"] != prev
        or seal["_frontier"].root() != frontier.root()
    ):
        report.fail(
            "hash_mismatch",
            frontier.size - 1,
            number,
            f"segment {segment_name(number)} does not match its seal",
        )
        raise _Stop


def _resume_from_seal(
    path: Path, number: int, key: VerifierKey, report: Report
) -> tuple[Frontier, str]:
    seal = _load_seal(path, key, report, number)
    return seal["_frontier"].copy(), str(seal["final_hash"])


def _expired(paths: Iterable[Path]) -> set[int]:
    """Segments that a retention record says were removed (the record is verified later)."""
    through = 0
    for path in paths:
        for match in _RETENTION.finditer(path.read_bytes()):
            through = max(through, int(match.group(1)))
    return set(range(1, through + 1))
