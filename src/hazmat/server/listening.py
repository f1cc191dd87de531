"""`hazmat serve`: the HTTP API on a unix socket (the default) or a TCP address, under uvicorn.

The listening socket is made here, not by uvicorn: a unix socket gets mode 0600 in a 0700
directory (uvicorn would make it 0666), a live server already on the path is an error rather
than a socket stolen from under it, and a port of 0 gets a free one. On start, containers a
killed hazmat process left behind are removed (the reaper). On SIGTERM or SIGINT it stops
accepting and gives requests in flight `grace_s` to be answered (by default longer than any
run the policy allows). A run still going after that loses its answer (uvicorn cancels the
request) but not its record: its worker thread is not abandoned, it ends by its own limits,
and the server waits for it before the sandbox closes and removes every container.
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import math
import os
import signal
import socket
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hazmat._exceptions import InputError
from hazmat.policy import Policy
from hazmat.server.guard import ConnectionLimits, guarded_h11
from hazmat.server.idle import Activity, IdleStop
from hazmat.service.protocols import Executor
from hazmat.service.quotas import QuotaBook
from hazmat.service.tenant_keys import KeyStore
from hazmat.sessions.store import Shelf

if TYPE_CHECKING:
    from hazmat.sandbox import Sandbox
    from hazmat.service.protocols import Sessions

__all__ = ["Front", "bind", "reaped", "serve"]

# where runs go instead of the service's own engine, who counts the tenants' quotas, and where
# paused sessions are kept: made when the service starts, closed when it stops (cli/serve.py
# composes the cluster's in)
Front = Callable[[], AbstractContextManager[tuple[Executor, QuotaBook, Shelf]]]

Progress = Callable[[str], None]

log = logging.getLogger(__name__)


def bind(host: str | None, port: int | None, path: Path | None) -> socket.socket:
    """The listening socket: TCP when a host or port is given, else the unix socket `path`."""
    if host is not None or port is not None:
        return _bind_tcp(host or "127.0.0.1", 8537 if port is None else port)
    if path is None:
        raise InputError("serve needs --socket PATH or --host/--port")
    return _bind_unix(path)


def _bind_tcp(host: str, port: int) -> socket.socket:
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = host == "localhost"
    if not loopback:
        log.warning(
            "hazmat serve: listening on %s, beyond this machine; keys are the only guard", host
        )
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # inherited by accepted connections: an answer written in two parts is not held back
    # by Nagle until the client's delayed ACK (~40 ms a request)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise InputError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.listen(128)
    return sock


def _bind_unix(path: Path) -> socket.socket:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    if path.is_socket():
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe.connect(str(path))
        except OSError:
            path.unlink()  # left by a server that died
        else:
            raise InputError(f"a server is already listening on {path}")
        finally:
            probe.close()
    elif path.exists():
        raise InputError(f"{path} exists and is not a socket")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        sock.bind(str(path))
    except OSError as exc:
        sock.close()
        raise InputError(f"cannot listen on {path}: {exc.strerror or exc}") from None
    finally:
        os.umask(old)
    sock.listen(128)
    return sock


@contextlib.contextmanager
def _quiet_stop_signals() -> Iterator[None]:
    """uvicorn handles SIGTERM/SIGINT with a graceful shutdown, then raises the signal again
    for the handler it found; with this one, that ends serving and the sandbox still closes."""
    stops = (signal.SIGINT, signal.SIGTERM)
    previous = {sig: signal.signal(sig, lambda *_: None) for sig in stops}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def serve(
    sock: socket.socket,
    policy: Policy,
    keys: KeyStore,
    *,
    max_running: int = 8,
    grace_s: float = 30.0,
    progress: Callable[[str], None] = print,
    front: Front | None = None,
    connections: ConnectionLimits | None = None,
    idle_stop_s: float | None = None,
) -> None:
    """Serve until SIGTERM/SIGINT; then close the sandbox (no container left). With `front`,
    runs go where it says (the cluster's workers: docs/scale.md); `connections` bounds what
    clients' connections may hold (guard.py); with `idle_stop_s`, it also stops once that
    long has passed without a request and with no session open (idle.py)."""
    import uvicorn

    from hazmat.sandbox import Sandbox
    from hazmat.server.http import create_app

    where = sock.getsockname()
    address = f"unix:{where}" if sock.family == socket.AF_UNIX else f"http://{where[0]}:{where[1]}"
    try:
        with Sandbox(policy) as sandbox, contextlib.ExitStack() as stack:
            reaped(sandbox.backend.reap(), progress)
            executor: Executor | None = None
            quotas: QuotaBook | None = None
            sessions: Sessions | None = None
            if front is not None:
                executor, quotas, shelf = stack.enter_context(front())
                sandbox.session_store = sandbox.session_store.on(shelf)
                sessions = executor.sessions(sandbox)
            limits = connections or ConnectionLimits()
            app = create_app(
                sandbox,
                keys,
                max_running,
                executor,
                quotas,
                limits.body_timeout_s,
                sessions=sessions,
            )
            activity = Activity(app)
            config = uvicorn.Config(
                activity,
                http=guarded_h11(limits.head_timeout_s),
                limit_concurrency=limits.max_connections,
                timeout_keep_alive=limits.keep_alive_s,
                log_level="warning",
                timeout_graceful_shutdown=math.ceil(grace_s),
                lifespan="on",
            )
            server = uvicorn.Server(config)
            if idle_stop_s is not None:
                stack.enter_context(_idle_stop(server, activity, sandbox, idle_stop_s, progress))
            progress(f"hazmat serve: listening on {address} (keys: {keys.path})")
            with _quiet_stop_signals():
                server.run(sockets=[sock])
            app.state.wait_idle()  # belt and braces: no run may meet a closed sandbox
        progress("hazmat serve: stopped; every container removed")
    finally:
        sock.close()
        if sock.family == socket.AF_UNIX:
            Path(where).unlink(missing_ok=True)


def _idle_stop(
    server: Any, activity: Activity, sandbox: Sandbox, idle_s: float, progress: Progress
) -> IdleStop:
    def stop() -> None:
        progress(f"hazmat serve: stopping: no request for {idle_s:g} s and no session open")
        server.should_exit = True  # uvicorn's graceful stop, as on SIGTERM

    return IdleStop(activity, idle_s, lambda: bool(sandbox.sessions.all()), stop)


def reaped(removed: list[str], progress: Callable[[str], None]) -> None:
    """Say what the reaper removed of the containers of hazmat processes that are gone."""
    if removed:
        progress(f"removed {len(removed)} container(s) a stopped hazmat process left behind")
