"""A live `hazmat serve` on a loopback port, started by the tests as its own process, with its
own audit log and key store; keys for a few tenants. MCP clients for it: the SDK's own, over
streamable HTTP and over stdio (`hazmat mcp`). Used by tests/server and tests/cluster."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from hazmat.policy import Policy, TrustLevel
from hazmat.service.tenant_keys import KeyStore, Quotas

if TYPE_CHECKING:
    from mcp import StdioServerParameters


@dataclass
class LiveServer:
    url: str
    keys: dict[str, str]  # name -> the key itself
    audit_dir: Path
    keys_path: Path
    process: subprocess.Popen[str]
    log_path: Path | None = None  # its standard error: logging's records, tracebacks

    def log(self, start: int = 0) -> str:
        """What it wrote to standard error from byte `start` on."""
        return _read_log(self.log_path, start)

    def client(self, key: str | None = "untrusted") -> httpx.Client:
        headers = {"Authorization": f"Bearer {self.keys[key]}"} if key else {}
        return http_client(self.url, headers)

    def audit_records(self) -> list[dict[str, Any]]:
        return audit_records(self.audit_dir)


@dataclass
class Logged:
    """Another process under test whose standard error goes to a file (a cluster's worker:
    tests/cluster/workers.py), watched as a service is (`TracebackWatch`)."""

    url: str  # what the watch calls it
    process: subprocess.Popen[str]
    log_path: Path

    def log(self, start: int = 0) -> str:
        return _read_log(self.log_path, start)


def _read_log(path: Path | None, start: int) -> str:
    if path is None or not path.exists():
        return ""
    with path.open("rb") as f:
        f.seek(start)
        return f.read().decode("utf-8", "replace")


def http_client(url: str, headers: dict[str, str], timeout: float = 120) -> httpx.Client:
    """A client for a service under test. A connection idle for 2 s is not used again: the
    service closes one idle for 5 s (--keep-alive), and a request sent just as it does meets a
    reset, not an answer (under load, a test's pauses reach that)."""
    limits = httpx.Limits(keepalive_expiry=2.0)
    return httpx.Client(base_url=url, headers=headers, timeout=timeout, limits=limits)


def audit_records(audit_dir: Path) -> list[dict[str, Any]]:
    out = subprocess.run(
        [sys.executable, "-m", "hazmat", "audit", "show", "--json", "--log", str(audit_dir)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [json.loads(line) for line in out.splitlines()]


def finished_record(audit_dir: Path, name: str) -> dict[str, Any]:
    """The run.finished record of the run started with script name `name`, once it is written
    (a bounded wait on a condition: the run may still be ending when the caller has left)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        records = audit_records(audit_dir)
        ids = {
            r["data"]["run"]
            for r in records
            if r["kind"] == "run.started" and r["data"]["script"] == name
        }
        for r in records:
            if r["kind"] == "run.finished" and r["data"]["run"] in ids:
                return r
        time.sleep(0.2)
    raise AssertionError(f"no run.finished record for {name} within 60 s")


# runtime -> the key of start_server's whose trust level runs under it (the built-in policy's)
RUNTIME_KEYS = {
    Policy().settings(TrustLevel(name)).runtime.value: name for name in ("trusted", "untrusted")
}


def start_server(tmp: Path, *extra: str) -> LiveServer:
    store = KeyStore(tmp / "keys.json")
    keys = {
        "untrusted": store.create("acme", "untrusted")[1],
        "trusted": store.create("trusty", "trusted", override=True)[1],
        "tiny": store.create(
            "tiny", "unknown", Quotas(concurrent=1, per_minute=2, max_request_bytes=2048)
        )[1],
    }
    env = {
        **os.environ,
        "HAZMAT_AUDIT_DIR": str(tmp / "audit"),
        "HAZMAT_SESSIONS_DIR": str(tmp / "sessions"),
        "HAZMAT_URL": "",
        "HAZMAT_API_KEY": "",
    }
    log_path = tmp / "serve.stderr"  # read by no_tracebacks after each test (conftest.py)
    with log_path.open("ab") as log:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "hazmat",
                "serve",
                "--host",
                "127.0.0.1",
                "--port",
                "0",
                "--keys",
                str(tmp / "keys.json"),
                *extra,
            ],
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
            env=env,
        )
    assert process.stdout is not None
    seen = []
    for line in process.stdout:  # the server says where it listens once it is ready
        seen.append(line)
        if "listening on " in line:
            url = line.split("listening on ", 1)[1].split()[0]
            server = LiveServer(url, keys, tmp / "audit", tmp / "keys.json", process, log_path)
            STARTED.append(server)
            return server
    process.wait()
    raise AssertionError(f"hazmat serve did not start: {''.join(seen)}{log_path.read_text()}")


def stop_server(server: LiveServer) -> str:
    """SIGTERM, as a service manager stops it; returns what it printed after, then all it
    wrote to standard error."""
    server.process.send_signal(signal.SIGTERM)
    try:
        rest, _ = server.process.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        server.process.kill()  # a service that will not stop fails its test, and goes
        server.process.communicate()
        raise
    rest += server.log()
    assert server.process.returncode == 0, rest
    return rest


# every service the tests started, for no_tracebacks
STARTED: list[LiveServer | Logged] = []
TRACEBACK = "Traceback (most recent call last)"


@pytest.fixture
def no_tracebacks(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fail the test during which a service under test logged a traceback (`TracebackWatch`),
    but one a test allows with `@pytest.mark.allow_traceback(text, reason=...)`: a traceback
    holding `text`, for the reason given."""
    allowed = [m.args[0] for m in request.node.iter_markers("allow_traceback")]
    watch = TracebackWatch()
    try:
        yield
    finally:
        found = [f for f in watch.stop() if not any(text in f for text in allowed)]
    if found:
        pytest.fail("the service logged a traceback:\n" + "\n".join(found))


class TracebackWatch(logging.Handler):
    """The tracebacks a service under test logs from now until `stop`: an exception its code
    did not expect (a 5xx, a thread that died). A `hazmat serve` the tests started writes them
    to its standard error (one started before, a module's, is read from where it was now);
    the app in this process, as ERROR records with exc_info from hazmat's, uvicorn's or
    Starlette's loggers."""

    LOGGERS = ("hazmat", "uvicorn", "starlette")

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []
        self.before = {id(server): _size(server) for server in STARTED}
        logging.getLogger().addHandler(self)

    def emit(self, record: logging.LogRecord) -> None:
        if record.levelno >= logging.ERROR and record.exc_info and self._ours(record):
            record.exc_text = logging.Formatter().formatException(record.exc_info)
            self.records.append(record)

    def _ours(self, record: logging.LogRecord) -> bool:
        return record.name.split(".")[0] in self.LOGGERS

    def stop(self) -> list[str]:
        """Each traceback seen, with where."""
        logging.getLogger().removeHandler(self)
        found = [f"in process: {r.name}: {r.getMessage()}\n{r.exc_text}" for r in self.records]
        for server in list(STARTED):
            written = server.log(self.before.get(id(server), 0))
            if TRACEBACK in written:
                found.append(f"{server.url}: {written[written.index(TRACEBACK) :][:4000]}")
            if server.process.poll() is not None:
                STARTED.remove(server)  # stopped: nothing more comes
        return found


def _size(server: LiveServer | Logged) -> int:
    return server.log_path.stat().st_size if server.log_path and server.log_path.exists() else 0


@pytest.fixture(scope="module")
def live_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    server = start_server(tmp_path_factory.mktemp("serve"))
    try:
        yield server
    finally:
        if server.process.poll() is None:
            stop_server(server)


@contextlib.asynccontextmanager
async def mcp_client(url: str, key: str) -> AsyncIterator[Any]:
    """The MCP SDK's own client session over streamable HTTP at `url`/mcp, initialized."""
    import httpx2
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {key}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=120) as http,
        streamable_http_client(f"{url}/mcp", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


async def over_http(url: str, key: str, calls: list[tuple[str, dict[str, Any]]]) -> Any:
    """MCP over streamable HTTP at `url`/mcp with the SDK's own client: (tools, answers)."""
    async with mcp_client(url, key) as session:
        tools = await session.list_tools()
        return tools, [await session.call_tool(name, args) for name, args in calls]


def params(tmp: Path, key: str) -> StdioServerParameters:
    """How to start `hazmat mcp` over stdio with `key`, its key store and audit log in `tmp`."""
    from mcp import StdioServerParameters

    env = {
        **os.environ,
        "HAZMAT_API_KEY": key,
        "HAZMAT_KEYS": str(tmp / "keys.json"),
        "HAZMAT_AUDIT_DIR": str(tmp / "audit"),
        "HAZMAT_SESSIONS_DIR": str(tmp / "sessions"),
    }
    return StdioServerParameters(command=sys.executable, args=["-m", "hazmat", "mcp"], env=env)


async def session_calls(tmp: Path, key: str, calls: list[tuple[str, dict[str, Any]]]) -> Any:
    """MCP over stdio (`params`) with the SDK's own client: (tools, answers)."""
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    async with (
        stdio_client(params(tmp, key)) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        tools = await session.list_tools()
        answers = [await session.call_tool(name, args) for name, args in calls]
        return tools, answers


def owned_by(pid: int) -> list[str]:
    """The sandboxes of hazmat process `pid` on this host, on both tiers: the engine's
    containers (DOCKER_HOST's, as in CI's fresh engine) and the OCI tier's bundles, which
    `backend: auto` makes where it can run."""
    from hazmat.backends.container.engine import Engine
    from hazmat.backends.container.owners import LABEL
    from hazmat.backends.oci.driver import OciBackend

    engine = Engine()
    try:
        found = [
            (c["Id"], c["Labels"])
            for c in engine.api.containers(all=True, filters={"label": LABEL})
        ]
        found += [(b.name, labels) for b, labels in OciBackend(engine).driver.bundles()]
    finally:
        engine.close()
    return [cid for cid, labels in found if labels.get(f"{LABEL}.owner", "").endswith(f":{pid}")]


def wait_exit(pid: int, timeout_s: float = 120) -> bool:
    """Whether process `pid` ends within the timeout (blocking on its pidfd, not polling)."""
    try:
        handle = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        return bool(select.select([handle], [], [], timeout_s)[0])
    finally:
        os.close(handle)
