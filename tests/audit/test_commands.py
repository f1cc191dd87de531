"""`hazmat audit ...` through the real entry point, on a log written by AuditLog."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from hazmat.audit.log import AuditLog


def hazmat(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hazmat", "audit", *args], capture_output=True, text=True, timeout=60
    )


def write_log(path: Path, records: int = 20) -> AuditLog:
    log = AuditLog(path)
    for i in range(records):
        log.append("test.event", {"i": i})
    log.close()
    return log


def test_verify_show_proof_and_pubkey(tmp_path: Path) -> None:
    log = write_log(tmp_path)
    verify = hazmat("verify", "--log", str(tmp_path))
    assert verify.returncode == 0 and "INTACT" in verify.stdout
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
    assert result.returncode == 1
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
    assert result.returncode == 0 and json.loads(result.stdout)["consistent"] is True
    # Rewrite history and re-sign it with the log's own key: the old checkpoint catches it.
    shutil.rmtree(tmp_path / "segments")
    (tmp_path / "segments").mkdir()
    (tmp_path / "checkpoint").unlink()
    rewritten = AuditLog(tmp_path)
    for i in range(20):
        rewritten.append("test.event", {"i": -i})
    rewritten.close()
    result = hazmat("consistency", str(old), "--log", str(tmp_path))
    assert result.returncode == 1 and json.loads(result.stdout)["consistent"] is False


def test_a_missing_log_is_a_clear_error(tmp_path: Path) -> None:
    result = hazmat("verify", "--log", str(tmp_path / "nothing"))
    assert result.returncode == 2 and "is not a hazmat audit log" in result.stderr


def test_json_output_carries_no_raw_control_characters(tmp_path: Path) -> None:
    log = AuditLog(tmp_path)
    log.append("test.event", {"text": "a\x85b\x9b[31m\x7f\u2028"})
    log.close()
    shown = hazmat("show", "--log", str(tmp_path), "--json").stdout
    assert all(ch == "\n" or 0x20 <= ord(ch) < 0x7F for ch in shown)
    assert json.loads(shown.splitlines()[-1])["data"]["text"] == "a\x85b\x9b[31m\x7f\u2028"
