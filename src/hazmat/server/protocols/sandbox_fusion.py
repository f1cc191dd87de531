"""SandboxFusion's protocol: what verl's code rewards (`reward_model.sandbox_fusion.url`) and
the `sandbox-fusion` client call (docs/protocols.md).

    POST /sandbox-fusion/<key>/run_code     {code, language, stdin, files, fetch_files,
                                             run_timeout, compile_timeout, memory_limit_MB}
    POST /sandbox-fusion/<key>/run_jupyter  {cells, cell_timeout, total_timeout, files, ...}
    GET  /sandbox-fusion/v1/ping            "pong"

Neither client sends a key, so the tenant key is a path segment of the URL they are given
(`Authorization: Bearer` works too, at `/sandbox-fusion/run_code`). A run is `/v1/runs`'s, on
the CPU clock (`run_timeout` is CPU time, with wall-clock time as the idleness backstop), as
the key's tenant at its trust level; a limit asked above the level runs at the level's and
`message` says so.

Overload: verl retries a 504 and scores any other failed answer as a failed sample (-1), so
a run waits for its turn here (at most the key's `concurrent` at once) as long as its
client's own deadline leaves room for, and past that is a 504, never a 429 (`wait_for_turn`).
"""

from __future__ import annotations

import base64
import binascii
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import anyio
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from hazmat._exceptions import HazmatError, InputError, QuotaExceeded, quoted
from hazmat.backends.container.cpu_time import CpuLimit
from hazmat.displays import bundle_to_json
from hazmat.languages import Language, get_language
from hazmat.models import ExecutionResult, Outcome
from hazmat.policy import Clock
from hazmat.server.protocols import (
    Overloaded,
    Service,
    Turns,
    json_object,
    key_of,
    languages_of,
    seconds,
    whole_mib,
    within_level,
)
from hazmat.service.protocols import OpenSession
from hazmat.service.tenant_keys import Key

__all__ = ["PREFIX", "routes"]

PREFIX = "/sandbox-fusion"
NAME = "sandbox_fusion"  # its names in the language modules (`Language.names`)
DEFAULT_TIMEOUT_S = 10.0  # run_timeout's and compile_timeout's, as its clients have them
NOTEBOOK_S = 45.0  # run_jupyter's total_timeout, as its clients have it
NOTEBOOK_WAIT_S = 30.0  # how long a notebook waits for one of its key's places (then a 504)
# verl gives each attempt compile_timeout + run_timeout + this many seconds (its API_TIMEOUT)
CLIENT_SLACK_S = 10.0
MARGIN_S = 2.0  # kept for the answer's way back, out of what the client's deadline leaves
LEAST_WAIT_S = 2.0
MOST_WAIT_S = 60.0
# the run's options -> the protocol's fields that set them (the level's notes name these)
FIELDS: Mapping[str, str] = {
    "timeout": "run_timeout",
    "compile_timeout": "compile_timeout",
    "memory_mb": "memory_limit_MB",
}
RUN_HEADER = "X-Hazmat-Run"  # the audit log's id of the run an answer is of


def routes(service: Service) -> list[Route]:
    protocol = SandboxFusion(service)
    return [
        Route(f"{PREFIX}/v1/ping", protocol.ping, methods=["GET"]),
        Route(f"{PREFIX}/{{key}}/v1/ping", protocol.ping, methods=["GET"]),
        Route(f"{PREFIX}/run_code", protocol.run_code, methods=["POST"]),
        Route(f"{PREFIX}/{{key}}/run_code", protocol.run_code, methods=["POST"]),
        Route(f"{PREFIX}/run_jupyter", protocol.run_jupyter, methods=["POST"]),
        Route(f"{PREFIX}/{{key}}/run_jupyter", protocol.run_jupyter, methods=["POST"]),
    ]


@dataclass(frozen=True)
class _Asked:
    code: str
    language: Language
    options: dict[str, Any]
    said: list[str]  # the limits lowered to the level's
    wait_s: float  # how long it may wait for its turn


