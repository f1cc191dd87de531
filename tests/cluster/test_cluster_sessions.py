"""Sessions across hosts (cluster/remote_sessions.py): with `hazmat serve --redis` a session
opens on a worker placed by load, every call of it goes there (its state lives there), and a
worker lost mid-session ends its sessions with an error that names it, the call running then
included, while the other workers' sessions go on; a session forked there lives there too."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from workers import EVENTS, start_worker

from server_helpers import audit_records, start_server, stop_server

pytestmark = pytest.mark.docker
SPIN = "print('first', flush=True)\nwhile True:\n    pass\n"


def test_sessions_spread_over_the_workers_and_a_lost_worker_ends_its_own(
    tmp_path: Path, redis_url: str, redis_client: Any
) -> None:
    folder = tmp_path / "sessions"
    workers = {name: start_worker(tmp_path, redis_url, name, 2, folder) for name in ("w1", "w2")}
    server = start_server(tmp_path / "service", "--redis", redis_url)
    try:
        with server.client() as client:
            opened = [client.post("/v1/sessions", json={"language": "python"}) for _ in "ab"]
            assert [o.status_code for o in opened] == [201, 201], [o.text for o in opened]
            on = {o.json()["worker"]: o.json()["id"] for o in opened}
            assert sorted(on) == ["w1", "w2"]  # by load: one each
            for n, worker in enumerate(("w1", "w2")):
                at = f"/v1/sessions/{on[worker]}"
                assert client.post(f"{at}/runs", json={"code": f"n = {n + 20}"}).status_code == 200
                put = client.put(f"{at}/files", json={"files": {"note.txt": worker}})
                assert put.status_code == 200, put.text
                code = "print(n * 2, open('note.txt').read())"
                answer = client.post(f"{at}/runs", json={"code": code})
                assert answer.json()["stdout"] == f"{(n + 20) * 2} {worker}\n", answer.text
                got = client.get(f"{at}/files", params={"name": "note.txt"}).json()
                assert got["files_base64"] == {"note.txt": _b64(worker)}
            for worker, sid in on.items():  # each worker ran its own session's calls, only
                records = audit_records(tmp_path / f"audit-{worker}")
                assert {r["data"]["session"] for r in records if r["kind"] == "run.started"} == {
                    sid
                }
            # a fork lives on its source's worker, where the state is, and goes on apart
            forked = client.post(f"/v1/sessions/{on['w2']}/fork", json={"n": 1})
            assert forked.status_code == 201, forked.text
            (fork,) = forked.json()["sessions"]
            assert (fork["worker"], fork["forked"]["loaded"]) == ("w2", ["n"])
            code = "n += 1\nprint(n, open('note.txt').read())"
            ran = client.post(f"/v1/sessions/{fork['id']}/runs", json={"code": code})
            assert ran.json()["stdout"] == "22 w2\n", ran.text
            assert client.delete(f"/v1/sessions/{fork['id']}").status_code == 200
            # w1 dies while a call of its session runs: that call and every later one say so
            at = f"/v1/sessions/{on['w1']}"
            body = {"code": SPIN, "timeout": 15}
            with client.stream("POST", f"{at}/runs", json=body, headers=EVENTS) as response:
                lines = response.iter_lines()
                assert next(lines) == "event: stdout"
                next(lines)
                workers["w1"].kill()
                workers["w1"].communicate(timeout=60)
                rest = list(lines)
            assert "event: error" in rest, rest
            error = json.loads(rest[rest.index("event: error") + 1][len("data: ") :])
            assert error["status"] == 410, error
            assert "has ended: its worker w1 was lost" in error["error"]["message"]
            later = client.post(f"{at}/runs", json={"code": "print(1)"})
            assert later.status_code == 410 and "its worker w1 was lost" in later.text
            listed = client.get("/v1/sessions").json()["sessions"]
            assert [s["id"] for s in listed] == [on["w2"]]
            at = f"/v1/sessions/{on['w2']}"  # the other worker's session goes on
            assert client.post(f"{at}/runs", json={"code": "print(n)"}).json()["stdout"] == "21\n"
            assert client.delete(at).status_code == 200
            assert client.post(f"{at}/runs", json={"code": "1"}).status_code == 410
    finally:
        stop_server(server)
        if workers["w1"].poll() is not None:  # killed: a new w1 reaps what the dead one left
            workers["w1"] = start_worker(tmp_path, redis_url, "w1", 1, folder)
        for process in workers.values():
            process.terminate()
            process.communicate(timeout=120)


def _b64(text: str) -> str:
    import base64

    return base64.b64encode(text.encode()).decode()
