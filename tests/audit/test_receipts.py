"""Receipts: one record shown to a third party, checked with the verifier key alone."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest

from hazmat import AuditError, InputError
from hazmat.audit.checkpoint import VerifierKey
from hazmat.audit.log import AuditLog
from hazmat.audit.receipts import check_receipt, make_receipt, parse_receipt
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


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], VerifierKey, Path]:
    """One good receipt, its log's key, and that key's file (made once: a log takes seconds)."""
    folder = tmp_path_factory.mktemp("receipt")
    log, seq = write_log(folder / "log")
    (folder / "hazmat.pub").write_text(log.signer.verifier.encode())
    return make_receipt(folder / "log", log.signer.verifier, seq), log.signer.verifier, folder


def check_file(folder: Path, text: str) -> Invoked:
    (folder / "receipt.json").write_text(text)
    receipt, key = str(folder / "receipt.json"), str(folder / "hazmat.pub")
    return hazmat("check-receipt", receipt, "--pubkey", key)


def deep_record(r: dict[str, object]) -> None:
    r["record"] = "[" * 100_000


@pytest.mark.parametrize(
    ("tamper", "said"),
    [
        (deep_record, "its record is nested deeper than 32 levels"),
        (lambda r: r.update(record='{"seq": ' + "9" * 5000 + "}"), "its record has a number"),
        (lambda r: r.update(record="[1]"), "its record is a list, not an object"),
        (lambda r: r.update(checkpoint=1), "'checkpoint' is a int, not a str"),
        (lambda r: r.update(checkpoint=[]), "'checkpoint' is a list, not a str"),
        (lambda r: r.update(checkpoint={}), "'checkpoint' is a dict, not a str"),
        (lambda r: r.update(checkpoint=None), "'checkpoint' is a NoneType, not a str"),
        (lambda r: r.update(checkpoint=True), "'checkpoint' is a bool, not a str"),
        (lambda r: r.update(seq=True), "'seq' is a bool, not a int"),
        (lambda r: r.update(seq=-1), "'seq' -1 is not a record number"),
        (lambda r: r.update(seq=10**30), "'seq' 1000"),
        (lambda r: r.update(path=["zz"]), "'path' must be at most 64 SHA-256 hashes"),
        (lambda r: r.update(path=[None]), "'path' must be at most 64 SHA-256 hashes"),
        (lambda r: r.update(path=["00" * 32] * 65), "'path' must be at most 64 SHA-256 hashes"),
        (lambda r: r.update(receipt=True), "version True, not 1"),
        (lambda r: r.pop("seq"), "no 'seq'"),
    ],
)
def test_a_receipt_is_checked_whole_before_it_is_used(
    made: tuple[dict[str, Any], VerifierKey, Path], tamper: object, said: str
) -> None:
    """Every part of a receipt has its type and bounds checked first (nested, a number where
    a note goes, a huge number): "not a receipt", never RecursionError or AttributeError, and
    `hazmat audit check-receipt` says so as bad input (exit 2; it was 70, internal error)."""
    good, key, folder = made
    receipt = copy.deepcopy(good)
    tamper(receipt)  # type: ignore[operator]
    with pytest.raises(InputError, match=f"not a receipt: .*{re.escape(said)}"):
        parse_receipt(receipt)
    with pytest.raises(AuditError, match=f"not a receipt: .*{re.escape(said)}"):
        check_receipt(receipt, key)
    checked = check_file(folder, json.dumps(receipt))
    assert checked.exit_code == 2, checked.stderr
    assert "not a receipt: " in checked.stderr and said in checked.stderr


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("[" * 100_000, "its JSON is nested deeper than 32 levels"),
        ('{"receipt": 1, "record": "\\udc80"}', "its JSON: field 'record' holds a lone"),
        ("not json", "its JSON is not JSON"),
        ("[1, 2]", "a list, not an object"),
    ],
)
def test_check_receipt_on_a_file_that_is_no_receipt_is_bad_input(
    made: tuple[dict[str, Any], VerifierKey, Path], text: str, said: str
) -> None:
    checked = check_file(made[2], text)
    assert checked.exit_code == 2, checked.stderr
    assert said in checked.stderr and "internal error" not in checked.stderr
