"""Piston's API (v2), what chat bots, teaching sites and editor plugins call
(docs/protocols.md):

    GET  /piston/api/v2/runtimes   [{language, version, aliases}]
    POST /piston/api/v2/execute    {language, version, files, stdin, args, run_timeout,
                                    run_cpu_time, compile_timeout, run_memory_limit, ...}

A client's base URL is `/piston` (the key in `Authorization`, as `Bearer <key>` or the key
alone) or `/piston/<key>`. A run is `/v1/runs`'s, on the CPU clock (`run_cpu_time`, else
`run_timeout`, else Piston's 3 s), as the key's tenant at its trust level; a limit above the
level runs at the level's and `run.message` says so. Each language's version is what its
`Language.version` program prints in its image, asked once per trust level and kept. Past
the key's places a run waits its turn up to WAIT_S, then is a 429 in Piston's shape.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import anyio
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from hazmat._exceptions import HazmatError, InfraError, InputError, QuotaExceeded
from hazmat.json_input import loads
from hazmat.languages import LANGUAGES, Language
from hazmat.models import ExecutionRequest, ExecutionResult, Outcome
from hazmat.policy import Clock, TrustLevel
from hazmat.server.protocols import (
    Overloaded,
    Service,
    Turns,
    key_of,
    languages_of,
    whole_mib,
    within_level,
)
from hazmat.service.tenant_keys import Key

__all__ = ["PREFIX", "routes"]

PREFIX = "/piston"
NAME = "piston"  # its names in the language modules (`Language.names`)
DEFAULT_RUN_MS = 3000  # Piston's own defaults
DEFAULT_COMPILE_MS = 10000
WAIT_S = 30.0  # how long a run waits for one of its key's places before its 429
FIELDS: Mapping[str, str] = {
    "timeout": "run_cpu_time",
    "compile_timeout": "compile_timeout",
    "memory_mb": "run_memory_limit",
}
_VERSION = re.compile(r"\d+(?:\.\d+)+")
_MAJOR = re.compile(r"[v=^~]?(\d+)(?:\.(?:\d+|x|X|\*))*")


def routes(service: Service) -> list[Route]:
    protocol = Piston(service)
    at = ("", "/{key}")
    return [
        *(Route(f"{PREFIX}{k}/api/v2/runtimes", protocol.runtimes, methods=["GET"]) for k in at),
        *(Route(f"{PREFIX}{k}/api/v2/execute", protocol.execute, methods=["POST"]) for k in at),
    ]


@dataclass(frozen=True)
class _Asked:
    language: Language
    selector: str
    code: str
    options: dict[str, Any]
    said: list[str]


class Piston:
    def __init__(self, service: Service) -> None:
        self.service = service
        self.turns = Turns()
        self.versions: dict[tuple[str, TrustLevel], str] = {}
        self._asking: dict[tuple[str, TrustLevel], anyio.Lock] = {}

    async def runtimes(self, request: Request) -> Response:
        """Every language with a Piston name whose version could be told (the versions not
        known yet asked side by side, within the key's places)."""
        try:
            key = self._key(request)
        except HazmatError as exc:
            return self._refused(exc.http_status, str(exc))
        told: dict[str, str] = {}

        async def tell(name: str, lang: Language) -> None:
            # its image is missing, or the key has no room now: not listed
            with contextlib.suppress(HazmatError, Overloaded):
                told[name] = await self._version(lang, key)

        async with anyio.create_task_group() as group:
            for name, lang in languages_by_name().items():
                group.start_soon(tell, name, lang)
        listed = [
            {"language": name, "version": told[name], "aliases": list(lang.names[NAME][1:])}
            for name, lang in languages_by_name().items()
            if name in told
        ]
        self.service.counted(NAME, 200)
        return JSONResponse(listed)

    async def execute(self, request: Request) -> Response:
        if not request.headers.get("content-type", "").startswith("application/json"):
            return self._refused(415, "requests must be of type application/json")
        try:
            key = self._key(request)
            asked = self._asked(await self.service.read_body(request, key), key)
            version = await self._version(asked.language, key)
            _check_version(asked, version)
            prepared = self.service.prepare(asked.code, asked.language.name, asked.options)
            result = await self._run(key, prepared)
        except (Overloaded, QuotaExceeded) as exc:
            return self._refused(429, f"hazmat is busy: {exc}; try again")
        except HazmatError as exc:
            return self._refused(exc.http_status, str(exc))
        if result.outcome in (Outcome.INFRA_ERROR, Outcome.CANCELLED):
            return self._refused(503, result.error or "the run could not be carried out")
        self.service.counted(NAME, 200)
        return JSONResponse(answer(result, asked.language, version, asked.said))

    async def _run(self, key: Key, prepared: ExecutionRequest) -> ExecutionResult:
        async with self.turns.turn(key, WAIT_S):
            with self.service.quotas.admit(key.tenant, key.quotas):
                return await self.service.run_in(prepared, None)

    async def _version(self, lang: Language, key: Key) -> str:
        """`lang`'s version at `key`'s level: its `version` program's first dotted number,
        asked once (as the key's tenant, audited as any run) and kept."""
        where = (lang.name, key.trust)
        lock = self._asking.setdefault(where, anyio.Lock())
        async with lock:
            if where not in self.versions:
                options = {"trust": key.trust, "caller": key.caller, "origin": {"protocol": NAME}}
                asked = self.service.prepare(lang.version, lang.name, options)
                result = await self._run(key, asked)
                found = _VERSION.search(result.stdout) if result.outcome is Outcome.OK else None
                if found is None:
                    raise InfraError(
                        f"could not tell {lang.name}'s version: {result.error or result.stderr}"
                    )
                self.versions[where] = found.group(0)
        return self.versions[where]

    def _key(self, request: Request) -> Key:
        how = f"send it as Authorization, or use the base URL {PREFIX}/<key>"
        presented = request.path_params.get("key")
        return key_of(request, self.service.keys, presented, how, raw=True)

    def _refused(self, status: int, message: str) -> Response:
        self.service.counted(NAME, status)
        return JSONResponse({"message": message}, status_code=status)

    def _asked(self, body: bytes, key: Key) -> _Asked:
        data = loads(body, "the request body")
        if not isinstance(data, dict):
            raise InputError(f"the request body must be a JSON object, not {type(data).__name__}")
        language = _language(data.get("language"))
        selector = data.get("version")
        if not isinstance(selector, str) or not selector:
            raise InputError("version is required as a string")
        code, files = _files(data.get("files"))
        run_ms = _ms(data, "run_cpu_time") or _ms(data, "run_timeout") or DEFAULT_RUN_MS
        options: dict[str, Any] = {
            "stdin": _text(data.get("stdin"), "stdin").encode(),
            "args": _args(data.get("args")),
            "files": files,
            "timeout": run_ms / 1000,
            "compile_timeout": (_ms(data, "compile_timeout") or DEFAULT_COMPILE_MS) / 1000,
            "memory_mb": _memory_mb(data.get("run_memory_limit")),
            "clock": Clock.CPU,
            "trust": key.trust,
            "caller": key.caller,
            "origin": {"protocol": NAME},
        }
        said = within_level(options, FIELDS, key.trust, self.service.policy)
        if data.get("compile_memory_limit") not in (None, -1):
            limits = self.service.policy.settings(key.trust).limits
            said.append(
                "compile_memory_limit is not applied: a build gets its level's compile_memory_mb "
                f"({limits.compile_memory_mb} MB)"
            )
        return _Asked(language, selector, code, options, said)


@functools.cache
def languages_by_name() -> Mapping[str, Language]:
    """Each language with Piston names, by the first (the one its runtimes list shows)."""
    return MappingProxyType(
        {lang.names[NAME][0]: lang for lang in LANGUAGES.values() if NAME in lang.names}
    )


def _check_version(asked: _Asked, version: str) -> None:
    """A selector naming another major version than hazmat's is Piston's unknown runtime; `*`,
    a matching one, or a range it does not read, runs on the version there is (the answer
    says which)."""
    match = _MAJOR.fullmatch(asked.selector.strip())
    if match is not None and match.group(1) != version.split(".")[0]:
        name = asked.language.names[NAME][0]
        raise InputError(
            f"{name}-{asked.selector} runtime is unknown (hazmat has {name} {version})"
        )


def answer(
    result: ExecutionResult, language: Language, version: str, said: list[str]
) -> dict[str, Any]:
    """Piston's answer: `run` (and `compile` for a language with a build step; `run` repeats
    it when the build failed, as Piston does)."""
    run = _run_stage(result, said)
    body: dict[str, Any] = {"language": language.names[NAME][0], "version": version, "run": run}
    if language.build:
        body["compile"] = _compile_stage(result)
        if result.outcome in (Outcome.COMPILE_ERROR, Outcome.COMPILE_TIMEOUT):
            body["run"] = body["compile"]
    return body


def _stage(
    stdout: str, stderr: str, code: int | None, status: str | None, message: str | None
) -> dict[str, Any]:
    return {
        "stdout": stdout,
        "stderr": stderr,
        "output": stdout + stderr,
        "code": code,
        "signal": "SIGKILL" if code is None and status in ("TO", "SG", "OL") else None,
        "message": message,
        "status": status,
    }


# hazmat's verdicts in Piston's (isolate's) status words
_STATUS = {
    Outcome.TIMEOUT: "TO",
    Outcome.MEMORY_LIMIT: "SG",
    Outcome.PIDS_LIMIT: "SG",
    Outcome.OUTPUT_LIMIT: "OL",
}


def _run_stage(result: ExecutionResult, said: list[str]) -> dict[str, Any]:
    outcome = result.outcome
    if outcome is Outcome.OK:
        code, status, message = 0, None, None
    elif outcome in _STATUS:
        code, status, message = None, _STATUS[outcome], result.error
    elif outcome is Outcome.BLOCKED:
        code, status, message = Outcome.BLOCKED.exit_status, "RE", result.error
    else:
        code, status = result.exit_code, "RE"
        message = result.error or f"Exited with error status {result.exit_code}"
    message = "; ".join(m for m in (message, *said) if m) or None
    stage = _stage(result.stdout, result.stderr, code, status, message)
    stage["cpu_time"] = None if result.cpu_time_ms is None else round(result.cpu_time_ms)
    stage["wall_time"] = None if result.program_ms is None else round(result.program_ms)
    stage["memory"] = result.peak_memory_bytes
    return stage


def _compile_stage(result: ExecutionResult) -> dict[str, Any]:
    wall = None if result.compile_ms is None else round(result.compile_ms)
    if result.outcome is Outcome.COMPILE_TIMEOUT:
        stage = _stage("", result.stderr, None, "TO", result.error)
    elif result.outcome is Outcome.COMPILE_ERROR:
        stage = _stage(result.stdout, result.stderr, result.exit_code or 1, "RE", result.error)
    else:
        stage = _stage("", "", 0, None, None)
    stage.update(cpu_time=None, wall_time=wall, memory=None)
    return stage


def _language(name: object) -> Language:
    if not isinstance(name, str) or not name:
        raise InputError("language is required as a string")
    found = languages_of(NAME).get(name.lower())
    if found is None:
        known = ", ".join(sorted(languages_by_name()))
        raise InputError(f"{name} runtime is unknown (hazmat runs: {known})")
    return found


def _files(value: object) -> tuple[str, dict[str, bytes]]:
    """The program (the first utf8 file, as Piston runs it) and the files beside it."""
    if not isinstance(value, list):
        raise InputError("files is required as an array")
    for i, item in enumerate(value):
        if not isinstance(item, dict) or not isinstance(item.get("content"), str):
            raise InputError(f"files[{i}].content is required as a string")
    encodings = [item.get("encoding") or "utf8" for item in value]  # none given: utf8
    first = next((i for i, encoding in enumerate(encodings) if encoding == "utf8"), None)
    if first is None:
        raise InputError("files must include at least one utf8 encoded file")
    files = {}
    for i, item in enumerate(value):
        name = item.get("name")
        if i == first:
            continue
        if not isinstance(name, str) or not name:
            raise InputError(f"files[{i}].name is required for a file beside the program")
        files[name] = _decoded(item["content"], encodings[i], i)
    return value[first]["content"], files


def _decoded(content: str, encoding: object, i: int) -> bytes:
    try:
        if encoding == "utf8":
            return content.encode()
        if encoding == "base64":
            return base64.b64decode(content, validate=True)
        if encoding == "hex":
            return bytes.fromhex(content)
    except (binascii.Error, ValueError) as exc:
        raise InputError(f"files[{i}].content is not {encoding} ({exc})") from None
    raise InputError(f"files[{i}].encoding must be utf8, base64 or hex, not {encoding!r}")


def _ms(data: Mapping[str, Any], name: str) -> float | None:
    """A time field in milliseconds; None (or 0, as Piston reads it) when not given."""
    value = data.get(name)
    if value is None or value == 0:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InputError(f"If specified, {name} must be a number")
    if value < 0:
        raise InputError(f"{name} must be non-negative")
    return float(value)


def _memory_mb(value: object) -> int | None:
    """`run_memory_limit` in bytes, as whole MiB (up); -1, 0 or none: the level's."""
    try:
        return whole_mib(value, 1, level=(-1, 0))
    except ValueError:
        said = f"If specified, run_memory_limit must be a number, not {value!r}"
        raise InputError(said) from None


def _text(value: object, name: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise InputError(f"{name} must be a string")
    return value


def _args(value: object) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(a, str) for a in value):
        raise InputError("args must be an array of strings")
    return value
