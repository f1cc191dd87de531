"""The per-user local server (cli/local_server.py) on the real engine: the first `hazmat run`
starts it and says so once, the next ones use it with the policy's default trust, `hazmat
server status|stop` see and stop it, it stops by itself when idle, concurrent first runs start
one server, and a folder or socket that is not the user's own is refused (the run then happens
in its own process, saying why)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from hazmat.backends.oci.prerequisites import choice
from hazmat.policy import Policy
from server_helpers import audit_records, wait_exit

pytestmark = pytest.mark.docker

NOBODY = 65534


@pytest.fixture
def env(tmp_path: Path) -> Iterator[dict[str, str]]:
    """A user's environment of its own: a short runtime folder (a unix socket's path is at
    most 107 bytes), its own audit log; every server started in it is stopped after."""
    runtime = Path(tempfile.mkdtemp(prefix="hz-", dir="/tmp"))
    mine = {**os.environ, "XDG_RUNTIME_DIR": str(runtime)}
    mine["HAZMAT_AUDIT_DIR"] = str(tmp_path / "audit")
    mine.pop("HAZMAT_NO_SERVER", None)
    try:
        yield mine
    finally:
        subprocess.run([sys.executable, "-m", "hazmat", "server", "stop"], env=mine, check=True)
        shutil.rmtree(runtime, ignore_errors=True)


def hazmat(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "hazmat", *args]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600)


def status(env: dict[str, str]) -> dict[str, object]:
    done = hazmat(env, "server", "status", "--json")
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def local_root(env: dict[str, str]) -> Path:
    return Path(env["XDG_RUNTIME_DIR"]) / "hazmat" / "local"


def test_the_first_run_starts_it_and_the_next_ones_use_it(env: dict[str, str]) -> None:
    first = hazmat(env, "run", "-c", "print(6 * 7)")
    assert (first.returncode, first.stdout) == (0, "42\n"), first.stderr
    assert "started a local server" in first.stderr
    second = hazmat(env, "run", "--json", "-c", "print(1)")
    assert second.returncode == 0 and "started" not in second.stderr, second.stderr
    result = json.loads(second.stdout)
    default = Policy()
    assert result["trust"] == default.default_trust.value  # not the key's "trusted"
    assert result["runtime"] == default.settings(default.default_trust).runtime.value
    tier = choice(default.backend).tier  # the built-in policy's `auto`, on this machine
    assert result["tier"] == tier
    trusted = json.loads(hazmat(env, "run", "--json", "--trust", "trusted", "-c", "1").stdout)
    assert trusted["trust"] == "trusted"
    # runc at the default (runsc) level: through the local server too, whose key is the
    # user's own and may ask for it (a service's key may not: tests/server)
    weaker = hazmat(env, "run", "--json", "--runtime", "runc", "-c", "print(3)")
    assert json.loads(weaker.stdout)["runtime"] == "runc"
    [server] = status(env)["servers"]  # type: ignore[misc]
    assert server["running"] and server["this_setup"] and server["runs"] == 4
    assert server["pool_hits"] + server["pool_misses"] == 4 and server["tier"] == tier
    folder = Path(server["folder"])
    for path in (folder, folder / "key", folder / "keys.json", folder / "server.sock"):
        assert os.stat(path).st_mode & 0o077 == 0, path
    assert "no session open" not in (folder / "server.log").read_text()
    stopped = hazmat(env, "server", "stop")
    assert "stopped 1 local server" in stopped.stdout
    assert wait_exit(server["pid"], 1)  # stop waited for it
    assert "no local server runs" in hazmat(env, "server", "status").stdout


def test_its_console_shows_the_users_own_runs_on_a_loopback_port(env: dict[str, str]) -> None:
    """`hazmat server console` forwards a loopback port to the local server's socket; the
    console there asks for the key in the server's key file, and shows the user's runs; a
    server that stopped meanwhile is started again."""
    import httpx

    assert hazmat(env, "run", "-c", "print('seen in the console')").returncode == 0
    argv = [sys.executable, "-m", "hazmat", "server", "console", "--port", "0"]
    with subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, text=True) as console:
        try:
            assert console.stdout is not None
            said = console.stdout.readline()
            url = said.split("console of your local server: ", 1)[1].strip()
            key_file = Path(console.stdout.readline().split("the key in ", 1)[1].split(";")[0])
            headers = {"Authorization": f"Bearer {key_file.read_text().strip()}"}
            with httpx.Client(timeout=60) as client:
                assert client.get(url).status_code == 200
                assert client.get(url + "/f/runs").status_code == 401  # no key, no runs
                runs = client.get(url + "/f/runs", headers=headers)
                assert runs.status_code == 200 and "local" in runs.text
                run_id = runs.text.split('hx-get="/console/f/runs/', 1)[1].split('"', 1)[0]
                shown = client.get(f"{url}/f/runs/{run_id}", headers=headers).text
                assert "seen in the console" in shown
                assert hazmat(env, "server", "stop").returncode == 0  # as when it is idle
                again = client.get(url + "/f/whoami", headers=headers)  # started again
                assert again.status_code == 200 and "local" in again.text
        finally:
            console.send_signal(signal.SIGINT)
            assert console.wait(timeout=60) == 0


def test_concurrent_first_runs_start_one_server(env: dict[str, str]) -> None:
    with ThreadPoolExecutor(3) as pool:
        runs = list(pool.map(lambda i: hazmat(env, "run", "-c", f"print({i})"), range(3)))
    assert sorted(r.stdout for r in runs) == ["0\n", "1\n", "2\n"]
    assert sum("started a local server" in r.stderr for r in runs) == 1
    assert len([s for s in status(env)["servers"] if s["running"]]) == 1  # type: ignore[attr-defined]


def test_another_setup_gets_a_server_of_its_own(env: dict[str, str], tmp_path: Path) -> None:
    assert hazmat(env, "run", "-c", "print(1)").returncode == 0
    other = {**env, "HAZMAT_AUDIT_DIR": str(tmp_path / "other-audit")}
    again = hazmat(other, "run", "-c", "print(2)")
    assert "started a local server" in again.stderr  # never the first setup's, whose log differs
    servers = status(other)["servers"]
    assert sorted(s["this_setup"] for s in servers) == [False, True]  # type: ignore[attr-defined]
    assert (tmp_path / "other-audit").is_dir()
    assert "stopped 2 local server" in hazmat(env, "server", "stop").stdout


def test_a_socket_nobody_listens_on_is_replaced(env: dict[str, str]) -> None:
    assert hazmat(env, "run", "-c", "print(1)").returncode == 0
    [server] = status(env)["servers"]  # type: ignore[misc]
    os.kill(server["pid"], 9)  # dies without removing its socket
    assert wait_exit(server["pid"])
    assert Path(server["folder"], "server.sock").is_socket()
    again = hazmat(env, "run", "-c", "print(2)")
    assert (again.returncode, again.stdout) == (0, "2\n") and "started" in again.stderr


@pytest.mark.parametrize("what", ["socket", "folder owner", "folder mode"])
def test_what_is_not_the_users_own_is_refused(env: dict[str, str], what: str) -> None:
    folder = Path(str(status(env)["this_setup"]))
    for made in (folder.parent, folder):
        made.mkdir(mode=0o700, parents=True)
    if what == "socket":
        with socket.socket(socket.AF_UNIX) as planted:
            planted.bind(str(folder / "server.sock"))
            planted.listen(1)
            os.chown(folder / "server.sock", NOBODY, NOBODY)
            done = hazmat(env, "run", "-c", "print(1)")
        why = "not a socket of yours"
    elif what == "folder owner":
        os.chown(folder, NOBODY, NOBODY)
        done = hazmat(env, "run", "-c", "print(1)")
        why = "not a folder of yours"
    else:
        folder.chmod(0o755)
        done = hazmat(env, "run", "-c", "print(1)")
        why = "open to others (mode 755)"
    assert (done.returncode, done.stdout) == (0, "1\n"), done.stderr
    assert why in done.stderr and "running in this process instead" in done.stderr
    assert "started a local server" not in done.stderr
    folder.chmod(0o700)
    os.chown(folder, os.geteuid(), os.getegid())


def test_it_stops_by_itself_when_idle(env: dict[str, str], tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text("pool:\n  server_idle_s: 1\n")
    started = hazmat(env, "server", "start", "--policy", str(policy))
    assert started.returncode == 0 and "started" in started.stdout, started.stderr
    [server] = status(env)["servers"]  # type: ignore[misc]
    assert server["policy"] == str(policy.resolve())
    assert wait_exit(server["pid"])  # no request for 1 s, no session: it ends
    log = Path(server["folder"], "server.log").read_text()
    assert "no request for 1 s and no session open" in log
    assert "every container removed" in log


def test_a_bad_policy_is_named_before_anything_starts(env: dict[str, str], tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text("pool:\n  server_idle_s: 0\n")
    done = hazmat(env, "server", "start", "--policy", str(policy))
    assert done.returncode == 78 and "pool.server_idle_s" in done.stderr, done.stderr
    assert not any(s["running"] for s in status(env)["servers"])  # type: ignore[attr-defined]


def test_no_server_when_the_user_says_so(env: dict[str, str]) -> None:
    done = hazmat({**env, "HAZMAT_NO_SERVER": "1"}, "run", "-c", "print(1)")
    assert (done.returncode, done.stdout, done.stderr) == (0, "1\n", "")
    assert not local_root(env).exists()


def test_assess_goes_through_it_and_says_what_assessing_here_says(env: dict[str, str]) -> None:
    code = "import os\nos.system('rm -rf /')\n"
    here = hazmat(env, "assess", "--local", "--json", "-c", code)
    there = hazmat(env, "assess", "--json", "-c", code)
    assert there.returncode == here.returncode, there.stderr
    assert "started a local server" in there.stderr and "started" not in here.stderr
    mine, theirs = json.loads(here.stdout), json.loads(there.stdout)
    for field in ("level", "risk_score", "decision", "trust", "complete"):
        assert theirs[field] == mine[field], field
    assert {f["rule"] for f in theirs["findings"]} == {f["rule"] for f in mine["findings"]}
    plain = hazmat(env, "assess", "-c", code)
    assert plain.returncode == here.returncode and "policy for untrusted" in plain.stdout


EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "grading" / "tasks.jsonl"


def example_tasks(tmp_path: Path, prefix: str) -> tuple[Path, dict[str, str]]:
    """The example set's tasks whose ids start with `prefix`, and the verdicts their ids name."""
    lines = [line for line in EXAMPLES.read_text().splitlines() if f'"id": "{prefix}' in line]
    path = tmp_path / "tasks.jsonl"
    path.write_text("\n".join(lines) + "\n")
    ids = [json.loads(line)["id"] for line in lines]
    return path, {i: "accepted" if i.endswith("-right") else i.rsplit("-", 1)[1] for i in ids}


