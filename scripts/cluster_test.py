"""`make cluster-test`: a real cluster on this machine (scripts/cluster_lab.py: redis-server,
three Docker engines, a worker per engine, the service), at least 500 mixed runs from
concurrent clients, and every fault of docs/scale.md injected while they go:

    a worker SIGKILLed mid-run          (w0; a new w0 then reaps what the dead one left)
    a worker's Docker engine stopped    (e1, started again later)
    Redis restarted                     (appendonly: what it was told survives)
    a network partition                 (w2, in its own network namespace, cut from Redis for
                                        longer than a heartbeat, then healed)

Each fault is injected when a given share of the runs has been answered, so the schedule follows
the load, not the clock. Then the example set's Python and JavaScript tasks are graded as one
batch through the cluster (POST /v1/batches), each to get the verdict its id names. Then a
Python session is opened on every worker (placed by load) and keeps its variable and file
between calls there; the last is paused and resumed through a second service, which shares
only Redis, the tenants and the sessions key; and worker w0 is SIGKILLed while a call of its
session runs: that call and the next must say the session ended with its worker, while the
others go on. Then every worker's audit log is read and checked against what the clients got,
and against the checkpoints the service anchored. The last line is

    cluster: N submitted, N completed, 0 lost, 0 duplicated

and the exit status is non-zero if anything is off. "Completed": the client got the result its
run must give (output, outcome). "Lost": a run the service accepted and did not complete.
"Duplicated": an attempt executed more than once, or a run executed under a run id the client
never got an answer for; a run retried after its worker's fault has each attempt in the audit log
of the worker that ran it, and is counted (and listed) as retried, not duplicated.
"""

from __future__ import annotations

import argparse
import collections
import json
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cluster_lab import Lab, say


@dataclass
class Job:
    index: int
    kind: str
    body: dict[str, Any]
    expect: dict[str, Any]
    stream: bool = False
    answers: list[dict[str, Any]] = field(default_factory=list)
    refusals: int = 0
    problem: str = ""


def make_jobs(count: int, seed: int) -> list[Job]:
    rng = random.Random(seed)
    jobs = []
    for i in range(count):
        tag = f"lab-{i}"
        kind = rng.choices(
            ["py", "py-slow", "js", "py-error", "py-timeout", "py-stream"],
            weights=[40, 20, 20, 8, 2, 10],
        )[0]
        body: dict[str, Any] = {"script": tag, "timeout": 20}
        if kind == "py":
            body |= {"code": f"print({i} * 2)"}
            expect: dict[str, Any] = {"outcome": "ok", "stdout": f"{i * 2}\n"}
        elif kind == "py-slow":
            body |= {"code": f"import time\ntime.sleep({rng.uniform(0.3, 1.5):.2f})\nprint({i})"}
            expect = {"outcome": "ok", "stdout": f"{i}\n"}
        elif kind == "js":
            body |= {"code": f"console.log({i} * 3)", "language": "javascript"}
            expect = {"outcome": "ok", "stdout": f"{i * 3}\n"}
        elif kind == "py-error":
            body |= {"code": "raise SystemExit(3)"}
            expect = {"outcome": "error", "exit_code": 3}
        elif kind == "py-timeout":
            body |= {"code": "while True:\n    pass", "timeout": 1}
            expect = {"outcome": "timeout"}
        else:
            body |= {"code": f"print('a', flush=True)\nimport time\ntime.sleep(0.3)\nprint({i})"}
            expect = {"outcome": "ok", "stdout": f"a\n{i}\n"}
        jobs.append(Job(i, kind, body, expect, stream=kind == "py-stream"))
    return jobs


