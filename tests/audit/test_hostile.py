"""Crashes, a full disk, threads and a hostile directory: the verdicts and what the writer does."""

from __future__ import annotations

import errno
import fcntl
import os
import subprocess
import threading
from pathlib import Path

import pytest
from forge import hazmat, records_of, verify

from hazmat import AuditDamaged, AuditError
from hazmat.audit import log as log_module
from hazmat.audit.log import AuditLog


def make(path: Path, n: int = 20, **kwargs: object) -> Path:
    log = AuditLog(path, **kwargs)  # type: ignore[arg-type]
    for i in range(n):
        log.append("test.event", {"i": i})
    log.close()
    pub = path.parent / f"{path.name}.pub"
    pub.write_text((path / "pubkey").read_text())
    return pub


def current(path: Path) -> Path:
    return sorted((path / "segments").glob("*.jsonl"))[-1]


# --- crash or tampering ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "tail",
    [
        b'{"hash":"ab12',
        b'{"hash":"' + b"c" * 64 + b'","record":{"data":{"i"',
        b"\x00" * 4096,
        b'{"hash":"a' + b"\x00" * 100,
    ],
)
def test_a_crash_tail_is_a_crash_not_tampering(tmp_path: Path, tail: bytes) -> None:
    pub = make(tmp_path / "log")
    with current(tmp_path / "log").open("ab") as f:
        f.write(tail)
    report = verify(tmp_path / "log", pub)
    assert report["ok"] and report["verdict"] == "crash", report
    assert report["crash"]["bytes"] == len(tail)
    log = AuditLog(tmp_path / "log")  # the writer cuts it and says so
    log.close()
    assert records_of(current(tmp_path / "log"))[-1]["kind"] == "log.recovered_torn_tail"
    assert verify(tmp_path / "log", pub)["verdict"] == "intact"


@pytest.mark.parametrize("tail", [b"garbage", b'{"hash":"zz', b"\x00\x00x\x00", b"}\n"])
def test_a_partial_line_that_is_no_record_prefix_is_tampering(tmp_path: Path, tail: bytes) -> None:
    pub = make(tmp_path / "log")
    with current(tmp_path / "log").open("ab") as f:
        f.write(tail)
    report = verify(tmp_path / "log", pub)
    assert report["verdict"] == "tampered" and report["problem"]["kind"] == "unparseable"


