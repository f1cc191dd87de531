"""Someone who can write the log directory (and so read its key) against a verifier who keeps
the public key and an anchor elsewhere. Every attack is built with tests/audit/forge.py, not
with hazmat's writer; the verdicts come from `hazmat audit verify --pubkey P --anchor A`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from forge import (
    canon,
    hazmat,
    line_of,
    mth,
    rechain,
    records_of,
    resign,
    sign,
    verify,
)

from hazmat import AuditDamaged, AuditError
from hazmat.audit.log import AuditLog


@pytest.fixture
def world(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A log of 40 records with an anchor, and its verifier key saved outside it."""
    log_dir, anchor = tmp_path / "log", tmp_path / "anchor"
    log = AuditLog(log_dir, anchor=anchor, segment_records=15)
    for i in range(40):
        log.append("test.event", {"i": i, "text": f"record {i}"})
    log.close()
    pubkey = tmp_path / "verifier.pub"
    pubkey.write_text((log_dir / "pubkey").read_text())
    return log_dir, anchor, pubkey


def current(log_dir: Path) -> Path:
    return sorted((log_dir / "segments").glob("*.jsonl"))[-1]


def assert_writer_refuses(log_dir: Path, anchor: Path) -> None:
    with pytest.raises(AuditDamaged, match="hazmat audit verify"):
        AuditLog(log_dir, anchor=anchor, segment_records=15)


def assert_tampered(log_dir: Path, anchor: Path, pubkey: Path, kinds: set[str]) -> None:
    """Tampered before any write, the writer refuses, and still tampered after it tried."""
    before = verify(log_dir, pubkey, "--anchor", str(anchor))
    assert before["verdict"] == "tampered" and before["problem"]["kind"] in kinds, before
    assert_writer_refuses(log_dir, anchor)
    after = verify(log_dir, pubkey, "--anchor", str(anchor))
    assert after["verdict"] == "tampered", after


# --- the writer must not launder ----------------------------------------------------------


def test_cut_tail_with_a_fresh_own_checkpoint_is_refused(world: tuple[Path, Path, Path]) -> None:
    log_dir, anchor, pubkey = world
    seg = current(log_dir)
    seg.write_bytes(b"".join(seg.read_bytes().splitlines(keepends=True)[:-3]))
    resign(log_dir)
    assert_tampered(log_dir, anchor, pubkey, {"truncated"})


def test_rewritten_record_with_the_chain_recomputed_is_refused(
    world: tuple[Path, Path, Path],
) -> None:
    log_dir, anchor, pubkey = world
    seg = current(log_dir)
    records = records_of(seg)
    records[1]["data"] = {"i": 999, "text": "forged"}
    seg.write_bytes(rechain(records, records[0]["prev"]))
    resign(log_dir)
    assert_tampered(log_dir, anchor, pubkey, {"hash_mismatch", "fork"})


def test_whole_history_replaced_and_resigned_is_refused(world: tuple[Path, Path, Path]) -> None:
    log_dir, anchor, pubkey = world
    shutil.rmtree(log_dir / "segments")
    shutil.rmtree(log_dir / "seals")
    (log_dir / "segments").mkdir(mode=0o700)
    (log_dir / "seals").mkdir(mode=0o700)
    (log_dir / "index" / "blocks").unlink(missing_ok=True)
    fake = [
        {"data": {"i": -i}, "kind": "test.event", "prev": "", "seq": i, "ts": "2026-01-01T00:00Z"}
        for i in range(5)
    ]
    (log_dir / "segments" / "000001.jsonl").write_bytes(rechain(fake))
    resign(log_dir)
    assert_tampered(log_dir, anchor, pubkey, {"truncated", "hash_mismatch", "fork"})


def test_an_ordinary_run_refuses_a_tampered_log(world: tuple[Path, Path, Path]) -> None:
    log_dir, anchor, pubkey = world
    seg = current(log_dir)
    seg.write_bytes(b"".join(seg.read_bytes().splitlines(keepends=True)[:-2]))
    resign(log_dir)
    policy = log_dir.parent / "policy.yaml"
    policy.write_text(f"audit:\n  anchor: {anchor}\n  segment_records: 15\n")
    env = {"HAZMAT_AUDIT_DIR": str(log_dir)}
    result = hazmat("run", "--policy", str(policy), "-c", "print(1)", env=env)
    assert result.exit_code == 74, result.stderr
    assert "cannot be extended" in result.stderr and "hazmat audit verify" in result.stderr
    assert verify(log_dir, pubkey, "--anchor", str(anchor))["verdict"] == "tampered"


# --- retention and names ------------------------------------------------------------------


def test_retention_claimed_by_raw_bytes_in_a_stray_file_is_rejected(
    world: tuple[Path, Path, Path],
) -> None:
    log_dir, anchor, pubkey = world
    (log_dir / "segments" / "000000.jsonl").write_bytes(b'{"expired_through":2}\n')
    (log_dir / "segments" / "000001.jsonl").unlink()
    assert_tampered(log_dir, anchor, pubkey, {"unexpected_file"})


