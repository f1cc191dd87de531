"""Paused sessions in the cluster's Redis (cluster/paused.py): any service (and worker) of the
cluster resumes a session another paused, given the same key file; one resume at a time; another key
is named, never a silent 404; Redis holds nothing readable."""

from __future__ import annotations

import shutil
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from workers import start_worker

from hazmat._exceptions import InfraError, SessionBusy, SessionNotFound
from hazmat.cluster.keys import paused_key
from hazmat.cluster.paused import CLAIM_S, RedisShelf
from hazmat.sessions.store import Paused, SessionStore
from server_helpers import start_server, stop_server

SID = "s-0123456789abcdef"


def _paused(owner: str = "tenant:a", at: float | None = None) -> Paused:
    return Paused(
        id=SID,
        language="python",
        trust="unknown",
        runtime="runsc",
        image=None,
        caller=None,
        owner=owner,
        paused_at=time.time() if at is None else at,
        archive_bytes=11,
        saved=("frame",),
    )


def _stores(tmp: Path, client: Any, keep_s: float = 3600) -> tuple[SessionStore, SessionStore]:
    """Two services' stores: their own directories, the same key file, one Redis."""
    one = SessionStore(tmp / "one", keep_s, RedisShelf(client))
    one.put(_paused(at=0 if keep_s < 0 else None), b"the archive")  # makes one's key
    (tmp / "two").mkdir(mode=0o700)
    shutil.copy2(tmp / "one" / "key", tmp / "two" / "key")
    return one, SessionStore(tmp / "two", keep_s, RedisShelf(client))


def test_another_service_resumes_what_one_paused(tmp_path: Path, redis_client: Any) -> None:
    one, two = _stores(tmp_path, redis_client)
    assert not list((tmp_path / "one").glob("s-*"))  # nothing of it on one's disk
    sealed = redis_client.hgetall(paused_key(SID))
    assert set(sealed) == {b"json", b"tar", b"key"}
    assert not any(b"the archive" in v or b"frame" in v for v in sealed.values())
    assert 3590 <= redis_client.ttl(paused_key(SID)) <= 3600  # it expires by itself
    with two.claim(SID):
        paused, archive = two.get(SID, "tenant:a")
        two.remove(SID)
    assert (paused.saved, archive) == (("frame",), b"the archive")
    with pytest.raises(SessionNotFound):
        one.get(SID, "tenant:a")


def test_another_owner_finds_nothing_and_another_key_is_named(
    tmp_path: Path, redis_client: Any
) -> None:
    one, _ = _stores(tmp_path, redis_client)
    with pytest.raises(SessionNotFound, match="no paused session"):
        one.get(SID, "tenant:b")
    stranger = SessionStore(tmp_path / "three", 3600, RedisShelf(redis_client))
    with pytest.raises(InfraError, match=r"another key than .*three/key.* same key file"):
        stranger.get(SID, "tenant:a")


def test_the_console_lists_paused_sessions_for_their_owner_only(
    tmp_path: Path, redis_client: Any
) -> None:
    one, two = _stores(tmp_path, redis_client)
    with one.claim(SID):  # a claim's own key is not a session
        assert [p.id for p in two.listing(["tenant:b", "tenant:a"])] == [SID]
        assert two.listing(["tenant:b"]) == []
    stranger = SessionStore(tmp_path / "three", 3600, RedisShelf(redis_client))
    assert stranger.listing(["tenant:a"]) == []  # sealed with another key: left out


def test_one_resume_at_a_time(tmp_path: Path, redis_client: Any) -> None:
    one, two = _stores(tmp_path, redis_client)
    with one.claim(SID):
        with pytest.raises(SessionBusy, match="being resumed already"), two.claim(SID):
            pass
        assert 0 < redis_client.ttl(paused_key(SID, "claim")) <= CLAIM_S
    with two.claim(SID):  # given back
        pass
    assert redis_client.get(paused_key(SID, "claim")) is None


