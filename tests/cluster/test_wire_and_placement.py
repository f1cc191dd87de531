"""The queue's messages and the placement script, against a real Redis (no engine needed)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from hazmat import InputError
from hazmat.cluster.dispatch import _PLACE
from hazmat.cluster.keys import WORKERS, worker_key
from hazmat.cluster.wire import request_from_wire, request_to_wire
from hazmat.models import ExecutionRequest
from hazmat.policy import Runtime, TrustLevel


def test_a_request_survives_the_queue_byte_for_byte() -> None:
    request = ExecutionRequest(
        "print(1)",
        "python",
        TrustLevel.UNKNOWN,
        stdin=b"\xff\x00",
        files={"data/in.bin": b"\x01\x02"},
        output_files=("out.txt",),
        timeout_s=3.5,
        memory_mb=128,
        runtime=Runtime.RUNSC,
        env={"A": "é"},
        args=("--x", "y z"),
        caller="tenant:acme key:1",
        session="s",
        network=("files.example.org",),
    )
    assert request_from_wire(json.loads(json.dumps(request_to_wire(request)))) == request


@pytest.mark.parametrize(
    "change",
    [{"trust": "root"}, {"stdin": "not base64!"}, {"files": "x"}, {"runtime": "kvm"}, {"env": 3}],
)
def test_a_malformed_message_is_an_input_error(change: dict[str, Any]) -> None:
    wire = request_to_wire(ExecutionRequest("print(1)", "python", TrustLevel.UNTRUSTED))
    with pytest.raises(InputError, match="malformed run message"):
        request_from_wire({**wire, **change})


def announce(client: Any, name: str, slots: int, busy: int, languages: str = "go,python") -> None:
    client.sadd(WORKERS, name)
    entry = {"slots": slots, "busy": busy, "languages": languages, "epoch": f"epoch-{name}"}
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
    chosen = [place([WORKERS], ["python"]) for _ in range(4)]
    assert sorted(c[0].decode() for c in chosen) == ["a", "b", "b", "b"]
    assert place([WORKERS], ["python"]) is None  # every slot taken: the service answers 429
    assert place([WORKERS], ["javascript"]) == [b"c", b"epoch-c"]


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["--slots", "0"], 2, "--slots must be at least 1"),
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
