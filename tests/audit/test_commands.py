"""`hazmat audit ...` through the real entry point, on a log written by AuditLog."""

from __future__ import annotations

import base64
import json
import os
import shutil
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from hazmat import AuditDamaged
from hazmat.audit.log import AuditLog
from hazmat.cli import main
from hazmat.testing import Invoked, invoke


def hazmat(*args: str) -> Invoked:
    return invoke(["audit", *args])


def write_log(path: Path, records: int = 20) -> AuditLog:
    log = AuditLog(path)
    for i in range(records):
        log.append("test.event", {"i": i})
    log.close()
    return log


def test_verify_show_proof_and_pubkey(tmp_path: Path) -> None:
    log = write_log(tmp_path)
    verify = hazmat("verify", "--log", str(tmp_path))
    assert verify.exit_code == 0 and "INTACT" in verify.stdout
    assert "verified records 0..20" in verify.stdout
    shown = hazmat("show", "--log", str(tmp_path), "--json", "--since", "18").stdout.splitlines()
    assert [json.loads(x)["seq"] for x in shown] == [18, 19, 20]
    proof = json.loads(hazmat("proof", "5", "--log", str(tmp_path)).stdout)
    assert proof["verified"] is True and proof["tree_size"] == 21
    assert hazmat("pubkey", "--log", str(tmp_path)).stdout.strip() == log.signer.verifier.encode()


def test_verify_reports_the_first_problem_and_exits_1(tmp_path: Path) -> None:
    write_log(tmp_path)
    segment = tmp_path / "segments" / "000001.jsonl"
    rows = segment.read_bytes().splitlines(keepends=True)
    segment.write_bytes(b"".join(rows[:10]))
    result = hazmat("verify", "--log", str(tmp_path), "--json")
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert report["problem"]["kind"] == "truncated" and report["problem"]["seq"] == 10
    assert (report["verified_to"], report["expected_to"]) == (10, 21)
    human = hazmat("verify", "--log", str(tmp_path))
    assert "TAMPERED" in human.stdout and "first problem: truncated at seq 10" in human.stdout


def test_consistency_with_an_old_checkpoint(tmp_path: Path) -> None:
    log = AuditLog(tmp_path)
    for i in range(7):
        log.append("test.event", {"i": i})
    old = tmp_path.parent / "old.checkpoint"
    old.write_text(log.checkpoint())
    for i in range(9):
        log.append("test.event", {"i": i})
    log.close()
    result = hazmat("consistency", str(old), "--log", str(tmp_path))
    assert result.exit_code == 0 and json.loads(result.stdout)["consistent"] is True
    # Rewrite history and re-sign it with the log's own key: the old checkpoint catches it.
    shutil.rmtree(tmp_path / "segments")
    (tmp_path / "segments").mkdir()
    (tmp_path / "checkpoint").unlink()
    rewritten = AuditLog(tmp_path)
    for i in range(20):
        rewritten.append("test.event", {"i": -i})
    rewritten.close()
    result = hazmat("consistency", str(old), "--log", str(tmp_path))
    assert result.exit_code == 1 and json.loads(result.stdout)["consistent"] is False


def test_a_missing_log_is_a_clear_error(tmp_path: Path) -> None:
    result = hazmat("verify", "--log", str(tmp_path / "nothing"))
    assert result.exit_code == 2 and "is not a hazmat audit log" in result.stderr


def test_json_output_carries_no_raw_control_characters(tmp_path: Path) -> None:
    log = AuditLog(tmp_path)
    log.append("test.event", {"text": "a\x85b\x9b[31m\x7f\u2028"})
    log.close()
    shown = hazmat("show", "--log", str(tmp_path), "--json").stdout
    assert all(ch == "\n" or 0x20 <= ord(ch) < 0x7F for ch in shown)
    assert json.loads(shown.splitlines()[-1])["data"]["text"] == "a\x85b\x9b[31m\x7f\u2028"


PEM_PUBLIC_KEY = (  # a fixed key: whether its base64 holds a "+" decides the reason
    Ed25519PrivateKey.from_private_bytes(bytes(32))
    .public_key()
    .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
)
NOT_A_KEY = (
    "is not an Ed25519 verifier key (the one line `hazmat audit pubkey` prints: "
    "<name>+<hex key hash>+<base64 key>)"
)


