"""Receipts: one record shown to a third party, checked with the verifier key alone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hazmat import AuditError
from hazmat.audit.checkpoint import VerifierKey
from hazmat.audit.log import AuditLog
from hazmat.audit.receipts import check_receipt, make_receipt
from hazmat.testing import Invoked, invoke

VERDICT = {"task": "sum-1", "code_sha256": "ab" * 32, "verdict": "accepted", "score": 1.0}


def grown(note: str) -> str:
    """The signed note with its tree size changed (its signature then covers other text)."""
    lines = note.split("\n")
    lines[1] = str(int(lines[1]) + 1)
    return "\n".join(lines)


def write_log(path: Path) -> tuple[AuditLog, int]:
    log = AuditLog(path)
    for i in range(1500):  # past one block of 1024 leaves: the path crosses blocks
        log.append("test.event", {"i": i})
    seq = log.append("grade.verdict", VERDICT)
    for i in range(5):
        log.append("test.event", {"i": i})
    log.close()  # a final signed checkpoint
    return log, seq


def test_a_receipt_proves_its_record_with_the_key_alone(tmp_path: Path) -> None:
    log, seq = write_log(tmp_path / "log")
    key = log.signer.verifier
    receipt = make_receipt(tmp_path / "log", key, seq)
    shown = json.loads(json.dumps(receipt))  # as a file would carry it
    record = check_receipt(shown, key)
    assert (record["seq"], record["kind"], record["data"]) == (seq, "grade.verdict", VERDICT)


@pytest.mark.parametrize(
    ("tamper", "said"),
    [
        (lambda r: r.update(record=r["record"].replace("accepted", "rejected")), "inclusion"),
        (lambda r: r["path"].__setitem__(0, "00" * 32), "inclusion"),
        (lambda r: r.update(seq=r["seq"] + 1), "not record number"),
        (lambda r: r.update(checkpoint=grown(r["checkpoint"])), "bad signature"),
        (lambda r: r.pop("path"), "not a receipt"),
    ],
)
def test_an_altered_receipt_does_not_verify(tmp_path: Path, tamper: object, said: str) -> None:
    log, seq = write_log(tmp_path / "log")
    receipt = make_receipt(tmp_path / "log", log.signer.verifier, seq)
    tamper(receipt)  # type: ignore[operator]
    with pytest.raises(AuditError, match=said):
        check_receipt(receipt, log.signer.verifier)


def test_another_logs_key_does_not_vouch_for_it(tmp_path: Path) -> None:
    log, seq = write_log(tmp_path / "log")
    other, _ = write_log(tmp_path / "other")
    receipt = make_receipt(tmp_path / "log", log.signer.verifier, seq)
    with pytest.raises(AuditError, match="checkpoint does not verify"):
        check_receipt(receipt, other.signer.verifier)


def test_a_record_past_the_latest_checkpoint_has_no_receipt_yet(tmp_path: Path) -> None:
    log = AuditLog(tmp_path, checkpoint_every=10_000, checkpoint_seconds=3600)
    log.append("test.event", {})
    log.checkpoint()
    seq = log.append("grade.verdict", VERDICT)
    with pytest.raises(AuditError, match="not in the latest checkpoint"):
        make_receipt(tmp_path, log.signer.verifier, seq)
    log.close()
    assert check_receipt(make_receipt(tmp_path, log.signer.verifier, seq), log.signer.verifier)


def hazmat(*args: str) -> Invoked:
    return invoke(["audit", *args])


def test_the_commands_make_and_check_a_receipt(tmp_path: Path) -> None:
    log, seq = write_log(tmp_path / "log")
    made = hazmat("receipt", str(seq), "--log", str(tmp_path / "log"))
    assert made.exit_code == 0, made.stderr
    elsewhere = tmp_path / "reviewer"  # no log here: the receipt and the key only
    elsewhere.mkdir()
    (elsewhere / "receipt.json").write_text(made.stdout)
    (elsewhere / "hazmat.pub").write_text(log.signer.verifier.encode())
    good = hazmat(
        "check-receipt", str(elsewhere / "receipt.json"), "--pubkey", str(elsewhere / "hazmat.pub")
    )
    assert good.exit_code == 0, good.stderr
    assert json.loads(good.stdout)["record"]["data"] == VERDICT
    (elsewhere / "receipt.json").write_text(made.stdout.replace("accepted", "rejected"))
    bad = hazmat(
        "check-receipt", str(elsewhere / "receipt.json"), "--pubkey", str(elsewhere / "hazmat.pub")
    )
    assert bad.exit_code == 1 and json.loads(bad.stdout)["verified"] is False
    missing = hazmat("receipt", "99999", "--log", str(tmp_path / "log"))
    assert missing.exit_code == 74 and "not in the latest checkpoint" in missing.stderr
    assert isinstance(VerifierKey.decode(log.signer.verifier.encode()), VerifierKey)
