"""The placement script and what a worker does with a message, against a real Redis (no
engine needed); the messages' codec itself is tested in tests/service/test_wire.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hazmat import QuotaExceeded
from hazmat.cluster.keys import WORKERS, worker_key
from hazmat.cluster.placement import _PLACE
from hazmat.models import ExecutionRequest
from hazmat.policy import TrustLevel
from hazmat.service.wire import request_to_wire


def announce(
    client: Any,
    name: str,
    slots: int,
    busy: int,
    *,
    languages: str = "go,python",
    runtimes: str = "runc,runsc",
    warm: str = "",
) -> None:
    client.sadd(WORKERS, name)
    entry = {
        "slots": slots,
        "busy": busy,
        "languages": languages,
        "epoch": f"epoch-{name}",
        "runtimes": runtimes,
        "warm": warm,
    }
    client.hset(worker_key(name), mapping=entry)


def test_placement_takes_the_freest_worker_and_refuses_when_all_are_full(
    redis_client: Any,
) -> None:
    place = redis_client.register_script(_PLACE)
    announce(redis_client, "a", 2, 1)
    announce(redis_client, "b", 3, 0)
    announce(redis_client, "c", 9, 0, languages="javascript")  # knows no python
    announce(redis_client, "gone", 9, 0)
    redis_client.delete(worker_key("gone"))  # its heartbeat expired
    chosen = [place([WORKERS], ["python", "", ""]) for _ in range(4)]
    assert sorted(c[0].decode() for c in chosen) == ["a", "b", "b", "b"]
    assert place([WORKERS], ["python", "", ""]) is None  # every slot taken: a 429
    assert place([WORKERS], ["javascript", "", ""]) == [b"c", b"epoch-c"]


def test_placement_honours_runtime_warmth_and_workers_to_avoid(redis_client: Any) -> None:
    place = redis_client.register_script(_PLACE)
    announce(redis_client, "roomy", 8, 0, runtimes="runc")
    announce(redis_client, "warm", 2, 0, warm="python/runsc,go/runc")
    announce(redis_client, "down", 0, 0, runtimes="")  # its engine does not answer
    # only "warm" has runsc; it is chosen while it has a slot, then nobody
    assert place([WORKERS], ["python", "runsc", ""])[0] == b"warm"
    # a warm container beats more free slots
    assert place([WORKERS], ["python", "runsc", ""])[0] == b"warm"
    assert place([WORKERS], ["python", "runsc", ""]) is None
    announce(redis_client, "warm", 2, 0, warm="python/runsc,go/runc")
    assert place([WORKERS], ["go", "runc", ""])[0] == b"warm"
    assert place([WORKERS], ["python", "runc", ""])[0] == b"roomy"  # warm only under runsc
    # a retry avoids the workers already tried
    assert place([WORKERS], ["go", "", "warm"])[0] == b"roomy"
    assert place([WORKERS], ["go", "", "warm,roomy"]) is None
    # name=epoch avoids only that process: a new process of the name may take the retry
    assert place([WORKERS], ["go", "", "warm=epoch-warm,roomy"]) is None
    assert place([WORKERS], ["go", "", "warm=an-older-process,roomy"])[0] == b"warm"


def test_an_unused_placement_gives_its_slot_back_to_the_same_process_only(
    redis_url: str, redis_client: Any
) -> None:
    from hazmat.cluster.dispatch import Dispatcher

    announce(redis_client, "a", 1, 0)
    dispatcher = Dispatcher(redis_url)
    placed = dispatcher.place("python", "runc")
    with pytest.raises(QuotaExceeded, match="every worker of the cluster for python"):
        dispatcher.place("python", "runc")
    dispatcher.release(placed)
    dispatcher.release(placed)  # twice: once only
    assert redis_client.hget(worker_key("a"), "busy") == b"0"
    again = dispatcher.place("python")
    redis_client.hset(worker_key("a"), "epoch", "a-new-process")  # the worker restarted
    dispatcher.release(again)
    assert redis_client.hget(worker_key("a"), "busy") == b"1"  # not the new process's slot


def test_sessions_go_to_the_least_loaded_worker_and_their_calls_to_its_process_only(
    redis_url: str, redis_client: Any
) -> None:
    from hazmat.cluster.dispatch import Dispatcher

    announce(redis_client, "a", 4, 0)
    announce(redis_client, "b", 2, 0, runtimes="runc")
    announce(redis_client, "c", 9, 0, languages="javascript")
    redis_client.hset(worker_key("a"), "sessions", 3)
    redis_client.hset(worker_key("b"), "sessions", 1)
    placements = Dispatcher(redis_url).placements
    first = placements.place_session("python", "runc")
    assert (first.worker, first.epoch) == ("b", "epoch-b")  # fewer sessions beats free slots
    assert redis_client.hmget(worker_key("b"), "busy", "placing") == [b"1", b"1"]
    assert placements.place_session("python", "runsc").worker == "a"  # only a has runsc
    assert placements.place_session("python", "runc").worker == "b"  # 1 + 1 against 3 + 1
    assert placements.place_session("javascript", "runsc").worker == "c"  # c knows it
    with pytest.raises(QuotaExceeded, match="for ruby under runc"):
        placements.place_session("ruby", "runc")  # no worker knows it
    # a call of a session on b: a slot of b's process, or a plain 429, or gone with it
    with pytest.raises(QuotaExceeded, match="worker b, where the session lives, is busy"):
        placements.slot_on("b", "epoch-b")  # both slots held by the openings above
    assert placements.slot_on("a", "epoch-a") is not None
    assert redis_client.hget(worker_key("a"), "busy") == b"2"
    assert placements.slot_on("a", "an-older-process") is None  # a restarted: its sessions gone
    redis_client.delete(worker_key("a"))
    assert placements.slot_on("a", "epoch-a") is None


def test_a_workers_session_error_is_raised_again_as_its_own_class() -> None:
    from hazmat._exceptions import InfraError, SessionClosed
    from hazmat.cluster.remote_sessions import _raised

    closed = _raised({"type": "SessionClosed", "message": "session s-1 has ended: idle"})
    assert type(closed) is SessionClosed and str(closed) == "session s-1 has ended: idle"
    busy = _raised({"type": "QuotaExceeded", "message": "full", "retry_after_s": 5})
    assert isinstance(busy, QuotaExceeded) and busy.retry_after_s == 5
    strange = _raised({"type": "KeyError", "message": "'x'"})  # not a hazmat error
    assert type(strange) is InfraError and str(strange) == "KeyError: 'x'"
    mismatch = _raised({"type": "SettingsMismatch", "message": "pids"})  # more than a message
    assert type(mismatch) is InfraError and "SettingsMismatch: pids" in str(mismatch)


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["--slots", "0"], 2, "--slots must be at least 1"),
        (["--name", "../up"], 2, "a worker's name is 1-63 letters"),
        (["--redis", "redis-ish://x"], 2, "--redis 'redis-ish://x'"),
        (["--redis", "unix:///nonexistent/redis.sock"], 125, "cannot reach the cluster's Redis"),
    ],
)
def test_worker_command_errors_are_clear(args: list[str], code: int, message: str) -> None:
    import subprocess
    import sys

    argv = [sys.executable, "-m", "hazmat", "worker", "--redis", "unix:///x.sock", *args]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert done.returncode == code, done.stderr
    assert message in done.stderr and "Traceback" not in done.stderr


def test_a_worker_rechecks_the_limits_of_what_it_receives(
    redis_url: str, redis_client: Any, tmp_path: Path
) -> None:
    """A message over its trust level's ceiling (a buggy or hostile service) is answered with
    an error by the worker, and nothing reaches its engine."""
    from hazmat import Policy, Sandbox
    from hazmat.audit.log import AuditLog
    from hazmat.cluster.keys import run_key
    from hazmat.cluster.worker import ClusterWorker
    from hazmat.testing import RecordingBackend

    backend = RecordingBackend()
    with Sandbox(Policy(), backend=backend, audit=AuditLog(tmp_path)) as sandbox:
        worker = ClusterWorker(redis_url, "w-ceiling", 1, sandbox)
        over = ExecutionRequest("print(1)", "python", TrustLevel.UNTRUSTED, timeout_s=3600)
        worker.actor.fn("run-1", 1, request_to_wire(over), worker.epoch)
        worker.broker.close()
    events = redis_client.xrange(run_key("run-1.1", "events"))
    kinds = [fields[b"kind"] for _, fields in events]
    assert kinds == [b"error"], events
    error = json.loads(events[0][1][b"data"])
    assert error["type"] == "InputError" and "at most 15 s" in error["message"]
    assert backend.jobs == []


def test_a_claim_that_redis_carried_out_is_still_ours_when_retried(redis_client: Any) -> None:
    """The worker's "result" and the service's "lost" mark: a SET that Redis carried out but
    whose answer was lost (Redis restarting, a link cut) is retried; the retry must find the
    mark its own, or the result is never sent and the service waits (CI saw it wait)."""
    from hazmat.cluster.keys import claim

    key = "hazmat:run:r1.1:answered"
    redis_client.set(key, "result:epoch-a:1", nx=True)  # carried out; the answer never came
    assert claim(redis_client, key, "result:epoch-a:1")  # the retry: still ours
    assert not claim(redis_client, key, "lost:service-b")  # anyone else: answered already
    assert redis_client.get(key) == b"result:epoch-a:1"
    assert claim(redis_client, "hazmat:run:r2.1:answered", "lost:service-b")  # a fresh key


def test_a_worker_takes_an_attempt_in_one_step_with_the_services_giving_up(
    redis_client: Any,
) -> None:
    """Taking and giving up exclude each other, and each is safe to retry after a lost answer;
    a second delivery is skipped quietly in the same process and answered as lost in another."""
    from hazmat.cluster.keys import give_up, take

    assert take(redis_client, "r1.1", "epoch-a:n1") == "first"
    assert take(redis_client, "r1.1", "epoch-a:n1") == "first"  # the retry of the same call
    assert take(redis_client, "r1.1", "epoch-a:n2") == "same"  # the broker handed it twice
    assert take(redis_client, "r1.1", "epoch-b:n3") == "again"  # a new process of the name
    assert not give_up(redis_client, "r1.1", "lost:service")  # taken: the service waits on
    assert give_up(redis_client, "r2.1", "lost:service")  # nobody took it: lost
    assert give_up(redis_client, "r2.1", "lost:service")  # the retry of the same call
    assert not give_up(redis_client, "r2.1", "lost:other-service")
    assert take(redis_client, "r2.1", "epoch-a:n4") == "answered"  # turns up late: skipped


def test_a_run_whose_message_no_worker_takes_is_lost_then_retried_or_reported(
    redis_url: str, redis_client: Any, tmp_path: Path
) -> None:
    """A worker whose heartbeat goes on but which never takes the run's message (it was lost
    on the way: CI saw Redis restart as a worker fetched it, and the run wait 300 s): with
    `retry` the run is placed again and answered by another worker; with `report` the caller
    is told what happened. The message, if it turns up later, is skipped, never executed."""
    from hazmat import InfraError, Policy, Sandbox
    from hazmat.audit.log import AuditLog
    from hazmat.cluster.dispatch import Dispatcher
    from hazmat.cluster.keys import run_key
    from hazmat.cluster.worker import ClusterWorker
    from hazmat.testing import RecordingBackend

    announce(redis_client, "ghost", 9, 0)  # alive, free, and chosen first; it never fetches
    request = ExecutionRequest("print(1)", "python", TrustLevel.TRUSTED, timeout_s=5)
    backend, late = RecordingBackend(), RecordingBackend()
    with (
        Sandbox(Policy(), backend=backend, audit=AuditLog(tmp_path / "real")) as sandbox,
        Sandbox(Policy(), backend=late, audit=AuditLog(tmp_path / "late")) as ghost_box,
    ):
        worker = ClusterWorker(redis_url, "real", 1, sandbox)
        worker.start()
        retrying = Dispatcher(redis_url, on_lost="retry", take_wait_s=0.5)
        reporting = Dispatcher(redis_url, on_lost="report", take_wait_s=0.5)
        try:
            result = retrying.execute(request, "run-retried", None)
            lost = r"worker ghost did not take the run within 0\.5 s"
            with pytest.raises(InfraError, match=lost):
                reporting.execute(request, "run-reported", None)
        finally:
            retrying.broker.close()
            reporting.broker.close()
            worker.stop()
            worker.broker.close()
        assert result.stdout == "hi\n" and len(backend.jobs) == 1  # the retry's, on "real"
        ghost = ClusterWorker(redis_url, "ghost", 1, ghost_box)  # the lost messages turn up
        for run_id in ("run-retried", "run-reported"):
            ghost.actor.fn(run_id, 1, request_to_wire(request), "epoch-ghost")
            kinds = [f[b"kind"] for _, f in redis_client.xrange(run_key(f"{run_id}.1", "events"))]
            assert kinds == [b"skipped"]
        ghost.broker.close()
    assert late.jobs == []


def test_the_claim_scripts_go_by_their_sha_and_survive_a_flush(redis_client: Any) -> None:
    """claim, take and give_up send a script's source only when Redis does not know it (its
    first call, or a Redis restarted or flushed since): each call after that is an EVALSHA."""
    from hazmat.cluster.keys import claim, take

    def calls() -> dict[str, int]:
        stats = redis_client.info("commandstats")
        return {
            name: stats.get(f"cmdstat_{name}", {}).get("calls", 0) for name in ("eval", "evalsha")
        }

    redis_client.script_flush()  # as after a restart: Redis knows no script
    assert take(redis_client, "r1.1", "epoch-a:n1") == "first"
    before = calls()
    for n in range(5):
        assert claim(redis_client, f"hazmat:run:r{n}.1:answered", "lost:service")
        assert take(redis_client, f"r{n + 10}.1", "epoch-a:n1") == "first"
    after = calls()
    assert after["evalsha"] - before["evalsha"] >= 10 and after["eval"] == before["eval"]
    redis_client.script_flush()
    assert claim(redis_client, "hazmat:run:r99.1:answered", "lost:service")  # loaded again
