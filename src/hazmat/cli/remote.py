"""A small client for a running hazmat service, for the CLI: standard library only, so that a
whole `hazmat run` through a server stays a few tens of milliseconds of Python.

Where the service is: `HAZMAT_URL` (`http://HOST:PORT` or `unix:/path/to.sock`), else the
default socket (`default_socket_path()`), which `hazmat serve` listens on unless told otherwise.
The key is `HAZMAT_API_KEY`; a socket found by convention is used only if it is the user's own
(owned.py). With `live`, the run is asked for as server-sent events and the
program's output is handed to `live(stream, data)` as it comes (docs/api.md, "Streaming").
"""

from __future__ import annotations

import base64
import contextlib
import http.client
import json
import os
import socket
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from hazmat._exceptions import (
    AccessDenied,
    HazmatError,
    InfraError,
    InputError,
    InputTooLarge,
    NotPermitted,
    QuotaExceeded,
    ServiceUnavailable,
    quoted,
)
from hazmat.models import ExecutionResult
from hazmat.service.wire import options_to_wire, result_from_wire

__all__ = ["Service", "default_socket_path", "find_service", "run_remote"]

TIMEOUT_S = 3600.0  # a run's own limits end it long before this
_ERRORS: dict[int, type[HazmatError]] = {
    400: InputError,
    401: AccessDenied,
    403: NotPermitted,
    413: InputTooLarge,
    503: InfraError,
}


def default_socket_path() -> Path:
    """`$XDG_RUNTIME_DIR/hazmat/hazmat.sock`, else /run/hazmat/hazmat.sock for root, else
    `~/.local/state/hazmat/hazmat.sock`."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime:
        return Path(runtime) / "hazmat" / "hazmat.sock"
    if os.geteuid() == 0:
        return Path("/run/hazmat/hazmat.sock")
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "hazmat" / "hazmat.sock"


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: float) -> None:
        super().__init__("localhost", timeout=timeout)
        self._path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            sock.connect(self._path)
        except OSError:
            sock.close()
            raise
        self.sock = sock


class _TCPConnection(http.client.HTTPConnection):
    def connect(self) -> None:
        super().connect()
        # http.client sends the headers and the body in two writes: without this the body
        # waits for the server's delayed ACK of the headers (~40 ms a request)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class Service:
    """One service address and key; `post` sends a JSON body and returns the JSON answer."""

    def __init__(
        self,
        url: str,
        key: str | None,
        default_trust: str | None = None,
        max_running: int | None = None,
        own: bool = False,
    ) -> None:
        self.url = url
        self.key = key
        self.own = own  # this user's local server: its key may ask for any runtime
        # the trust a run without one gets: the service's default is the key's level; the
        # local server (local_server.py) is given its policy's default, as a run here gets
        self.default_trust = default_trust
        self.max_running = max_running  # runs at once, where known (the local server's)

    def _connection(self) -> http.client.HTTPConnection:
        if self.url.startswith("unix:"):
            return _UnixConnection(self.url.removeprefix("unix:"), TIMEOUT_S)
        parts = urlsplit(self.url)
        if parts.scheme == "https":
            return http.client.HTTPSConnection(parts.netloc, timeout=TIMEOUT_S)
        if parts.scheme != "http" or not parts.hostname:
            raise InputError(
                f"HAZMAT_URL {quoted(self.url)}: expected http://HOST:PORT or unix:/path"
            )
        return _TCPConnection(parts.netloc, timeout=TIMEOUT_S)

    def get(self, path: str, timeout_s: float = 10.0) -> bytes:
        """GET `path`; the body of a 200 answer (`ServiceUnavailable` otherwise)."""
        with self._exchange("GET", path, timeout_s) as response:
            raw = response.read()
        if response.status != 200:
            raise ServiceUnavailable(f"{self.url}{path} answered {response.status}")
        return raw

    def lines(self, path: str) -> Iterator[bytes]:
        """GET `path` and yield its body's lines as they come (a JSON Lines stream); the
        service's error if it does not answer 200."""
        with self._exchange("GET", path, TIMEOUT_S) as response:
            if response.status != 200:
                _answer(response, response.read(), self.url)  # raises the service's error
            while line := response.readline():
                yield line

    def delete(self, path: str) -> dict[str, Any]:
        """DELETE `path`; the JSON answer."""
        with self._exchange("DELETE", path, 10.0) as response:
            raw = response.read()
        return _answer(response, raw, self.url)

    @contextlib.contextmanager
    def _exchange(
        self, method: str, path: str, timeout_s: float
    ) -> Iterator[http.client.HTTPResponse]:
        """A request without a body, and its response while it is read; a connection that
        fails is `ServiceUnavailable`."""
        connection = self._connection()
        connection.timeout = timeout_s
        headers = {"Authorization": f"Bearer {self.key}"} if self.key else {}
        try:
            try:
                connection.request(method, path, headers=headers)
                yield connection.getresponse()
            except OSError as exc:
                raise ServiceUnavailable(
                    f"the hazmat service at {self.url} does not answer: {exc}"
                ) from None
        finally:
            connection.close()

    def post(self, path: str, body: dict[str, Any], live: Live | None = None) -> dict[str, Any]:
        """POST `body` as JSON; the JSON answer. With `live`, ask for events and hand it each
        output chunk; the answer is then the `result` event's data."""
        data = json.dumps(body).encode()
        headers = {"Content-Type": "application/json"}
        if self.key:
            headers["Authorization"] = f"Bearer {self.key}"
        if live is not None:
            headers["Accept"] = "text/event-stream"
        connection = self._connection()
        try:
            try:
                connection.request("POST", path, body=data, headers=headers)
                response = connection.getresponse()
                if live is not None and response.status == 200:
                    return _events(response, live, self.url)
                raw = response.read()
            except _ReaderGone:
                raise BrokenPipeError from None  # the CLI ends quietly, as for `| head`
            except OSError as exc:
                raise ServiceUnavailable(
                    f"the hazmat service at {self.url} does not answer: {exc}"
                ) from None
        finally:
            connection.close()  # before the result, this cancels the run on the server
        return _answer(response, raw, self.url)