def test_segment_replaced_by_its_leaf_hashes_without_a_retention_record(
    world: tuple[Path, Path, Path],
) -> None:
    log_dir, anchor, pubkey = world
    first = log_dir / "segments" / "000001.jsonl"
    leaves = [line[line.index(b'"record":') + 9 : -1] for line in first.read_bytes().splitlines()]
    (log_dir / "segments" / "000001.leaves").write_bytes(
        b"".join(__import__("hashlib").sha256(b"\x00" + b).digest() for b in leaves)
    )
    first.unlink()
    before = verify(log_dir, pubkey, "--anchor", str(anchor))
    assert before["problem"]["kind"] == "missing_segment", before
    assert "without a signed retention record" in before["problem"]["detail"]


@pytest.mark.parametrize("name", ["001.jsonl", "+1.jsonl", "1.jsonl", "0000001.jsonl"])
def test_shadow_segment_names_are_reported(world: tuple[Path, Path, Path], name: str) -> None:
    log_dir, anchor, pubkey = world
    real = log_dir / "segments" / "000001.jsonl"
    shutil.copy(real, log_dir / "segments" / name)  # the pristine copy...
    records = records_of(real)
    records[2]["data"]["text"] = "edited"  # ...and the real one edited
    real.write_bytes(b"".join(line_of(r) for r in records))
    assert_tampered(log_dir, anchor, pubkey, {"unexpected_file"})


def test_a_deleted_seal_is_missing_and_the_writer_does_not_reuse_the_segment(
    world: tuple[Path, Path, Path],
) -> None:
    log_dir, anchor, pubkey = world
    (log_dir / "seals" / "000001.json").unlink()
    assert_tampered(log_dir, anchor, pubkey, {"missing_seal"})


# --- checkpoints ---------------------------------------------------------------------------