class SandboxFusion:
    def __init__(self, service: Service) -> None:
        self.service = service
        self.turns = Turns()

    async def ping(self, request: Request) -> Response:
        return JSONResponse("pong")

    async def run_code(self, request: Request) -> Response:
        """One run; every refusal in SandboxFusion's own shape, with hazmat's sentence."""
        try:
            key = self._key(request)
            asked = self._asked(await self.service.read_body(request, key), key)
            prepared = self.service.prepare(asked.code, asked.language.name, asked.options)
            async with self.turns.turn(key, asked.wait_s):
                with self.service.quotas.admit(key.tenant, key.quotas):
                    result = await self.service.run_in(prepared, None)
        except (Overloaded, QuotaExceeded) as exc:
            return self._refused(504, f"hazmat is busy: {exc}; try again")
        except HazmatError as exc:
            return self._refused(exc.http_status, str(exc))
        self.service.counted(NAME, 200)
        headers = {RUN_HEADER: result.run_id} if result.run_id else None
        return JSONResponse(answer(result, asked.said), headers=headers)

    async def run_jupyter(self, request: Request) -> Response:
        """Cells in one kept Python interpreter (a hazmat session, closed at the end), in
        order, each as a call of its own; the notebook stops at `total_timeout`."""
        try:
            key = self._key(request)
            data = json_object(await self.service.read_body(request, key))
            notebook = Notebook.of(data, self.service.policy.settings(key.trust).limits.timeout_s)
            async with self.turns.turn(key, NOTEBOOK_WAIT_S):
                with self.service.quotas.admit(key.tenant, key.quotas):  # one run, all its cells
                    owners = self.service.owners
                    asked, options = owners.asked(key, {"language": "python"})
                    session = await anyio.to_thread.run_sync(owners.open, key, asked, options)
                    try:
                        answered = await notebook.run(self.service, session)
                    finally:
                        await anyio.to_thread.run_sync(session.close)
        except (Overloaded, QuotaExceeded) as exc:
            return self._refused(504, f"hazmat is busy: {exc}; try again")
        except HazmatError as exc:
            return self._refused(exc.http_status, str(exc))
        self.service.counted(NAME, 200)
        return JSONResponse(answered)

    def _key(self, request: Request) -> Key:
        how = f"point the client at {PREFIX}/<key>"
        return key_of(request, self.service.keys, request.path_params.get("key"), how)

    def _refused(self, status: int, message: str) -> Response:
        self.service.counted(NAME, status)
        body: dict[str, Any] = {"status": "SandboxError", "message": message, "files": {}}
        return JSONResponse(body, status_code=status)

    def _asked(self, body: bytes, key: Key) -> _Asked:
        data = json_object(body)
        code, language = _text(data, "code"), _language(data.get("language"))
        run_s = seconds(data.get("run_timeout"), "run_timeout", DEFAULT_TIMEOUT_S)
        compile_s = seconds(data.get("compile_timeout"), "compile_timeout", DEFAULT_TIMEOUT_S)
        options: dict[str, Any] = {
            "stdin": _stdin(data.get("stdin")),
            "files": _files(data.get("files")),
            "output_files": _paths(data.get("fetch_files")),
            "timeout": run_s,
            "compile_timeout": compile_s,
            "memory_mb": _memory(data.get("memory_limit_MB")),
            "clock": Clock.CPU,
            "trust": key.trust,
            "caller": key.caller,
            "origin": {"protocol": NAME},
        }
        said = within_level(options, FIELDS, key.trust, self.service.policy)
        wait_s = wait_for_turn(
            run_s + compile_s, options["timeout"], options["compile_timeout"], language
        )
        return _Asked(code, language, options, said, wait_s)


def wait_for_turn(asked_s: float, run_s: float, build_s: float, language: Language) -> float:
    """How long a run may wait for its turn: what its client's deadline (`asked_s`, the
    timeouts it sent, plus verl's slack) leaves once the run's own worst case is counted (its
    idleness backstop, its build's budget `build_s` where it has a build), within
    LEAST_WAIT_S..MOST_WAIT_S."""
    worst = CpuLimit(run_s).backstop_s + MARGIN_S + (build_s if language.build else 0.0)
    return min(MOST_WAIT_S, max(LEAST_WAIT_S, asked_s + CLIENT_SLACK_S - worst))