def in_process(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["audit", *argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (bytes(range(200, 256)) + bytes(8), "not UTF-8 text (byte 0)"),
        (b"", "not three parts joined by '+'"),
        (PEM_PUBLIC_KEY, "not three parts joined by '+'"),
        (b"log+00000000+not base64!", "its key part is not base64"),
        (b"log+00000000+" + base64.b64encode(bytes(33)), "its key part is not 0x01 and 32 bytes"),
        (
            b"log+00000000+" + base64.b64encode(bytes([1] * 33)),
            "its key hash does not match its key",
        ),
        (b"x" * 70_000, "over 65536 bytes"),
    ],
)
def test_a_key_file_of_the_wrong_kind_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes, why: str
) -> None:
    """Every command that reads a verifier key (it was an internal error, UnicodeDecodeError,
    for a file of random bytes)."""
    write_log(tmp_path / "log")
    key = tmp_path / "hazmat.pub"
    key.write_bytes(content)
    receipt = tmp_path / "receipt.json"
    receipt.write_text("{}")  # the key is read first
    commands = [
        ["check-receipt", str(receipt), "--pubkey", str(key)],
        ["verify", "--log", str(tmp_path / "log"), "--pubkey", str(key)],
        ["proof", "3", "--log", str(tmp_path / "log"), "--pubkey", str(key)],
        ["receipt", "3", "--log", str(tmp_path / "log"), "--pubkey", str(key)],
        ["pubkey", "--log", str(tmp_path / "log"), "--pubkey", str(key)],
        ["consistency", str(receipt), "--log", str(tmp_path / "log"), "--pubkey", str(key)],
    ]
    for argv in commands:
        assert in_process(capsys, *argv) == (2, "", f"hazmat: error: {key} {NOT_A_KEY}: {why}\n")


def test_the_logs_own_files_damaged_are_reported_never_an_internal_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Random bytes for the log's checkpoint, then for its verifier key."""
    write_log(tmp_path)
    (tmp_path / "checkpoint").write_bytes(os.urandom(64))
    code, out, _ = in_process(capsys, "verify", "--log", str(tmp_path), "--json")
    assert code == 1
    assert json.loads(out)["problem"]["detail"] == (
        f"checkpoint {tmp_path / 'checkpoint'}: not a signed note"
    )
    for command in ("proof", "receipt"):
        assert in_process(capsys, command, "3", "--log", str(tmp_path)) == (
            74,
            "",
            f"hazmat: error: no valid checkpoint in {tmp_path}: not a signed note\n",
        )
    (tmp_path / "pubkey").write_bytes(b"\xff" * 64)
    code, out, _ = in_process(capsys, "verify", "--log", str(tmp_path), "--json")
    assert code == 1
    assert json.loads(out)["problem"]["detail"] == (
        f"no usable verifier key {tmp_path / 'pubkey'}: {tmp_path / 'pubkey'} {NOT_A_KEY}: "
        "not UTF-8 text (byte 0)"
    )
    assert in_process(capsys, "pubkey", "--log", str(tmp_path)) == (
        2,
        "",
        f"hazmat: error: {tmp_path / 'pubkey'} {NOT_A_KEY}: not UTF-8 text (byte 0)\n",
    )
    with pytest.raises(AuditDamaged, match="pubkey does not match the signing key"):
        AuditLog(tmp_path)


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (bytes(range(256)) * 4, "not a PEM private key"),
        (
            ec.generate_private_key(ec.SECP256R1()).private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            ),
            "it is another kind of key (ECPrivateKey)",
        ),
        (
            Ed25519PrivateKey.generate().private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.BestAvailableEncryption(b"secret"),
            ),
            "it is encrypted",
        ),
    ],
)
def test_a_signing_key_of_the_wrong_kind_says_so(tmp_path: Path, content: bytes, why: str) -> None:
    write_log(tmp_path)
    (tmp_path / "key.ed25519").write_bytes(content)
    with pytest.raises(AuditDamaged) as refused:
        AuditLog(tmp_path)
    assert str(refused.value).startswith(
        f"the audit log {tmp_path} cannot be extended: {tmp_path / 'key.ed25519'} is not an "
        f"Ed25519 private key (PEM, PKCS#8, unencrypted): {why}; "
    )


def test_a_receipt_file_that_is_not_json_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_log(tmp_path / "log")
    receipt = tmp_path / "receipt.json"
    receipt.write_bytes(b"\xff" * 64)
    key = str(tmp_path / "log" / "pubkey")
    code, out, err = in_process(capsys, "check-receipt", str(receipt), "--pubkey", key)
    assert (code, out) == (2, "")
    assert err.startswith(f"hazmat: error: {receipt}: not a receipt: its JSON is not UTF-8 (byte 0")