def test_two_roots_for_one_size_is_a_fork_in_either_order(
    world: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    log_dir, _anchor, pubkey = world
    real, forged = tmp_path / "real.cp", tmp_path / "forged.cp"
    real.write_text((log_dir / "checkpoint").read_text())
    size = int(real.read_text().splitlines()[1])
    forged.write_text(sign(log_dir, size, b"\x07" * 32))
    for order in ((real, forged), (forged, real)):
        args = [x for cp in order for x in ("--checkpoint", str(cp))]
        report = verify(log_dir, pubkey, *args)
        assert report["problem"]["kind"] == "fork", report


def test_a_user_checkpoint_is_not_replaced_by_a_resigned_one(
    world: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    log_dir, _anchor, pubkey = world
    kept = tmp_path / "kept.cp"
    kept.write_text((log_dir / "checkpoint").read_text())
    seg = current(log_dir)
    records = records_of(seg)
    records[-1]["data"] = {"i": -1}
    seg.write_bytes(rechain(records, records[0]["prev"]))
    resign(log_dir)  # same size as the user's checkpoint, another root
    report = verify(log_dir, pubkey, "--checkpoint", str(kept))
    assert report["verdict"] == "tampered"
    assert report["problem"]["kind"] in {"fork", "hash_mismatch"}


def test_every_anchored_checkpoint_is_compared_even_in_expired_segments(tmp_path: Path) -> None:
    log_dir, anchor = tmp_path / "log", tmp_path / "anchor"
    log = AuditLog(log_dir, anchor=anchor, segment_records=10, keep_segments=2)
    for i in range(25):
        log.append("test.event", {"i": i})
        if i == 4:
            log.checkpoint()  # an anchored checkpoint inside what will expire
    for i in range(40):
        log.append("test.event", {"i": 100 + i})
    log.close()
    pubkey = tmp_path / "pub"
    pubkey.write_text((log_dir / "pubkey").read_text())
    report = verify(log_dir, pubkey, "--anchor", str(anchor))
    assert report["ok"] and report["expired_segments"], report
    assert report["checkpoints_verified"] >= len(report["checkpoints"])  # + the seals'

    # The key holder rewrites an expired segment's leaf hashes and re-signs its seal.
    leaves_file = sorted((log_dir / "segments").glob("*.leaves"))[0]
    data = bytearray(leaves_file.read_bytes())
    data[3 * 32] ^= 1
    leaves_file.write_bytes(bytes(data))
    seal_path = log_dir / "seals" / f"{leaves_file.stem}.json"
    seal = json.loads(seal_path.read_text())
    seal.pop("signature")
    import base64

    from cryptography.hazmat.primitives import serialization

    key = serialization.load_pem_private_key((log_dir / "key.ed25519").read_bytes(), None)
    leaves = [bytes(data[i : i + 32]) for i in range(0, len(data), 32)]
    seal["checkpoint"] = sign(log_dir, seal["end_seq"], mth(leaves))
    seal["signature"] = base64.b64encode(key.sign(canon(seal))).decode()  # type: ignore[union-attr]
    seal_path.write_text(json.dumps(seal))
    report = verify(log_dir, pubkey, "--anchor", str(anchor))
    assert report["verdict"] == "tampered", report


def test_an_empty_anchor_fails(world: tuple[Path, Path, Path], tmp_path: Path) -> None:
    log_dir, _, pubkey = world
    empty = tmp_path / "empty-anchor"
    empty.mkdir()
    report = verify(log_dir, pubkey, "--anchor", str(empty))
    assert report["problem"]["kind"] == "empty_anchor"


# --- proofs --------------------------------------------------------------------------------


def test_proof_does_not_vouch_for_an_edited_record(world: tuple[Path, Path, Path]) -> None:
    log_dir, _, pubkey = world
    good = hazmat("audit", "proof", "3", "--log", str(log_dir), "--pubkey", str(pubkey))
    assert good.exit_code == 0 and json.loads(good.stdout)["verified"] is True
    seg = log_dir / "segments" / "000001.jsonl"
    rows = seg.read_bytes().splitlines(keepends=True)
    record = json.loads(rows[3])["record"]
    record["data"]["text"] = "edited"
    rows[3] = line_of(record)  # its own hash recomputed, the chain left alone
    seg.write_bytes(b"".join(rows))
    result = hazmat("audit", "proof", "3", "--log", str(log_dir), "--pubkey", str(pubkey))
    assert result.exit_code == 1 and json.loads(result.stdout)["verified"] is False


def test_consistency_does_not_vouch_for_an_edited_history(
    world: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    log_dir, anchor, pubkey = world
    old = tmp_path / "old.cp"
    old.write_text((log_dir / "checkpoint").read_text())
    log = AuditLog(log_dir, anchor=anchor, segment_records=15)
    for i in range(5):
        log.append("test.more", {"i": i})
    log.close()
    args = ("audit", "consistency", str(old), "--log", str(log_dir), "--pubkey", str(pubkey))
    assert json.loads(hazmat(*args).stdout)["consistent"] is True
    seg = log_dir / "segments" / "000002.jsonl"
    rows = seg.read_bytes().splitlines(keepends=True)
    record = json.loads(rows[4])["record"]
    record["data"]["text"] = "edited"
    rows[4] = line_of(record)
    seg.write_bytes(b"".join(rows))
    result = hazmat(*args)
    assert result.exit_code == 1 and json.loads(result.stdout)["consistent"] is False


def test_a_forged_index_costs_time_not_a_verdict(world: tuple[Path, Path, Path]) -> None:
    log_dir, anchor, pubkey = world
    log = AuditLog(log_dir, anchor=anchor, segment_records=15)
    for i in range(2100):
        log.append("test.more", {"i": i})
    log.close()
    index = log_dir / "index" / "blocks"
    data = bytearray(index.read_bytes())
    data[0] ^= 0xFF  # a wrong hash for block 0
    index.write_bytes(bytes(data))
    proof = hazmat("audit", "proof", "1500", "--log", str(log_dir), "--pubkey", str(pubkey))
    assert json.loads(proof.stdout)["verified"] is True
    AuditLog(log_dir, anchor=anchor, segment_records=15).close()  # opens: not damage


# --- records -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        b'{"data":{"i":1,"i":2},"kind":"x","prev":"%s","seq":%d,"ts":"t"}',  # duplicate key
        b'{"data":{"i":1},"kind":"x","prev":"%s","seq":%d,"ts":"t","kind":"y"}',
        b'{"kind":"x","data":{"i":1},"prev":"%s","seq":%d,"ts":"t"}',  # key order
        b'{"data":{"i":1.0},"kind":"x","prev":"%s","seq":%d,"ts":"t"}',  # number form
        b'{"data":{"i":"\\u0041"},"kind":"x","prev":"%s","seq":%d,"ts":"t"}',  # escape
    ],
)
def test_records_must_be_canonical(world: tuple[Path, Path, Path], body: bytes) -> None:
    log_dir, _anchor, pubkey = world
    seg = current(log_dir)
    records = records_of(seg)
    last = json.loads(seg.read_bytes().splitlines()[-1])
    forged = body % (last["hash"].encode(), records[-1]["seq"] + 1)
    with seg.open("ab") as f:
        f.write(line_of({}, forged))
    resign(log_dir)
    report = verify(log_dir, pubkey)
    assert report["problem"]["kind"] == "unparseable", report


def test_verifying_needs_no_private_key(world: tuple[Path, Path, Path], tmp_path: Path) -> None:
    log_dir, anchor, pubkey = world
    copy = tmp_path / "copy"
    shutil.copytree(log_dir, copy)
    (copy / "key.ed25519").unlink()
    assert verify(copy, pubkey, "--anchor", str(anchor))["verdict"] == "intact"
    plain = hazmat("audit", "verify", "--log", str(copy))
    assert plain.exit_code == 0 and "INTACT" in plain.stdout


def test_unreadable_segment_is_exit_74_not_a_traceback(world: tuple[Path, Path, Path]) -> None:
    log_dir, _, pubkey = world
    seg = current(log_dir)
    seg.unlink()
    seg.mkdir()  # root reads anything: a directory where the file was cannot be read
    for command in (["show"], ["verify"], ["proof", "1"]):
        result = hazmat("audit", *command, "--log", str(log_dir), "--pubkey", str(pubkey))
        assert result.exit_code in (1, 74) and "Traceback" not in result.stderr, result
    with pytest.raises(AuditError):
        AuditLog(log_dir)
