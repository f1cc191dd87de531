"""The store of paused sessions (sessions/store.py): encrypted, bound to id and owner, files
of mode 0600 in a folder of 0700; a changed, moved or expired entry is refused with a clear
error, never a crash."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import pytest

from hazmat._exceptions import InfraError, SessionNotFound
from hazmat.sessions.store import Paused, SessionStore

SID = "s-0123456789abcdef"


def _paused(sid: str = SID, owner: str | None = "tenant:a", at: float | None = None) -> Paused:
    return Paused(
        id=sid,
        language="python",
        trust="untrusted",
        runtime="runsc",
        image="python-data",
        caller=None,
        owner=owner,
        paused_at=time.time() if at is None else at,
        archive_bytes=5,
        saved=("frame",),
        lost={"f": "defined in the session: its code is not kept"},
    )


def test_a_paused_session_comes_back_as_it_was_kept(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "paused", keep_s=3600)
    store.put(_paused(), b"tar!!")
    paused, archive = store.get(SID, "tenant:a")
    assert (paused, archive) == (_paused(at=paused.paused_at), b"tar!!")
    info = paused.info(store.keep_s)
    assert info["state"] == "paused" and info["variables"]["saved"] == ["frame"]
    assert stat.S_IMODE((tmp_path / "paused").stat().st_mode) == 0o700
    for path in (tmp_path / "paused").iterdir():
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
        assert b"tar!!" not in path.read_bytes() and b"frame" not in path.read_bytes()
    store.remove(SID)
    with pytest.raises(SessionNotFound):
        store.get(SID, "tenant:a")


@pytest.mark.parametrize("owner", ["tenant:b", None])
def test_another_owner_finds_nothing(tmp_path: Path, owner: str | None) -> None:
    store = SessionStore(tmp_path, keep_s=3600)
    store.put(_paused(), b"tar")
    with pytest.raises(SessionNotFound, match="no paused session"):
        store.get(SID, owner)


def test_an_entry_moved_to_another_id_does_not_open(tmp_path: Path) -> None:
    store = SessionStore(tmp_path, keep_s=3600)
    store.put(_paused(), b"tar")
    other = "s-ffffffffffffffff"
    for suffix in (".json", ".tar"):
        os.rename(tmp_path / f"{SID}{suffix}", tmp_path / f"{other}{suffix}")
    with pytest.raises(SessionNotFound):
        store.get(other, "tenant:a")


def test_a_changed_archive_is_a_clear_error(tmp_path: Path) -> None:
    store = SessionStore(tmp_path, keep_s=3600)
    store.put(_paused(), b"tar")
    sealed = bytearray((tmp_path / f"{SID}.tar").read_bytes())
    sealed[-1] ^= 1
    (tmp_path / f"{SID}.tar").write_bytes(bytes(sealed))
    with pytest.raises(InfraError, match="missing or damaged"):
        store.get(SID, "tenant:a")


@pytest.mark.parametrize("sid", ["../key", "s-0123", "S-0123456789ABCDEF", "s-0123456789abcdef/"])
def test_an_id_that_is_not_one_is_not_looked_up(tmp_path: Path, sid: str) -> None:
    with pytest.raises(SessionNotFound):
        SessionStore(tmp_path, keep_s=3600).get(sid, "tenant:a")


def test_an_expired_pause_is_gone(tmp_path: Path) -> None:
    store = SessionStore(tmp_path, keep_s=60)
    store.put(_paused(at=time.time() - 61), b"tar")
    with pytest.raises(SessionNotFound, match="expired"):
        store.get(SID, "tenant:a")
    assert not (tmp_path / f"{SID}.tar").exists()


def test_the_sweep_removes_what_is_past_its_keep(tmp_path: Path) -> None:
    store = SessionStore(tmp_path, keep_s=60)
    store.put(_paused(), b"tar")
    store.put(_paused("s-1111111111111111"), b"tar")
    old = time.time() - 120
    os.utime(tmp_path / f"{SID}.json", (old, old))
    assert store.sweep() == [SID]
    assert sorted(p.name for p in tmp_path.glob("s-*")) == [
        "s-1111111111111111.json",
        "s-1111111111111111.key",
        "s-1111111111111111.tar",
    ]


def test_a_damaged_key_is_named(tmp_path: Path) -> None:
    store = SessionStore(tmp_path, keep_s=60)
    store.put(_paused(), b"tar")
    (tmp_path / "key").write_bytes(b"short")
    with pytest.raises(InfraError, match=r"key .* is damaged"):
        store.get(SID, "tenant:a")


def test_a_session_sealed_with_another_key_names_both_keys(tmp_path: Path) -> None:
    """Services that share a shelf but not a key: the operator's to fix, so it is said."""
    SessionStore(tmp_path / "a", keep_s=60).put(_paused(), b"tar")
    other = SessionStore(tmp_path / "b", keep_s=60)
    other.put(_paused("s-1111111111111111"), b"tar")  # makes b's own key
    for part in ("json", "tar", "key"):
        os.rename(tmp_path / "a" / f"{SID}.{part}", tmp_path / "b" / f"{SID}.{part}")
    with pytest.raises(InfraError, match=r"another key than .*b/key .* same key file"):
        other.get(SID, "tenant:a")


def test_the_key_id_does_not_give_the_key_away(tmp_path: Path) -> None:
    store = SessionStore(tmp_path, keep_s=60)
    store.put(_paused(), b"tar")
    key_id = (tmp_path / f"{SID}.key").read_bytes()
    assert len(key_id) == 16 and key_id.hex() not in (tmp_path / "key").read_bytes().hex()
    assert bytes.fromhex(key_id.decode()) not in (tmp_path / "key").read_bytes()