def test_crash_at_every_step_of_expiry_verifies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Expiry writes leaf hashes, then its record and a checkpoint, then deletes. A crash after
    each step leaves a log that verifies, and the next writer finishes the job."""
    for step in ("leaves", "record", "delete"):
        path = tmp_path / step
        make(path, 25, segment_records=10)  # segments 1, 2 sealed
        log = AuditLog(path, segment_records=10, keep_segments=1)  # expires on open
        log.close()
        assert (path / "segments" / "000001.leaves").exists()
        pub = path.parent / f"{path.name}.pub"
        assert verify(path, pub)["verdict"] == "intact"
        # Undo the later steps to stand in for a crash before them.
        if step in ("leaves", "record"):
            seg1 = path / "segments" / "000001.jsonl"
            assert not seg1.exists()
    # A crash between the record and the deletion: both files exist, the record is signed.
    path = tmp_path / "both"
    make(path, 25, segment_records=10)
    real_unlink = Path.unlink

    def crash(self: Path, missing_ok: bool = False) -> None:
        if self.suffix == ".jsonl":
            raise KeyboardInterrupt("killed")
        real_unlink(self, missing_ok=missing_ok)

    monkeypatch.setattr(Path, "unlink", crash)
    with pytest.raises(KeyboardInterrupt):
        AuditLog(path, segment_records=10, keep_segments=1)
    monkeypatch.setattr(Path, "unlink", real_unlink)
    assert (path / "segments" / "000001.jsonl").exists()
    assert (path / "segments" / "000001.leaves").exists()
    pub = path.parent / "both.pub"
    assert verify(path, pub)["verdict"] == "intact"
    AuditLog(path, segment_records=10, keep_segments=1).close()  # finishes the expiry
    assert not (path / "segments" / "000001.jsonl").exists()
    assert verify(path, pub)["verdict"] == "intact"


def test_verifying_beside_a_live_writer_never_says_tampered(tmp_path: Path) -> None:
    """120 verifications, each while another process appends 20 records (with seals and
    checkpoints on the way: 40 segments). Each verification reads the whole log, so the test's
    time grows with the square of the count (300 took 40 s on CI's machines)."""
    import sys

    from hazmat.audit.checkpoint import VerifierKey
    from hazmat.audit.verify import verify_log

    pub = make(tmp_path / "log", 5)
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(tmp_path / "log")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert writer.stdin is not None and writer.stdout is not None
    key = VerifierKey.decode(pub.read_text())
    verdicts = []
    for _ in range(120):
        writer.stdin.write("go\n")
        writer.stdin.flush()  # the writer appends while this verification runs
        verdicts.append(verify_log(tmp_path / "log", key))
        assert writer.stdout.readline() == "done\n"
    writer.stdin.close()
    assert writer.wait(timeout=60) == 0
    writer.stdout.close()
    bad = [(r.verdict, r.problem) for r in verdicts if r.verdict != "intact"]
    assert not bad, bad[:3]
    assert len({r.verified_to for r in verdicts}) > 40  # each saw the log at another size


WRITER = """
import sys
from hazmat.audit.log import AuditLog
log = AuditLog(sys.argv[1], checkpoint_every=7, segment_records=60)
n = 0
for _ in sys.stdin:
    for _ in range(20):
        log.append("test.live", {"n": n, "pad": "x" * (n % 40) * 30})
        n += 1
    print("done", flush=True)
log.close()
"""


# --- a full disk ------------------------------------------------------------------------------


def test_a_short_write_is_completed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = os.write
    monkeypatch.setattr(log_module.os, "write", lambda fd, data: real(fd, bytes(data)[:7]))
    pub = make(tmp_path / "log", 3)
    monkeypatch.undo()
    assert verify(tmp_path / "log", pub)["verdict"] == "intact"


def test_disk_full_fails_the_append_and_loses_nothing_acknowledged(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    mount = tmp_path / "small"
    mount.mkdir()
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=96k,mode=0700", "tmpfs", str(mount)], check=True
    )
    try:
        path = mount / "log"
        log = AuditLog(path)
        acked, error = [], None
        for i in range(10_000):
            try:
                acked.append(log.append("test.fill", {"i": i, "pad": "x" * 200}))
            except AuditError as exc:
                error = exc
                break
        assert error is not None and "disk full (ENOSPC)" in str(error)
        size = current(path).stat().st_size
        assert current(path).read_bytes().endswith(b"\n")  # nothing partial left behind
        with pytest.raises(AuditError, match="disk full"):
            log.append("test.fill", {"i": -1, "pad": "x" * 200})
        assert current(path).stat().st_size == size
        try:
            log.close()  # its final checkpoint needs space too: it may fail the same way
        except AuditError as exc:
            assert "disk full" in str(exc)
        assert set(acked) <= {r["seq"] for r in records_of(current(path))}
        pub = tmp_path / "pub"
        pub.write_text((path / "pubkey").read_text())
        assert verify(path, pub)["verdict"] == "intact"
    finally:
        subprocess.run(["umount", str(mount)], check=False)


def test_the_cli_names_the_errno_and_runs_nothing(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    mount = tmp_path / "full"
    mount.mkdir()
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=16k,mode=0700", "tmpfs", str(mount)], check=True
    )
    try:
        (mount / "ballast").write_bytes(b"x" * 12_000)
        result = hazmat("run", "-c", "print('ran')", env={"HAZMAT_AUDIT_DIR": str(mount / "log")})
        assert result.exit_code == 74, result.stderr
        assert "disk full" in result.stderr and "ran" not in result.stdout
    finally:
        subprocess.run(["umount", str(mount)], check=False)


# --- threads and the directory -----------------------------------------------------------------


def test_checkpoints_concurrent_with_appends_keep_the_log_whole(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "log", segment_records=50)

    def append() -> None:
        for i in range(300):
            log.append("test.t", {"i": i})

    def checkpoint() -> None:
        for _ in range(100):
            log.checkpoint()

    threads = [threading.Thread(target=f) for f in (append, append, checkpoint, checkpoint)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    log.close()
    pub = tmp_path / "pub"
    pub.write_text((tmp_path / "log" / "pubkey").read_text())
    assert verify(tmp_path / "log", pub)["verdict"] == "intact"


def test_planted_symlinks_are_never_followed(tmp_path: Path) -> None:
    make(tmp_path / "log", 3)
    victim = tmp_path / "victim"
    victim.write_text("precious")
    for pid in range(os.getpid() - 5, os.getpid() + 5):
        os.symlink(victim, tmp_path / "log" / f".checkpoint.{pid}.tmp")
    log = AuditLog(tmp_path / "log")
    log.append("x", {})
    log.close()
    assert victim.read_text() == "precious"


def test_a_directory_others_can_write_is_refused(tmp_path: Path) -> None:
    make(tmp_path / "log", 1)
    os.chmod(tmp_path / "log", 0o775)
    with pytest.raises(AuditError, match="chmod 700"):
        AuditLog(tmp_path / "log")
    if os.geteuid() == 0:  # only root can give the directory away
        os.chown(tmp_path / "log", 4321, -1)
        os.chmod(tmp_path / "log", 0o700)
        with pytest.raises(AuditError, match="belongs to uid 4321"):
            AuditLog(tmp_path / "log")


def test_a_directory_others_can_read_is_closed(tmp_path: Path) -> None:
    make(tmp_path / "log", 1)
    os.chmod(tmp_path / "log", 0o755)
    AuditLog(tmp_path / "log").close()
    assert (tmp_path / "log").stat().st_mode & 0o777 == 0o700


def test_a_missing_key_is_never_replaced(tmp_path: Path) -> None:
    make(tmp_path / "log", 3)
    (tmp_path / "log" / "key.ed25519").unlink()
    with pytest.raises(AuditDamaged, match="restore the key"):
        AuditLog(tmp_path / "log")
    assert not (tmp_path / "log" / "key.ed25519").exists()


def test_a_held_lock_times_out_with_a_clear_error(tmp_path: Path) -> None:
    make(tmp_path / "log", 1)
    fd = os.open(tmp_path / "log" / "lock", os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        with pytest.raises(AuditError, match="held the audit log lock"):
            AuditLog(tmp_path / "log", lock_timeout=0.2)
    finally:
        os.close(fd)


def test_io_errors_name_the_errno() -> None:
    from hazmat.audit.layout import io_message

    assert io_message(OSError(errno.ENOSPC, "No space left on device")) == "disk full (ENOSPC)"
    assert "EIO" in io_message(OSError(errno.EIO, "Input/output error"))


def test_the_code_diff_skips_a_partial_line_and_reads_a_bounded_tail(tmp_path: Path) -> None:
    from hazmat.audit.run_records import _previous_from

    log = AuditLog(tmp_path / "log")
    log.append("run.started", {"session": "s1", "code": "print(1)\n", "code_truncated": False})
    log.append("run.started", {"session": "s2", "code": "x", "code_truncated": False})
    with current(tmp_path / "log").open("ab") as f:
        f.write(b'{"hash":"00","record":{"data":{"session":"s1","kind":"run.started"')
    s1 = ("script", "s1")
    assert _previous_from(log, None, s1) == "print(1)\n"  # no JSONDecodeError on the partial line
    assert _previous_from(log, None, ("script", "nobody")) is None
    assert _previous_from(log, "tenant:other key:0", s1) is None  # another caller's label
    log.close()


@pytest.mark.parametrize(
    "seal", [b"[" * 100_000, b'"a string"', b"[1, 2]", b'{"end_seq": ' + b"9" * 5000 + b"}"]
)
def test_a_forged_seal_is_reported_never_a_crash(tmp_path: Path, seal: bytes) -> None:
    """A seal is what a forger may write: nested 100,000 deep, not an object, a 5,000-digit
    number. It was a RecursionError or an AttributeError; it is a bad signature."""
    path = tmp_path / "log"
    pub = make(path, 25, segment_records=10)  # segments 1 and 2 sealed
    (sealed,) = [s for s in sorted((path / "seals").iterdir()) if s.name.startswith("000001")]
    sealed.write_bytes(seal)
    report = verify(path, pub)
    assert not report["ok"]
    assert report["problem"]["kind"] == "bad_signature", report


@pytest.mark.parametrize(
    ("option", "text"),
    [
        ("--checkpoint", '"a note"\n1\n'),  # AttributeError: 'int' object has no 'partition'
        ("--checkpoint", '"a note"\n' + "[" * 100_000 + "\n"),
        ("--anchor", "[" * 100_000 + "\n"),  # RecursionError
        ("--anchor", '"\\udc80"\n[1]\n'),
    ],
)
def test_checkpoint_and_anchor_files_that_hold_no_notes_are_errors(
    tmp_path: Path, option: str, text: str
) -> None:
    path = tmp_path / "log"
    pub = make(path, 3)
    given = tmp_path / "given"
    if option == "--anchor":
        given.mkdir()
        (given / "checkpoints").write_text(text)
    else:
        given.write_text(text)
    said = hazmat("audit", "verify", "--log", str(path), "--pubkey", str(pub), option, str(given))
    assert said.exit_code in (1, 74), said.stderr  # does not verify; an anchor it cannot read
    assert "internal error" not in said.stderr
    assert "is not a checkpoint" in said.stdout + said.stderr
