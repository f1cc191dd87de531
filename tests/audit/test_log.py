"""Appending, checkpoints, and the verifier against every kind of tampering."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from hazmat.audit.checkpoint import Checkpoint, Signer, VerifierKey
from hazmat.audit.log import AuditLog
from hazmat.audit.records import encode_line, parse_line
from hazmat.audit.verify import verify_log


def make_log(path: Path, records: int = 30, **kwargs: object) -> AuditLog:
    log = AuditLog(path, **kwargs)  # type: ignore[arg-type]
    for i in range(records):
        log.append("test.event", {"i": i, "text": f"record {i}"})
    return log


def segment(path: Path, number: int = 1) -> Path:
    return path / "segments" / f"{number:06d}.jsonl"


def lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def problem(path: Path, **kwargs: object) -> tuple[str, int | None]:
    report = verify_log(path, **kwargs)  # type: ignore[arg-type]
    assert not report.ok and report.problem is not None
    return report.problem.kind, report.problem.seq


def test_an_untouched_log_verifies(tmp_path: Path) -> None:
    make_log(tmp_path, 30).close()
    report = verify_log(tmp_path)
    assert report.ok, report.problem
    assert (report.verified_from, report.verified_to) == (0, 31)  # + key_created
    assert report.expected_to == 31


def test_key_is_created_once_with_mode_0600(tmp_path: Path) -> None:
    make_log(tmp_path, 1).close()
    assert (tmp_path / "key.ed25519").stat().st_mode & 0o777 == 0o600
    make_log(tmp_path, 1).close()
    kinds = [parse_line(x)[0].kind for x in lines(segment(tmp_path))]
    assert kinds.count("log.key_created") == 1


def test_flipped_byte_is_a_hash_mismatch(tmp_path: Path) -> None:
    make_log(tmp_path).close()
    data = bytearray(segment(tmp_path).read_bytes())
    at = data.index(b"record 12")
    data[at + 7] ^= 0x01  # "record 12" -> "record 02"... still valid JSON
    segment(tmp_path).write_bytes(bytes(data))
    assert problem(tmp_path) == ("hash_mismatch", 13)


def test_edited_record_with_its_own_hash_recomputed_breaks_the_chain(tmp_path: Path) -> None:
    make_log(tmp_path).close()
    rows = lines(segment(tmp_path))
    record, _ = parse_line(rows[10])
    forged = type(record)(record.seq, record.ts, record.kind, record.prev, {"i": 999})
    rows[10] = encode_line(forged)[0]
    segment(tmp_path).write_bytes(b"".join(rows))
    assert problem(tmp_path) == ("chain_break", 11)


def test_deleted_middle_record_breaks_the_chain(tmp_path: Path) -> None:
    make_log(tmp_path).close()
    rows = lines(segment(tmp_path))
    del rows[15]
    segment(tmp_path).write_bytes(b"".join(rows))
    assert problem(tmp_path) == ("chain_break", 15)


def test_swapped_records_are_reordered(tmp_path: Path) -> None:
    make_log(tmp_path).close()
    rows = lines(segment(tmp_path))
    rows[5], rows[6] = rows[6], rows[5]
    segment(tmp_path).write_bytes(b"".join(rows))
    assert problem(tmp_path) == ("reordered", 5)


def test_garbage_line_is_unparseable(tmp_path: Path) -> None:
    make_log(tmp_path).close()
    rows = lines(segment(tmp_path))
    rows[3] = b"{not json\n"
    segment(tmp_path).write_bytes(b"".join(rows))
    assert problem(tmp_path) == ("unparseable", 3)


def test_cut_tail_is_found_against_a_checkpoint(tmp_path: Path) -> None:
    make_log(tmp_path).close()
    saved = tmp_path.parent / "saved-checkpoint"
    shutil.copy(tmp_path / "checkpoint", saved)
    rows = lines(segment(tmp_path))
    segment(tmp_path).write_bytes(b"".join(rows[:20]))
    # The log's own checkpoint still says 31: cutting the tail is caught by it...
    assert problem(tmp_path) == ("truncated", 20)
    # ...and if the attacker also rewrites that, by a checkpoint kept elsewhere.
    (tmp_path / "checkpoint").unlink()
    assert verify_log(tmp_path).ok
    assert problem(tmp_path, checkpoint_files=[saved]) == ("truncated", 20)


def test_cut_tail_is_found_against_the_anchor_copy(tmp_path: Path) -> None:
    log_dir, anchor = tmp_path / "log", tmp_path / "anchor"
    make_log(log_dir, anchor=anchor).close()
    rows = lines(segment(log_dir))
    segment(log_dir).write_bytes(b"".join(rows[:10]))
    (log_dir / "checkpoint").unlink()
    assert verify_log(log_dir).ok  # without the anchor this is undetectable
    assert problem(log_dir, anchor=anchor) == ("truncated", 10)


def test_older_full_copy_is_found_only_with_an_anchor(tmp_path: Path) -> None:
    log_dir, anchor, old = tmp_path / "log", tmp_path / "anchor", tmp_path / "old"
    log = make_log(log_dir, 10, anchor=anchor)
    log.checkpoint()
    shutil.copytree(log_dir, old)
    for i in range(10):
        log.append("test.event", {"i": 100 + i})
    log.close()
    shutil.rmtree(log_dir)
    shutil.copytree(old, log_dir)
    assert verify_log(log_dir).ok
    assert problem(log_dir, anchor=anchor)[0] == "truncated"


def test_forged_checkpoint_with_another_key_is_a_bad_signature(tmp_path: Path) -> None:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    log = make_log(tmp_path)
    log.close()
    forger = Signer(log.origin, Ed25519PrivateKey.generate())
    report = verify_log(tmp_path)
    forged = forger.sign(Checkpoint(log.origin, report.verified_to, b"\x00" * 32))
    (tmp_path / "checkpoint").write_text(forged)
    assert problem(tmp_path)[0] == "bad_signature"


def test_verifying_with_an_explicit_public_key(tmp_path: Path) -> None:
    log = make_log(tmp_path)
    log.close()
    key = VerifierKey.decode(log.signer.verifier.encode())
    assert verify_log(tmp_path, key=key).ok
    other = Signer(
        log.origin,
        __import__(
            "cryptography.hazmat.primitives.asymmetric.ed25519", fromlist=["x"]
        ).Ed25519PrivateKey.generate(),
    ).verifier
    assert problem(tmp_path, key=other)[0] == "bad_signature"


def test_deleted_middle_segment_fails_but_an_expired_one_passes(tmp_path: Path) -> None:
    kept, pruned = tmp_path / "kept", tmp_path / "pruned"
    make_log(kept, 60, segment_records=10).close()
    shutil.rmtree(kept / "segments" / "000002.jsonl", ignore_errors=True)
    segment(kept, 2).unlink(missing_ok=True)
    assert problem(kept)[0] == "missing_segment"
    make_log(pruned, 60, segment_records=10, keep_segments=2).close()
    report = verify_log(pruned)
    assert report.ok, report.problem
    assert report.expired_segments and report.verified_from > 0


def test_seal_that_does_not_match_its_segment(tmp_path: Path) -> None:
    make_log(tmp_path, 30, segment_records=10).close()
    seal_path = tmp_path / "seals" / "000001.json"
    seal = json.loads(seal_path.read_text())
    seal["final_hash"] = "0" * 64
    seal_path.write_text(json.dumps(seal))
    assert problem(tmp_path)[0] == "bad_signature"


def test_torn_tail_is_cut_and_recorded(tmp_path: Path) -> None:
    make_log(tmp_path, 5).close()
    with segment(tmp_path).open("ab") as f:
        f.write(b'{"hash":"abc","rec')  # a writer killed mid-write
    log = AuditLog(tmp_path)
    kinds = [parse_line(x)[0].kind for x in lines(segment(tmp_path))]
    assert kinds[-1] == "log.recovered_torn_tail"  # cut and recorded on open
    seq = log.append("after", {})
    log.close()
    assert seq == 7
    assert verify_log(tmp_path).ok


def test_damage_before_the_tail_stops_the_writer(tmp_path: Path) -> None:
    from hazmat import AuditDamaged

    make_log(tmp_path, 5).close()
    rows = lines(segment(tmp_path))
    rows[2] = rows[2].replace(b"record", b"RECORD")
    segment(tmp_path).write_bytes(b"".join(rows))
    with pytest.raises(AuditDamaged, match="hazmat audit verify"):
        AuditLog(tmp_path)  # refused on open, before anything can be appended