def callers(env: dict[str, str]) -> list[str]:
    """Who each run in the audit log was for, in order."""
    records = audit_records(Path(env["HAZMAT_AUDIT_DIR"]))
    return [str(r["data"].get("caller")) for r in records if r["kind"] == "run.started"]


def verdicts(path: Path) -> dict[str, str]:
    return {r["id"]: r["verdict"] for r in map(json.loads, path.read_text().splitlines())}


def test_batch_goes_through_it_grades_as_here_and_resumes(
    env: dict[str, str], tmp_path: Path
) -> None:
    tasks, deserved = example_tasks(tmp_path, "sum-python")
    assert len(deserved) == 2
    here, there = tmp_path / "here.jsonl", tmp_path / "there.jsonl"
    done = hazmat(env, "batch", str(tasks), "-o", str(there), "--no-progress")
    assert done.returncode == 0 and "started a local server" in done.stderr, done.stderr
    assert verdicts(there) == deserved
    served = callers(env)
    assert served and all(c.startswith("tenant:local ") for c in served)  # the server's runs
    local = hazmat(env, "batch", str(tasks), "-o", str(here), "--local", "--no-progress")
    assert local.returncode == 0 and "started" not in local.stderr, local.stderr
    assert verdicts(here) == deserved
    mine = callers(env)[len(served) :]
    assert mine and not any(c.startswith("tenant:") for c in mine)  # this process's
    first = there.read_text().splitlines()[0]
    there.write_text(first + "\n")  # as if stopped after the first task
    resumed = hazmat(env, "batch", str(tasks), "-o", str(there), "--resume", "--no-progress")
    assert resumed.returncode == 0 and "(1 done before)" in resumed.stderr, resumed.stderr
    assert verdicts(there) == deserved and there.read_text().splitlines()[0] == first