def answer(result: ExecutionResult, said: list[str]) -> dict[str, Any]:
    """The `RunCodeResponse` of `result`: `Success` when the program exited 0, `Failed` for
    every verdict of the program's own (its build's result in `compile_result`, its run's in
    `run_result`), `SandboxError` only when hazmat could not run it at all."""
    message = "; ".join([*said, *([result.error] if result.error else [])])
    if result.outcome in (Outcome.INFRA_ERROR, Outcome.CANCELLED):
        return {"status": "SandboxError", "message": message, "run_result": None, "files": {}}
    built = _built(result)
    ran = None if built is not None and built["return_code"] != 0 else _ran(result)
    return {
        "status": "Success" if result.outcome is Outcome.OK else "Failed",
        "message": message,
        "compile_result": built,
        "run_result": ran,
        "executor_pod_name": None,
        "files": {name: base64.b64encode(data).decode() for name, data in result.files.items()},
    }


def _built(result: ExecutionResult) -> dict[str, Any] | None:
    """The build step's result, for a language that has one and a run that got that far."""
    if result.outcome is Outcome.COMPILE_TIMEOUT:
        return _command("TimeLimitExceeded", result.compile_ms, None, "", result.stderr)
    if result.outcome is Outcome.COMPILE_ERROR:
        status = result.exit_code if result.exit_code else 1
        return _command("Finished", result.compile_ms, status, result.stdout, result.stderr)
    if result.compile_ms is None or not get_language(result.language).build:
        return None
    return _command("Finished", result.compile_ms, 0, "", "")


def _ran(result: ExecutionResult) -> dict[str, Any]:
    """The program's result: `TimeLimitExceeded` (no return code) for a time limit (CPU time,
    or the idleness backstop), `Error` for code the policy blocked (nothing ran), else
    `Finished` with its exit status (a limit hazmat stopped it at has the status
    `Outcome.exit_status` gives: 137 memory, 141 output)."""
    ms = result.program_ms if result.program_ms is not None else result.duration_ms
    if result.outcome is Outcome.TIMEOUT:
        ran = _command("TimeLimitExceeded", ms, None, result.stdout, result.stderr)
    elif result.outcome is Outcome.BLOCKED:
        ran = _command("Error", 0.0, Outcome.BLOCKED.exit_status, "", result.error or "")
    else:
        ran = _command("Finished", ms, result.exit_code, result.stdout, result.stderr)
    ran["cpu_time"] = None if result.cpu_time_ms is None else result.cpu_time_ms / 1000
    return ran


def _command(
    status: str, ms: float | None, code: int | None, stdout: str, stderr: str
) -> dict[str, Any]:
    return {
        "status": status,
        "execution_time": None if ms is None else ms / 1000,
        "return_code": code,
        "stdout": stdout,
        "stderr": stderr,
    }


def _text(data: Mapping[str, Any], name: str) -> str:
    value = data.get(name)
    if not isinstance(value, str):
        wrong = "missing" if value is None else f"a {type(value).__name__}"
        raise InputError(f"field {name!r} must be a string, not {wrong}")
    return value


def _language(name: object) -> Language:
    known = languages_of(NAME)
    if not isinstance(name, str) or name not in known:
        raise InputError(
            f"unknown language {quoted(name)} for SandboxFusion's run_code (hazmat runs: "
            f"{', '.join(sorted(known))})"
        )
    return known[name]


def _stdin(value: object) -> bytes:
    if value is None:
        return b""
    if not isinstance(value, str):
        raise InputError(f"field 'stdin' must be a string or null, not {type(value).__name__}")
    return value.encode()