Live = Callable[[str, bytes], None]


class _ReaderGone(Exception):
    """`live` could not write (its reader went away): told apart from the service's failures."""


def _events(response: http.client.HTTPResponse, live: Live, url: str) -> dict[str, Any]:
    """Read server-sent events until the result: output chunks go to `live` (base64 asked
    for, so the bytes are exact), an `error` event raises its error."""
    name, data = "", ""
    while line := response.readline():
        text = line.decode("utf-8").rstrip("\r\n")
        if text.startswith("event: "):
            name = text[len("event: ") :]
        elif text.startswith("data: "):
            data = text[len("data: ") :]
        elif not text and name:
            event = json.loads(data)
            if name in ("stdout", "stderr"):
                try:
                    live(name, base64.b64decode(event.get("base64", "")))
                except OSError:
                    raise _ReaderGone from None
            elif name == "retry":  # the cluster runs it again: what came so far was lost
                print(
                    f"\nhazmat: {event.get('reason')}; running it again "
                    f"(attempt {event.get('attempt')}): output above came from the lost attempt",
                    file=sys.stderr,
                    flush=True,
                )
            elif name == "result":
                return dict(event)
            elif name == "error":
                raise _error(int(event.get("status", 503)), event, url, None)
            name, data = "", ""
    raise ServiceUnavailable(f"{url} closed the stream before the run's result")


def _answer(response: http.client.HTTPResponse, raw: bytes, url: str) -> dict[str, Any]:
    try:
        data = json.loads(raw)
    except ValueError:
        raise ServiceUnavailable(f"{url} answered {response.status} without JSON") from None
    if 200 <= response.status < 300 and isinstance(data, dict):  # 202: a batch accepted
        return data
    retry = response.headers.get("Retry-After")
    raise _error(response.status, data if isinstance(data, dict) else {"raw": raw}, url, retry)


def _error(status: int, data: dict[str, Any], url: str, retry: str | None) -> HazmatError:
    error = data.get("error") or {}
    said = error.get("message") or bytes(data.get("raw", b""))[:200].decode(errors="replace")
    message = f"{said} (from {url})"
    if status == 429:
        return QuotaExceeded(message, float(retry or 1))
    return _ERRORS.get(status, InfraError)(message)


def find_service() -> Service | None:
    """The service to use: `HAZMAT_URL` if set, else (with `HAZMAT_API_KEY`) the default
    socket if one is there: `InfraError` if it, or a folder it is in, is not the user's own
    (owned.py), before the key or any code is sent."""
    from hazmat.cli.owned import own_socket

    key = os.environ.get("HAZMAT_API_KEY")
    url = os.environ.get("HAZMAT_URL")
    if url:
        return Service(url, key)
    if not key:
        return None
    todo = "set HAZMAT_URL to your service, or XDG_RUNTIME_DIR to a folder of yours"
    path = own_socket(default_socket_path(), todo)
    return None if path is None else Service(f"unix:{path}", key)


def run_remote(
    service: Service,
    code: str | bytes,
    language: str,
    options: Mapping[str, Any],
    live: Live | None = None,
) -> ExecutionResult:
    """`Sandbox.run`'s arguments as a request to the service (wire.py's codec, the service's
    own); with `live`, the output goes to it as it comes. The answer is the run's
    `ExecutionResult`, the output exactly as the program wrote it."""
    if options.get("trust") is None and service.default_trust is not None:
        options = {**options, "trust": service.default_trust}
    body = options_to_wire(code, language, options)
    return result_from_wire(service.post("/v1/runs?output=base64", body, live))