def test_a_claim_that_expired_and_was_taken_again_is_not_given_back(
    tmp_path: Path, redis_client: Any
) -> None:
    one, two = _stores(tmp_path, redis_client)
    with one.claim(SID):
        redis_client.set(paused_key(SID, "claim"), "another service's")  # as after an expiry
    assert redis_client.get(paused_key(SID, "claim")) == b"another service's"
    with pytest.raises(SessionBusy), two.claim(SID):
        pass


def test_an_expired_pause_is_gone(tmp_path: Path, redis_client: Any) -> None:
    one = SessionStore(tmp_path, 60, RedisShelf(redis_client))
    one.put(_paused(at=time.time() - 61), b"tar")
    with pytest.raises(SessionNotFound, match="expired"):
        one.get(SID, "tenant:a")
    assert not redis_client.exists(paused_key(SID))


def test_claims_race_and_exactly_one_wins(tmp_path: Path, redis_client: Any) -> None:
    one, two = _stores(tmp_path, redis_client)
    ready = threading.Barrier(8)
    losers_done = threading.Event()  # the winner holds its claim until every other has lost
    outcomes: list[str] = []
    lock = threading.Lock()

    def resume(store: SessionStore) -> None:
        ready.wait()
        try:
            with store.claim(SID):
                with lock:
                    outcomes.append("claimed")
                losers_done.wait(timeout=60)
        except SessionBusy:
            with lock:
                outcomes.append("busy")
                if outcomes.count("busy") == 7:
                    losers_done.set()

    threads = [threading.Thread(target=resume, args=((one, two)[i % 2],)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert sorted(outcomes) == ["busy"] * 7 + ["claimed"]
    assert redis_client.get(paused_key(SID, "claim")) is None


@pytest.mark.docker
def test_a_session_paused_on_one_worker_resumes_on_another(
    tmp_path: Path, redis_url: str, redis_client: Any
) -> None:
    """Two `hazmat serve --redis` on one Redis, each with its own key store and session folder,
    and a worker each, sharing its service's folder: the tenant pauses on one (its worker
    seals the session), and resumes on the other, which first names a key it lacks; the
    session comes back on the second worker, its variable and file with it."""
    one = start_server(tmp_path / "one", "--redis", redis_url)
    first = start_worker(tmp_path, redis_url, "w1", 1, tmp_path / "one" / "sessions")
    two = second = None
    try:
        with one.client() as client:
            opened = client.post("/v1/sessions", json={"language": "python"}).json()
            at = f"/v1/sessions/{opened['id']}"
            assert opened["worker"] == "w1"
            client.post(f"{at}/runs", json={"code": "total = 40\nopen('f.txt','w').write('x')"})
            assert client.post(f"{at}/pause").status_code == 200
        first.terminate()
        first.communicate(timeout=120)
        two = start_server(tmp_path / "two", "--redis", redis_url)
        second = start_worker(tmp_path, redis_url, "w2", 1, tmp_path / "two" / "sessions")
        with two.client() as client:  # the same tenant ("acme"), its key on this service
            refused = client.post(f"{at}/resume")  # this service made a key of its own
            assert refused.status_code == 503 and "same key file" in refused.text, refused.text
            shutil.copy2(tmp_path / "one" / "sessions" / "key", tmp_path / "two" / "sessions")
            shown = client.get(at).json()
            assert (shown["state"], shown["variables"]["saved"]) == ("paused", ["total"])
            resumed = client.post(f"{at}/resume")
            assert resumed.status_code == 201, resumed.text
            assert resumed.json()["worker"] == "w2"
            assert resumed.json()["resumed"]["loaded"] == ["total"]
            code = "print(total + 2, open('f.txt').read())"
            answer = client.post(f"{at}/runs", json={"code": code})
            assert answer.json()["stdout"] == "42 x\n", answer.text
            client.delete(at)
        with one.client() as client:
            assert client.post(f"{at}/resume").status_code == 404  # taken by the other
    finally:
        for service in (one, two):
            if service is not None:
                stop_server(service)
        for worker in (first, second):
            if worker is not None and worker.poll() is None:
                worker.terminate()
                worker.communicate(timeout=120)
