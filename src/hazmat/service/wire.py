"""The one codec for runs on the wire: a request as the HTTP API's JSON body, a result as its
JSON answer (docs/api.md). The service (server/), the remote client (cli/remote.py), MCP and the
cluster's queue (service -> worker -> service) all speak it, and a result always decodes back to
an `ExecutionResult`.

    body = options_to_wire("print(1)", "python", {"stdin": b"\\xff"})   # {"stdin_base64": ...}
    code, language, options = options_from_wire(body)                   # Sandbox.run's args
    answer = result_to_wire(result, exact=True)                         # + stdout_base64 ...
    assert result_from_wire(answer) == result

Bytes travel as base64 under a `_base64` name (`stdin_base64`, `files_base64`, and in a result
`stdout_base64`/`stderr_base64` when asked for exactly); text may come as text. A malformed
body is an `InputError` naming the field, never a crash.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

from hazmat._exceptions import HazmatError, InfraError, InputError, quoted
from hazmat.displays import bundle_from_json
from hazmat.models import (
    Assessment,
    ExecutionRequest,
    ExecutionResult,
    Finding,
    Outcome,
    ProgramException,
    RiskLevel,
    Severity,
)
from hazmat.options import Use, body_fields, from_request, plain
from hazmat.options import options as options_table  # `options` names a body's options here
from hazmat.policy import Clock, Limits, Runtime, TrustLevel

__all__ = [
    "INTERNAL_FIELDS",
    "RUN_FIELDS",
    "WIRE_VERSION",
    "assessment_from_wire",
    "check_fields",
    "options_from_wire",
    "options_to_wire",
    "request_from_wire",
    "request_to_wire",
    "result_from_wire",
    "result_to_wire",
    "wire_fields",
]


def wire_fields(use: Use) -> dict[str, str | None]:
    """The body's fields of the options set in `use` (options/) -> the option each is
    (None: a `_base64` field, decoded here into its option)."""
    return {
        field: None if field == f"{name}_base64" else name
        for field, name in body_fields(use).items()
    }


# the API body's fields -> `Sandbox.run`'s option names (None: decoded here)
RUN_FIELDS: Mapping[str, str | None] = {"code": None, "language": None, **wire_fields(Use.RUN)}
# what only hazmat's own processes send each other (the cluster's queue), never a client:
# who asked (the service sets it from the key), where the run came from, and the codec's version
INTERNAL_FIELDS: Mapping[str, str | None] = {**wire_fields(Use.INTERNAL), "wire": None}
# the version of `request_to_wire`'s message: a worker refuses another (a service and its
# workers run the same hazmat; docs/scale.md)
WIRE_VERSION = 1
_LIMITS = frozenset(f.name for f in dataclasses.fields(Limits))


def options_to_wire(
    code: str | bytes, language: str, options_given: Mapping[str, Any]
) -> dict[str, Any]:
    """`Sandbox.run`'s arguments as an API body (bytes as base64); options left unset (None,
    empty) are left out."""
    if isinstance(code, bytes):
        try:
            code = code.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(f"code is not valid UTF-8 (byte {exc.start}: {exc.reason})") from None
    body: dict[str, Any] = {"code": code, "language": language}
    table = options_table()
    for name, value in options_given.items():
        opt = table.get(name)
        if opt is None:
            raise InputError(f"option {name!r} has no field in the API")
        if value is None or (not opt.keep_empty and value in ({}, [], (), b"")):
            continue
        if opt.binary:  # bytes go as base64, whatever they hold
            body[f"{name}_base64"] = _encoded(value)
        else:
            body[name] = plain(value)
    return body


def _encoded(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {n: _b64(_bytes(d)) for n, d in value.items()}
    return _b64(_bytes(value))


def options_from_wire(
    data: Mapping[str, Any], fields: Mapping[str, str | None] = RUN_FIELDS
) -> tuple[Any, str, dict[str, Any]]:
    """An API body as `Sandbox.run`'s (code, language, options): unknown fields refused, bytes
    decoded. The options are checked by the sandbox's intake, as any caller's are."""
    language = check_fields(data, list(fields))
    options: dict[str, Any] = {}
    set_by: dict[str, str] = {}
    for name, value in data.items():
        option = fields[name]
        if option is None:
            continue
        if option in set_by:  # under its name and its former one
            one, other = sorted((set_by[option], name))
            raise InputError(f"fields {quoted(one)} and {quoted(other)} set one option: give one")
        options[option], set_by[option] = value, name
    for name, opt in options_table().items():
        if opt.binary and f"{name}_base64" in data:
            options[name] = _decoded(data, name, opt.schema.get("type") == "object")
    return data["code"], language, options


def _decoded(data: Mapping[str, Any], name: str, files: bool) -> Any:
    """A binary option sent as `<name>_base64`: bytes, or for files a mapping of name ->
    bytes, together with those sent as text under `<name>`."""
    field = f"{name}_base64"
    if not files:
        if name in data:
            raise InputError(f"give {name!r} or {field!r}, not both")
        return _unb64(data[field], field)
    text = data.get(name) or {}
    if not isinstance(text, Mapping):
        raise InputError(f"field {name!r} must be an object of file name -> text")
    return {**text, **_files(data[field], field)}


def check_fields(data: Mapping[str, Any], fields: Sequence[str]) -> str:
    """No unknown field, a `code`; returns the language (python by default)."""
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise InputError(f"unknown field {quoted(unknown[0])} (fields: {', '.join(fields)})")
    if "code" not in data:
        raise InputError("the field 'code' is required")
    language = data.get("language", "python")
    if not isinstance(language, str):
        raise InputError(f"field 'language' must be a string, not {type(language).__name__}")
    return language


def request_to_wire(request: ExecutionRequest) -> dict[str, Any]:
    """A request built and checked by one process, for another (the cluster's queue)."""
    body = options_to_wire(request.code, request.language, from_request(request))
    body["wire"] = WIRE_VERSION
    return body


def request_from_wire(data: Mapping[str, Any]) -> tuple[Any, str, dict[str, Any]]:
    """`request_to_wire`'s body as (code, language, options), the internal fields included;
    a message of another codec version is an `InputError` saying so."""
    version = data.get("wire") if isinstance(data, Mapping) else None
    if version != WIRE_VERSION:
        raise InputError(
            f"a run message of wire version {quoted(version)}; this hazmat reads version "
            f"{WIRE_VERSION}: run the same hazmat version on the service and its workers"
        )
    return options_from_wire(data, {**RUN_FIELDS, **INTERNAL_FIELDS})


def result_to_wire(result: ExecutionResult, exact: bool = False) -> dict[str, Any]:
    """A run's JSON answer; with `exact`, the output's bytes too, as base64."""
    body = result.to_dict()
    if exact:
        body["stdout_base64"] = _b64(result.stdout_bytes)
        body["stderr_base64"] = _b64(result.stderr_bytes)
    return body


def result_from_wire(data: Mapping[str, Any]) -> ExecutionResult:
    """`result_to_wire`'s answer back as the result (the output exactly, when it was sent with
    `exact`; else as the text's UTF-8). Fields this version does not know are left out (an
    answer from a newer hazmat); one it cannot read is an `InfraError`: the other side, a
    service or a worker, answered something this hazmat cannot take."""
    try:
        stdout, stderr = str(data["stdout"]), str(data["stderr"])
        return ExecutionResult(
            outcome=Outcome(data["outcome"]),
            exit_code=data["exit_code"],
            stdout=stdout,
            stderr=stderr,
            truncated=bool(data["truncated"]),
            duration_ms=float(data["duration_ms"]),
            limits=Limits(**{k: v for k, v in dict(data["limits"]).items() if k in _LIMITS}),
            runtime=Runtime(data["runtime"]),
            image=str(data["image"]),
            language=str(data["language"]),
            trust=TrustLevel(data["trust"]),
            container_id=data.get("container_id"),
            files=_files(data.get("files") or {}, "files"),
            error=data.get("error"),
            notes=tuple(data.get("notes") or ()),
            stdout_bytes=_exact(data, "stdout_base64", stdout),
            stderr_bytes=_exact(data, "stderr_base64", stderr),
            assessment=_assessment(data.get("assessment")),
            decision=data.get("decision"),
            override_reason=data.get("override_reason"),
            peak_memory_bytes=data.get("peak_memory_bytes"),
            cpu_time_ms=data.get("cpu_time_ms"),
            pooled=data.get("pooled"),
            settings_mismatch=tuple(data.get("settings_mismatch") or ()),
            compile_ms=data.get("compile_ms"),
            clock=Clock(data.get("clock") or "wall"),
            program_ms=data.get("program_ms"),
            runtime_reason=data.get("runtime_reason"),
            tier=data.get("tier"),
            exception=_exception(data.get("exception")),
            build_flags=tuple(str(f) for f in data.get("build_flags") or ()),
            run_id=None if data.get("run_id") is None else str(data["run_id"]),
            stopped_by=data.get("stopped_by"),
            connections=tuple(dict(c) for c in data.get("connections") or ()),
            displays=tuple(
                MappingProxyType(bundle_from_json(d, f"displays[{i}]"))
                for i, d in enumerate(data.get("displays") or ())
            ),
            result_display=None if data.get("result_display") is None else int(
                data["result_display"]
            ),
        )
    except (KeyError, TypeError, ValueError, HazmatError) as exc:
        raise InfraError(f"malformed result: {type(exc).__name__}: {exc}") from None


def _exception(data: object) -> ProgramException | None:
    if data is None:
        return None
    if not isinstance(data, Mapping):
        raise ValueError("exception: expected an object")
    return ProgramException(str(data["name"]), str(data["value"]), str(data["traceback"]))


def assessment_from_wire(data: Mapping[str, Any]) -> Assessment:
    """An `Assessment` from its JSON (`Assessment.to_dict`, `/v1/assess`)."""
    try:
        found = _assessment(data)
    except (KeyError, TypeError, ValueError) as exc:
        raise InfraError(f"malformed assessment: {type(exc).__name__}: {exc}") from None
    if found is None:
        raise InfraError("malformed assessment: none given")
    return found


def _assessment(data: Mapping[str, Any] | None) -> Assessment | None:
    if data is None:
        return None
    return Assessment(
        level=RiskLevel(data["level"]),
        # a service of before the rename sends only `score`
        risk_score=int(data["risk_score"] if "risk_score" in data else data["score"]),
        complete=bool(data["complete"]),
        findings=tuple(_finding(f) for f in data["findings"]),
        duration_ms=float(data["duration_ms"]),
        language=str(data["language"]),
        analyzers=tuple(data.get("analyzers") or ()),
        problems=tuple(data.get("problems") or ()),
        syntax_error=data.get("syntax_error"),
    )


def _finding(data: Mapping[str, Any]) -> Finding:
    return Finding(
        rule=str(data["rule"]),
        source=str(data["source"]),
        severity=Severity(data["severity"]),
        message=str(data["message"]),
        line=int(data.get("line") or 0),
        column=int(data.get("column") or 0),
        cwe=data.get("cwe"),
    )


def _exact(data: Mapping[str, Any], name: str, text: str) -> bytes:
    if name in data:
        return _unb64(data[name], name)
    return text.encode("utf-8")


def _bytes(value: str | bytes) -> bytes:
    return value if isinstance(value, bytes) else value.encode("utf-8")


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(value: object, name: str) -> bytes:
    if not isinstance(value, str):
        raise InputError(
            f"field {quoted(name)} must be a base64 string, not {type(value).__name__}"
        )
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise InputError(f"field {quoted(name)} is not valid base64") from None


def _files(value: object, name: str = "files_base64") -> dict[str, bytes]:
    if not isinstance(value, Mapping):
        raise InputError(f"field {name!r} must be an object of file name -> base64")
    return {str(n): _unb64(data, f"{name}.{n}") for n, data in value.items()}