class Load:
    def __init__(self, lab: Lab, jobs: list[Job], clients: int) -> None:
        self.lab, self.jobs, self.clients = lab, jobs, clients
        self.queue = collections.deque(jobs)
        self.lock = threading.Lock()
        self.answered = 0
        self.progress = threading.Condition(self.lock)

    def run(self) -> None:
        threads = [threading.Thread(target=self._client) for _ in range(self.clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    def wait_answered(self, share: float) -> None:
        target = int(len(self.jobs) * share)
        with self.progress:
            self.progress.wait_for(lambda: self.answered >= target, timeout=900)

    def _client(self) -> None:
        transport = httpx.HTTPTransport(uds=str(self.lab.socket))
        headers = {"Authorization": f"Bearer {self.lab.key}"}
        with httpx.Client(transport=transport, base_url="http://lab", headers=headers) as client:
            while True:
                with self.lock:
                    if not self.queue:
                        return
                    job = self.queue.popleft()
                self._submit(client, job)
                with self.progress:
                    self.answered += 1
                    self.progress.notify_all()

    def _submit(self, client: httpx.Client, job: Job) -> None:
        while True:
            try:
                answer = self._post(client, job)
            except httpx.HTTPError as exc:
                job.problem = f"{type(exc).__name__}: {exc}"
                return
            if answer.get("status") == 429:  # back-pressure: the run was never placed
                job.refusals += 1
                time.sleep(0.05 * min(job.refusals, 10))  # back off, then submit again
                continue
            job.answers.append(answer)
            return

    def _post(self, client: httpx.Client, job: Job) -> dict[str, Any]:
        if not job.stream:
            response = client.post("/v1/runs", json=job.body, timeout=300)
            body = response.json()
            return body if response.status_code == 200 else {"status": response.status_code, **body}
        events = {"Accept": "text/event-stream"}
        with client.stream("POST", "/v1/runs", json=job.body, headers=events, timeout=300) as r:
            if r.status_code != 200:
                r.read()
                return {"status": r.status_code, **r.json()}
            name, result = "", dict[str, Any]()
            for line in r.iter_lines():
                if line.startswith("event: "):
                    name = line[7:]
                elif line.startswith("data: ") and name in ("result", "error"):
                    data = json.loads(line[6:])
                    result = data if name == "result" else {"status": data["status"], **data}
            return result


EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "grading" / "tasks.jsonl"


def grade_batch(lab: Lab) -> tuple[int, list[str]]:
    """The example set's Python and JavaScript tasks (the images every lab engine has) as one
    batch through the cluster (POST /v1/batches), its results streamed back: each task must
    get the verdict its id names, from a worker of the lab. The count, and what is off."""
    lines = [
        line
        for line in EXAMPLES.read_text().splitlines()
        if json.loads(line)["language"] in ("python", "javascript")
    ]
    transport = httpx.HTTPTransport(uds=str(lab.socket))
    headers = {"Authorization": f"Bearer {lab.key}"}
    with httpx.Client(transport=transport, base_url="http://lab", headers=headers) as client:
        made = client.post(
            "/v1/batches?jobs=6&trust=unknown",
            content="\n".join(lines),
            headers={"Content-Type": "application/x-ndjson"},
            timeout=60,
        )
        if made.status_code != 202:
            return len(lines), [f"batch refused: {made.status_code} {made.text}"]
        path = made.json()["results"]
        with client.stream("GET", path, timeout=900) as streamed:
            got = [json.loads(line) for line in streamed.iter_lines() if line]
    problems = []
    for result in got:
        tid = result["id"]
        want = "accepted" if tid.endswith("-right") else tid.rsplit("-", 1)[1]
        if result["verdict"] != want or not str(result.get("worker", "")).startswith("w"):
            problems.append(f"batch task {tid}: {result['verdict']} from {result.get('worker')}")
    if len(got) != len(lines):
        problems.append(f"batch: {len(got)} results for {len(lines)} tasks")
    return len(lines), problems


# a call that runs until its worker dies (LOW risk: a runc session refuses what routes to gVisor)
WAIT = "import time\nprint('first', flush=True)\ntime.sleep(25)\n"


def _client(lab: Lab, sock: Path) -> httpx.Client:
    transport = httpx.HTTPTransport(uds=str(sock))
    headers = {"Authorization": f"Bearer {lab.key}"}
    return httpx.Client(transport=transport, base_url="http://lab", headers=headers)


def sessions_on_workers(lab: Lab) -> list[str]:
    """A Python session on every worker (placed by load), each keeping its variable and file
    between calls; the last one paused through the service and resumed through a second one;
    then worker w0 SIGKILLed while a call of its session runs: that call and the next must say
    the session ended with its worker, and the others go on. What is off."""
    other = lab.root / "service-2.sock"
    lab.start_service(1, other)
    problems: list[str] = []
    with _client(lab, lab.socket) as first:
        opened = [
            first.post("/v1/sessions", json={"language": "python"}, timeout=180)
            for _ in lab.engines
        ]
        refused = [o.text for o in opened if o.status_code != 201]
        if refused:
            return [f"session: open: {refused[0]}"]
        on = {o.json()["worker"]: o.json()["id"] for o in opened}
        if sorted(on) != [f"w{i}" for i in range(len(lab.engines))]:
            return [f"session: opened on {[o.json()['worker'] for o in opened]}, not one on "
                    f"every worker; the workers: {lab.entries()}"]  # fmt: skip
        said: dict[str, str] = {}
        for n, (worker, sid) in enumerate(sorted(on.items())):
            at = f"/v1/sessions/{sid}"
            code = f"n = {n}\nopen('kept.txt', 'w').write('{worker}')"
            first.post(f"{at}/runs", json={"code": code}, timeout=120)
            said[worker] = f"{n} {worker}\n"
            answer = first.post(f"{at}/runs", json={"code": READ_BACK}, timeout=120).json()
            if answer.get("stdout") != said[worker]:
                problems.append(f"session on {worker}: it said {answer}")
        moved = max(on)
        paused = first.post(f"/v1/sessions/{on[moved]}/pause", timeout=120)
        if paused.status_code != 200:
            problems.append(f"session on {moved}: pause: {paused.status_code} {paused.text}")
    problems += _resumed_elsewhere(lab, other, on[moved], said[moved])
    problems += _worker_lost_mid_call(lab, on, moved, said)
    say(
        f"sessions: one on each of {', '.join(sorted(on))}; the one on {moved} paused and "
        f"resumed through a second service; w0 killed mid-call; {len(problems)} problems"
    )
    return problems


READ_BACK = "print(n, open('kept.txt').read())"


def _resumed_elsewhere(lab: Lab, other: Path, sid: str, said: str) -> list[str]:
    at = f"/v1/sessions/{sid}"
    problems = []
    with _client(lab, other) as there:
        resumed = there.post(f"{at}/resume", timeout=180)
        if resumed.status_code != 201:
            return [f"session: resume through the second service: {resumed.text}"]
        answer = there.post(f"{at}/runs", json={"code": READ_BACK}, timeout=120).json()
        if answer.get("stdout") != said:
            problems.append(f"session: resumed on {resumed.json()['worker']}, it said {answer}")
        there.delete(at, timeout=120)
    with _client(lab, lab.socket) as first:
        again = first.post(f"{at}/resume", timeout=120)
        if again.status_code != 404:
            problems.append(f"session: a second resume got {again.status_code}")
    return problems


def _worker_lost_mid_call(
    lab: Lab, on: dict[str, str], moved: str, said: dict[str, str]
) -> list[str]:
    problems = []
    at = f"/v1/sessions/{on['w0']}"
    events = {"Accept": "text/event-stream"}
    with _client(lab, lab.socket) as first:
        body = {"code": WAIT, "timeout": 30}
        with first.stream("POST", f"{at}/runs", json=body, headers=events, timeout=180) as got:
            lines = got.iter_lines()
            started = next(lines, "")
            if started == "event: stdout":  # the program runs: now its worker dies
                lab.kill_worker(0)  # SIGKILL; a new w0 comes up and reaps what the dead one left
            rest = list(lines)
        if started != "event: stdout" or "its worker w0 was lost" not in "\n".join(rest):
            problems.append(f"session on w0: the call running as w0 died got {[started, *rest]}")
        later = first.post(f"{at}/runs", json={"code": "print(1)"}, timeout=120)
        if later.status_code != 410 or "its worker w0 was lost" not in later.text:
            problems.append(f"session on w0: the next call got {later.status_code} {later.text}")
        for worker, sid in sorted(on.items()):
            if worker in ("w0", moved):
                continue
            answer = first.post(f"/v1/sessions/{sid}/runs", json={"code": READ_BACK}, timeout=120)
            if answer.json().get("stdout") != said[worker]:
                problems.append(f"session on {worker}: after w0 died it said {answer.text}")
            first.delete(f"/v1/sessions/{sid}", timeout=120)
    return problems


def faults(lab: Lab, load: Load, log: list[str]) -> None:
    def note(line: str) -> None:
        log.append(line)
        say(line)

    load.wait_answered(0.15)
    note("fault: SIGKILL worker w0 mid-run")
    lab.kill_worker(0)
    load.wait_answered(0.30)
    note("fault: stop the Docker engine of worker w1")
    lab.stop_engine(1)
    load.wait_answered(0.40)
    note("fault: engine e1 started again")
    lab.start_engine(1)
    load.wait_answered(0.55)
    note("fault: restart Redis")
    lab.restart_redis()
    load.wait_answered(0.70)
    note("fault: cut worker w2 off from Redis (network partition)")
    lab.cut()
    time.sleep(8)  # longer than a heartbeat's 5 s: the service must see the worker gone
    lab.heal()
    note("fault: partition healed")


def audit(lab: Lab) -> dict[str, list[dict[str, Any]]]:
    records: dict[str, list[dict[str, Any]]] = {}
    for index in range(len(lab.engines)):
        out = subprocess.run(
            [
                sys.executable,
                "-m",
                "hazmat",
                "audit",
                "show",
                "--json",
                "--log",
                str(lab.audit_dir(index)),
            ],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        records[f"w{index}"] = [json.loads(line) for line in out.splitlines()]
    return records


def verify_anchors(lab: Lab) -> list[str]:
    problems = []
    for index in range(len(lab.engines)):
        anchor = lab.root / "anchors" / f"w{index}"
        argv = [sys.executable, "-m", "hazmat", "audit", "verify", "--json"]
        argv += ["--log", str(lab.audit_dir(index)), "--pubkey", str(anchor / "pubkey")]
        argv += ["--anchor", str(anchor)]
        done = subprocess.run(argv, capture_output=True, text=True)
        report = json.loads(done.stdout) if done.stdout else {}
        report.setdefault("verdict", report.get("error", {}).get("message", done.stderr.strip()))
        notes = anchor / "checkpoints"
        anchored = len(notes.read_text().splitlines()) if notes.exists() else 0
        say(f"audit w{index}: {report['verdict']} against {anchored} anchored checkpoints")
        if report["verdict"] != "intact" or anchored == 0:
            problems.append(f"w{index}: audit {report['verdict']}, {anchored} anchored")
    return problems


def judge(jobs: list[Job], records: dict[str, list[dict[str, Any]]]) -> tuple[int, int, int, int]:
    started: dict[str, list[tuple[str, str, str]]] = collections.defaultdict(list)
    for worker, rows in records.items():
        for r in rows:
            if r["kind"] == "run.started" and str(r["data"].get("script", "")).startswith("lab-"):
                origin = r["data"]["origin"]
                run, attempt = str(origin["run"]), str(origin["attempt"])
                started[r["data"]["script"]].append((worker, run, attempt))
    completed = lost = duplicated = retried = 0
    for job in jobs:
        tag = job.body["script"]
        answer = job.answers[0] if job.answers else {}
        ok = all(answer.get(k) == v for k, v in job.expect.items())
        executions = started.get(tag, [])
        attempts = collections.Counter((run, attempt) for _w, run, attempt in executions)
        runs = {run for run, _a in attempts}
        if ok:
            completed += 1
        else:
            lost += 1
            say(f"lost: job {job.index} ({job.kind}): {job.problem or answer}")
        if len(job.answers) > 1 or any(n > 1 for n in attempts.values()) or len(runs) > 1:
            duplicated += 1
            say(f"duplicated: job {job.index}: executions {executions}")
        elif len(attempts) > 1:
            retried += 1
            say(f"retried: job {job.index}: {sorted(executions)} (each attempt recorded)")
    return completed, lost, duplicated, retried


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=520)
    parser.add_argument("--clients", type=int, default=12)
    parser.add_argument("--engines", type=int, default=3)
    parser.add_argument("--slots", type=int, default=3)
    parser.add_argument("--seed", type=int, default=16)
    args = parser.parse_args()
    # stopped (CI interrupted): leave the lab through its exit, which stops every engine,
    # worker, Redis and the network namespace it started (each in a session of its own)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    jobs = make_jobs(args.runs, args.seed)
    root = Path(tempfile.gettempdir()) / "hazmat-cluster-test"  # kept after, to look into
    shutil.rmtree(root, ignore_errors=True)
    began = time.monotonic()
    with Lab(root, args.engines, args.slots, partition=True) as lab:
        say(f"cluster up: {args.engines} engines, {args.slots} slots each, on {lab.socket}")
        load = Load(lab, jobs, args.clients)
        injected: list[str] = []
        injector = threading.Thread(target=faults, args=(lab, load, injected))
        injector.start()
        load.run()
        injector.join()
        took = time.monotonic() - began
        graded, batch_problems = grade_batch(lab)
        say(f"batch: {graded} tasks graded through the cluster; {len(batch_problems)} wrong")
        session_problems = sessions_on_workers(lab)
    records = audit(lab)
    problems = verify_anchors(lab) + batch_problems + session_problems
    problems += [f"{n} container(s) left on engine {e}" for e, n in lab.leftovers.items() if n]
    completed, lost, duplicated, retried = judge(jobs, records)
    refused = sum(job.refusals for job in jobs)
    say(f"{len(jobs)} runs from {args.clients} clients in {took:.0f} s; {refused} refusals (429)")
    say(f"faults injected: {len(injected)}; runs retried after a fault: {retried}")
    for problem in problems:
        say(f"problem: {problem}")
    counts = f"{completed} completed, {lost} lost, {duplicated} duplicated"
    print(f"cluster: {len(jobs)} submitted, {counts}")
    good = completed == len(jobs) and not lost and not duplicated and not problems
    return 0 if good and len(injected) == 6 else 1


if __name__ == "__main__":
    raise SystemExit(main())