def _files(value: object) -> dict[str, bytes]:
    """`files`: path -> base64 content (a null content is no file, as SandboxFusion has it)."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InputError("field 'files' must be an object of path -> base64 content")
    files = {}
    for name, content in value.items():
        if content is None:
            continue
        if not isinstance(content, str):
            raise InputError(f"file {quoted(name)} must be base64 text")
        try:
            files[name] = base64.b64decode(content, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise InputError(f"file {quoted(name)} is not base64 ({exc})") from None
    return files


def _paths(value: object) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(p, str) for p in value):
        raise InputError("field 'fetch_files' must be a list of paths")
    return value


def _memory(value: object) -> int | None:
    """`memory_limit_MB`: megabytes; -1 (SandboxFusion's default) or null: the level's."""
    try:
        return whole_mib(value, 1024 * 1024, level=(-1,))
    except ValueError:
        raise InputError(
            f"field 'memory_limit_MB' must be a positive whole number (or -1), not {value!r}"
        ) from None


@dataclass(frozen=True)
class Notebook:
    """A `/run_jupyter` request: its cells, their time, its files."""

    cells: list[str]
    cell_s: float
    total_s: float
    files: dict[str, bytes]
    fetch: list[str]

    @classmethod
    def of(cls, data: Mapping[str, Any], level_s: float) -> Notebook:
        cells = data.get("cells")
        if not isinstance(cells, list) or not all(isinstance(c, str) for c in cells):
            raise InputError("field 'cells' must be a list of code strings")
        if data.get("kernel", "python3") != "python3":
            raise InputError(f"unknown kernel {quoted(data.get('kernel'))} (hazmat has python3)")
        cell = data.get("cell_timeout")
        cell_s = level_s if cell in (None, 0) else min(seconds(cell, "cell_timeout", 0), level_s)
        total_s = seconds(data.get("total_timeout"), "total_timeout", NOTEBOOK_S)
        files, fetch = _files(data.get("files")), _paths(data.get("fetch_files"))
        return cls(cells, cell_s, total_s, files, fetch)

    async def run(self, service: Service, session: OpenSession) -> dict[str, Any]:
        began = time.monotonic()
        if self.files:
            await anyio.to_thread.run_sync(session.upload, self.files)
        cells: list[dict[str, Any]] = []
        finished = True
        for code in self.cells:
            left = self.total_s - (time.monotonic() - began)
            if left <= 0:
                finished = False
                break
            prepared = session.request(code, timeout=min(self.cell_s, left))
            cells.append(_cell(await service.run_in(prepared, session)))
        fetched, said = await self._fetched(session)
        took = time.monotonic() - began
        driver = _command("Finished" if finished else "TimeLimitExceeded", took * 1000,
                          0 if finished else None, "", "")
        if not finished:
            said.insert(0, f"the notebook ran past its total_timeout of {self.total_s:g} s")
        return {
            "status": "Success" if finished else "Failed",
            "message": "; ".join(said),
            "driver": driver,
            "cells": cells,
            "executor_pod_name": None,
            "files": {n: base64.b64encode(d).decode() for n, d in fetched.items()},
        }


    async def _fetched(self, session: OpenSession) -> tuple[dict[str, bytes], list[str]]:
        """The files asked for that are there; a sentence for each that is not (skipped, as
        SandboxFusion skips them)."""
        fetched: dict[str, bytes] = {}
        said = []
        for name in self.fetch:
            try:
                fetched.update(await anyio.to_thread.run_sync(session.download, [name]))
            except InputError as exc:
                said.append(f"fetch_files: {exc}")
        return fetched, said


def _cell(result: ExecutionResult) -> dict[str, Any]:
    """A cell's `CellRunResult`: its output, its displays as MIME bundles (binary as base64),
    and its exception as Jupyter names it (or hazmat's sentence for a limit it hit)."""
    error = []
    if result.exception is not None:
        error.append({"ename": result.exception.name, "evalue": result.exception.value,
                      "traceback": result.exception.traceback.splitlines()})
    elif result.outcome is not Outcome.OK:
        error.append({"ename": result.outcome.value, "evalue": result.error or "",
                      "traceback": []})
    return {
        "stdout": result.stdout,
        "stderr": result.stderr,
        "display": [bundle_to_json(bundle) for bundle in result.displays],
        "error": error,
    }
