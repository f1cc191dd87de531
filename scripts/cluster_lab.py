"""A whole hazmat cluster on this machine, for `make cluster-test` and the throughput benchmark.

    redis-server        appendonly, fsync on every write (runs queued survive its restart)
    engine e0           the machine's Docker engine
    engines e1, e2 ...  more dockerd, each with its own data root, exec root and socket, started
                        with --bridge=none --iptables=false; hazmat's images copied into them
                        with `docker save | docker load` (never a registry)
    policy              `backend: docker` for every worker and service: the lab's engines are
                        Docker engines, and its faults stop them (the built-in `auto` would
                        make the sandboxes with runc and runsc directly, beside them)
    worker wN           `hazmat worker` for engine eN, its own audit log and session folder;
                        with `partition`, the last worker lives in a network namespace of its
                        own and reaches Redis over a veth pair, so that the link can be cut
                        and healed
    service             `hazmat serve --redis` on a unix socket, `--on-lost retry`; its runs
                        and sessions go to the workers (`start_service` starts another)
    sessions key        one key file, copied into every worker's and service's session folder
                        (docs/scale.md: any of them may pause or resume a session)

Faults: `kill_worker`, `stop_engine` / `start_engine`, `restart_redis`, `cut` / `heal`. Needs
root (dockerd, network namespaces). Everything started is stopped on exit; the extra engines'
data roots stay in /var/lib/hazmat-lab so that the images are copied only once.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from hazmat.languages import LANGUAGES

# HAZMAT_LAB_DIR (CI sets it inside its fresh engine's folder): the extra engines' data roots.
DATA = Path(os.environ.get("HAZMAT_LAB_DIR") or "/var/lib/hazmat-lab")
RUN = Path("/run/hazmat-lab")
NETNS, HOST_IF, NS_IF = "hzlab", "hzlab-h", "hzlab-n"
HOST_IP, NS_IP = "10.213.0.1", "10.213.0.2"
IMAGES = tuple(dict.fromkeys(LANGUAGES[name].image for name in ("python", "javascript")))


def say(line: str) -> None:
    print(f"lab: {line}", flush=True)


def wait_for(what: str, check: Any, timeout_s: float = 60.0) -> None:
    """A bounded wait on a condition (a process coming up, a socket appearing)."""
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what}: not within {timeout_s:g} s")
        time.sleep(0.1)


def sh(*argv: str, check: bool = True, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(argv, capture_output=True, text=True, env=env)
    if check and done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: {done.stderr.strip() or done.stdout.strip()}")
    return done.stdout


class Engine:
    def __init__(self, index: int) -> None:
        self.index = index
        self.process: subprocess.Popen[bytes] | None = None
        self.run = RUN / f"e{index}"
        self.host = "" if index == 0 else f"unix://{self.run}/docker.sock"

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        if self.host:
            env["DOCKER_HOST"] = self.host
        return env

    def up(self) -> bool:
        done = subprocess.run(["docker", "info"], capture_output=True, env=self.env(), timeout=20)
        return done.returncode == 0

    def start(self) -> None:
        if self.index == 0:
            return
        self.run.mkdir(parents=True, exist_ok=True)
        DATA.mkdir(parents=True, exist_ok=True)
        (self.run / "docker.pid").unlink(missing_ok=True)
        log = (DATA / f"e{self.index}.log").open("ab")
        self.process = subprocess.Popen(
            [
                "dockerd",
                f"--data-root={DATA / f'e{self.index}'}",
                f"--exec-root={self.run / 'exec'}",
                f"--pidfile={self.run / 'docker.pid'}",
                f"--host={self.host}",
                "--bridge=none",
                "--iptables=false",
                "--ip6tables=false",
            ],
            stdout=log,
            stderr=log,
            start_new_session=True,
        )
        wait_for(f"dockerd e{self.index}", self.up)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=60)
        self.process = None

    def image_id(self, image: str) -> str:
        done = subprocess.run(
            ["docker", "image", "inspect", "--format", "{{.Id}}", image],
            capture_output=True,
            text=True,
            env=self.env(),
        )
        return done.stdout.strip() if done.returncode == 0 else ""

    def copy_images(self) -> None:
        """Give this engine the main engine's images, unless it holds the very same ones (by
        id: an older image left under the same tag is replaced)."""
        main = Engine(0)
        missing = [image for image in IMAGES if self.image_id(image) != main.image_id(image)]
        if not missing:
            return
        say(f"copying {', '.join(missing)} into engine e{self.index} (docker save | docker load)")
        save = subprocess.Popen(["docker", "save", *missing], stdout=subprocess.PIPE)
        subprocess.run(["docker", "load", "-q"], stdin=save.stdout, check=True, env=self.env())
        if save.wait() != 0:
            raise RuntimeError("docker save failed")


class Lab:
    """Start with `with Lab(...) as lab:`; `lab.socket` is the service's socket and `lab.key`
    a key for it."""

    def __init__(self, root: Path, engines: int, slots: int = 4, partition: bool = False) -> None:
        self.root = root
        self.engines = [Engine(i) for i in range(engines)]
        self.slots = slots
        self.partition = partition
        self.workers: dict[int, subprocess.Popen[str]] = {}
        self.redis: subprocess.Popen[bytes] | None = None
        self.service: subprocess.Popen[str] | None = None
        self.services: list[subprocess.Popen[str]] = []  # the first is `service`
        self.port = _free_port()
        self.socket = root / "service.sock"
        self.key = ""
        self.leftovers: dict[str, int] = {}

    # -- the whole -------------------------------------------------------------------------
    def __enter__(self) -> Lab:
        try:
            self._start()
        except BaseException:
            self.__exit__()
            raise
        return self

    @property
    def policy(self) -> Path:
        """The lab's policy file: the built-in policy on the Docker backend."""
        path = self.root / "policy.yaml"
        if not path.exists():
            path.write_text("backend: docker\n")
        return path

    def _start(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        if self.partition:
            self._make_netns()
        self.start_redis()
        for engine in self.engines:
            engine.start()
            engine.copy_images()
        for index in range(len(self.engines)):
            self.start_worker(index)
        self._start_service()

    def __exit__(self, *_: object) -> None:
        for index in list(self.workers):  # first: they publish their last checkpoints
            self.stop_worker(index)
        for service in self.services:
            if service.poll() is None:
                service.terminate()  # its collector copies what the workers published
                service.communicate(timeout=300)
        for engine in self.engines:  # every hazmat process is gone: nothing may be left
            self.leftovers[f"e{engine.index}"] = _remove_containers(engine)
            engine.stop()
        if self.redis is not None:
            self.redis.terminate()
            self.redis.wait(timeout=60)
        if self.partition:
            sh("ip", "netns", "del", NETNS, check=False)
            sh("ip", "link", "del", HOST_IF, check=False)

    # -- parts -----------------------------------------------------------------------------
    def redis_url(self, index: int | None = None) -> str:
        if self.partition and index == len(self.engines) - 1:
            return f"redis://{HOST_IP}:{self.port}"
        return f"unix://{self.root / 'redis.sock'}"

    def start_redis(self) -> None:
        folder = self.root / "redis"
        folder.mkdir(exist_ok=True)
        bind = ["127.0.0.1", HOST_IP] if self.partition else ["127.0.0.1"]
        sock = self.root / "redis.sock"
        sock.unlink(missing_ok=True)
        self.redis = subprocess.Popen(
            [
                "redis-server",
                "--port",
                str(self.port),
                "--bind",
                *bind,
                "--unixsocket",
                str(sock),
                "--dir",
                str(folder),
                "--save",
                "",
                "--appendonly",
                "yes",
                "--appendfsync",
                "always",
                "--protected-mode",
                "no",
            ],
            stdout=(self.root / "redis.log").open("ab"),
        )
        wait_for("redis-server", sock.exists)

    def restart_redis(self) -> None:
        assert self.redis is not None
        self.redis.terminate()
        self.redis.wait(timeout=60)
        self.start_redis()

    def start_worker(self, index: int) -> None:
        engine = self.engines[index]
        env = engine.env() | {
            "HAZMAT_AUDIT_DIR": str(self.audit_dir(index)),
            "HAZMAT_SESSIONS_DIR": str(self.sessions_dir(f"w{index}")),
        }
        argv = [sys.executable, "-m", "hazmat", "worker", "--redis", self.redis_url(index)]
        argv += ["--name", f"w{index}", "--slots", str(self.slots), "--policy", str(self.policy)]
        if self.partition and index == len(self.engines) - 1:
            argv = ["ip", "netns", "exec", NETNS, *argv]
        log = (self.root / f"w{index}.log").open("a")
        process = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=log, text=True, env=env, start_new_session=True
        )
        assert process.stdout is not None
        for line in process.stdout:
            log.write(line)
            if "taking runs" in line:
                self.workers[index] = process
                return
        raise RuntimeError(f"worker w{index} did not start (see {self.root}/w{index}.log)")

    def stop_worker(self, index: int) -> None:
        process = self.workers.pop(index)
        if process.poll() is None:
            process.terminate()
            process.communicate(timeout=300)

    def kill_worker(self, index: int) -> None:
        """SIGKILL, then a new worker of the same name (it reaps what the dead one left)."""
        process = self.workers.pop(index)
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate(timeout=60)
        self.start_worker(index)

    def stop_engine(self, index: int) -> None:
        self.engines[index].stop()

    def start_engine(self, index: int) -> None:
        self.engines[index].start()

    def cut(self) -> None:
        sh("ip", "link", "set", HOST_IF, "down")

    def heal(self) -> None:
        sh("ip", "link", "set", HOST_IF, "up")

    def entries(self) -> dict[str, dict[str, str]]:
        """The workers' catalogue entries in Redis as they are now (for a report)."""
        import redis

        client = redis.Redis.from_url(self.redis_url())
        try:
            found = {}
            for index in range(len(self.engines)):
                entry = client.hgetall(f"hazmat:worker:w{index}")
                keep = (b"slots", b"busy", b"sessions", b"placing", b"engine")
                found[f"w{index}"] = {k.decode(): v.decode() for k, v in entry.items() if k in keep}
            return found
        finally:
            client.close()

    def audit_dir(self, index: int) -> Path:
        return self.root / f"audit-w{index}"

    def _make_netns(self) -> None:
        sh("ip", "netns", "del", NETNS, check=False)
        sh("ip", "link", "del", HOST_IF, check=False)
        sh("ip", "netns", "add", NETNS)
        sh("ip", "link", "add", HOST_IF, "type", "veth", "peer", "name", NS_IF)
        sh("ip", "link", "set", NS_IF, "netns", NETNS)
        sh("ip", "addr", "add", f"{HOST_IP}/30", "dev", HOST_IF)
        sh("ip", "link", "set", HOST_IF, "up")
        inside = ("ip", "netns", "exec", NETNS, "ip")
        sh(*inside, "addr", "add", f"{NS_IP}/30", "dev", NS_IF)
        sh(*inside, "link", "set", NS_IF, "up")
        sh(*inside, "link", "set", "lo", "up")

    def _start_service(self) -> None:
        keys = self.root / "keys.json"
        hazmat = [sys.executable, "-m", "hazmat"]
        made = sh(
            *hazmat, "keys", "create", "--tenant", "lab", "--trust", "trusted", "--json",
            "--concurrent", "1024", "--per-minute", "100000", "--keys", str(keys),
        )  # fmt: skip
        self.key = json.loads(made)["key"]
        self.service = self.start_service(0, self.socket)

    def sessions_dir(self, name: str) -> Path:
        """A session folder of `name`'s own with the lab's one sessions key (docs/scale.md)."""
        sessions = self.root / f"sessions-{name}"
        sessions.mkdir(mode=0o700, exist_ok=True)
        shared = self.root / "sessions-key"
        if not shared.exists():
            shared.write_bytes(os.urandom(32))
            shared.chmod(0o600)
        shutil.copy2(shared, sessions / "key")
        return sessions

    def start_service(self, engine: int, sock: Path) -> subprocess.Popen[str]:
        """`hazmat serve --redis` on `sock` (its own sandbox on engine `engine`, for what does
        not go to the workers), its own audit log and session folder; the lab's key store."""
        env = self.engines[engine].env() | {
            "HAZMAT_AUDIT_DIR": str(self.root / f"audit-service-e{engine}"),
            "HAZMAT_SESSIONS_DIR": str(self.sessions_dir(f"service-e{engine}")),
        }
        sock.unlink(missing_ok=True)
        argv = [sys.executable, "-m", "hazmat", "serve", "--socket", str(sock)]
        argv += ["--keys", str(self.root / "keys.json"), "--redis", self.redis_url()]
        argv += ["--on-lost", "retry", "--max-running", "64", "--policy", str(self.policy)]
        argv += ["--anchors", str(self.root / ("anchors" if engine == 0 else f"anchors-e{engine}"))]
        log = (self.root / f"service-e{engine}.log").open("a")
        service = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=log, text=True, env=env)
        self.services.append(service)
        assert service.stdout is not None
        for line in service.stdout:
            log.write(line)
            if "listening on" in line:
                return service
        raise RuntimeError(f"a service did not start (see {self.root}/service-e{engine}.log)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _remove_containers(engine: Engine) -> int:
    """Remove what hazmat left on the engine, each said with its owner (the process and the
    backend that started it) and state; returns how many there were."""
    if not engine.up():
        return 0
    form = '{{.ID}} {{.Label "hazmat.owner"}} backend {{.Label "hazmat.backend"}} {{.Status}}'
    found = sh("docker", "ps", "-a", "--filter", "label=hazmat", "--format", form, env=engine.env())
    ids = [line.split()[0] for line in found.splitlines() if line.strip()]
    for line in found.splitlines():
        say(f"left on e{engine.index}: {line}")
    if ids:
        sh("docker", "rm", "-f", "-v", *ids, env=engine.env(), check=False)
    return len(ids)


def clean_root(root: Path) -> None:
    shutil.rmtree(root, ignore_errors=True)
