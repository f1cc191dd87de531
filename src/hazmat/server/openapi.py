"""The service's OpenAPI document, served at /v1/openapi.json and committed as docs/openapi.json
(a test checks the two are the same)."""

from __future__ import annotations

import dataclasses
from typing import Any

from hazmat.languages import LANGUAGES
from hazmat.models import Outcome
from hazmat.options import Use, json_properties
from hazmat.policy import Limits
from hazmat.server.openapi_batches import BATCH_PATHS, BATCH_SCHEMAS
from hazmat.server.openapi_sessions import (
    CONNECTION,
    DISPLAYS,
    OUTPUT_PARAMETER,
    SESSION_PATHS,
    SESSION_SCHEMAS,
    run_answer,
)

__all__ = ["OPENAPI"]

_STR = {"type": "string"}
_STRINGS = {"type": "array", "items": _STR}
_STR_MAP = {"type": "object", "additionalProperties": _STR}
_TRUST = {"type": "string", "enum": ["untrusted", "unknown", "trusted"]}
_NULLABLE_NUMBER = {"type": ["number", "null"]}


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _json(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


_ERRORS = {
    "400": _json(_ref("Error"), "The request is wrong (the message says how)"),
    "401": _json(_ref("Error"), "No API key, or one the service does not know or revoked"),
    "403": _json(_ref("Error"), "The key may not ask for this (trust, runtime, override)"),
    "408": _json(_ref("Error"), "The body did not arrive within the service's body timeout"),
    "413": _json(_ref("Error"), "The body, the code or a file is over its cap"),
    "429": _json(_ref("Error"), "Over the tenant's quota; see the Retry-After header"),
    "503": _json(_ref("Error"), "The engine, the audit log or the sandbox is unavailable"),
}

_RUN_REQUEST = {
    "type": "object",
    "additionalProperties": False,
    "required": ["code"],
    "properties": {
        "code": {"type": "string", "description": "the program's source, UTF-8"},
        "language": {
            "type": "string",
            "default": "python",
            "description": "one of " + ", ".join(sorted(LANGUAGES)) + " (or an alias)",
        },
        **json_properties(Use.RUN),
    },
}

_RUN_RESULT = {
    "type": "object",
    "required": ["outcome", "exit_code", "stdout", "stderr", "duration_ms", "language"],
    "properties": {
        "outcome": {
            "type": "string",
            "enum": [outcome.value for outcome in Outcome],
        },
        "exit_code": {"type": ["integer", "null"]},
        "stdout": _STR,
        "stderr": _STR,
        "truncated": {"type": "boolean"},
        "duration_ms": {"type": "number"},
        "clock": {
            "type": "string",
            "enum": ["wall", "cpu"],
            "description": "what limits.timeout_s measured; on the cpu clock cpu_time_ms is "
            "the program's own CPU time",
        },
        "program_ms": {
            "type": ["number", "null"],
            "description": "the program's own wall-clock time, after any build",
        },
        "limits": {
            "type": "object",
            "description": "the limits the run really had (docs/policy.md, Limits)",
            "properties": {f.name: {"type": "number"} for f in dataclasses.fields(Limits)},
        },
        "runtime": _STR,
        "runtime_reason": {
            "type": ["string", "null"],
            "description": "why runtime is stronger than the level or the caller asked: the "
            "assessment picked it (the policy's assess.runtime_for)",
        },
        "tier": {
            "type": ["string", "null"],
            "enum": ["docker", "oci", None],
            "description": "what made the sandbox: docker (the engine) or oci (runc and runsc "
            "directly); null when nothing was started",
        },
        "image": _STR,
        "build_flags": {**_STRINGS, "description": "the compiler flags the build was given"},
        "run_id": {
            "type": ["string", "null"],
            "description": "the audit log's id of the run: its run.* records carry it as `run`",
        },
        "stopped_by": {
            "type": ["string", "null"],
            "enum": ["cpu", "idle", None],
            "description": "what ended a run on the cpu clock that timed out: cpu (its CPU-time "
            "limit) or idle (the wall-clock backstop of a program that sleeps or waits: a "
            "grader's idleness_limit); null for any other run",
        },
        "language": _STR,
        "trust": _TRUST,
        "container_id": {"type": ["string", "null"]},
        "files": {**_STR_MAP, "description": "output files, name -> base64"},
        "error": {
            "type": ["string", "null"],
            "description": "one sentence saying what happened, for every outcome but ok",
        },
        "exception": {
            "type": ["object", "null"],
            "description": "the exception a Python or JavaScript/TypeScript program ended "
            "with, read from its stderr: name, value, and the traceback of its own frames",
            "required": ["name", "value", "traceback"],
            "properties": {"name": _STR, "value": _STR, "traceback": _STR},
        },
        "notes": _STRINGS,
        "assessment": {"type": ["object", "null"]},
        "decision": {"type": ["string", "null"]},
        "override_reason": {"type": ["string", "null"]},
        "peak_memory_bytes": {"type": ["integer", "null"]},
        "cpu_time_ms": _NULLABLE_NUMBER,
        "pooled": {"type": ["boolean", "null"]},
        "settings_mismatch": _STRINGS,
        "compile_ms": _NULLABLE_NUMBER,
        "connections": {
            "type": "array",
            "description": "every connection the program asked the allowlist proxy for",
            "items": CONNECTION,
        },
        "displays": DISPLAYS,
        "result_display": {
            "type": ["integer", "null"],
            "description": "which of displays (from 0) is the value of the code's last line, "
            "when final_value was result; null otherwise",
        },
    },
}

_ASSESS_REQUEST = {
    "type": "object",
    "additionalProperties": False,
    "required": ["code"],
    "properties": {
        "code": _STR,
        "language": {"type": "string", "default": "python"},
        "trust": _TRUST,
        "semgrep": {"type": "boolean", "default": False, "description": "also run Semgrep"},
    },
}

_ERROR = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["type", "message"],
            "properties": {"type": _STR, "message": _STR},
        }
    },
}

_AUTH: list[dict[str, list[str]]] = [{"bearer": []}]

OPENAPI: dict[str, Any] = {
    "openapi": "3.1.0",
    "info": {
        "title": "hazmat",
        "version": "1",
        "description": "Run untrusted code in hardened single-use containers (docs/api.md).",
    },
    "components": {
        "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        "schemas": {
            "RunRequest": _RUN_REQUEST,
            "RunResult": _RUN_RESULT,
            "AssessRequest": _ASSESS_REQUEST,
            "Error": _ERROR,
            **SESSION_SCHEMAS,
            **BATCH_SCHEMAS,
        },
    },
    "paths": {
        "/v1/runs": {
            "post": {
                "summary": "Run code: assess, decide, execute, verify, audit",
                "operationId": "createRun",
                "security": _AUTH,
                "parameters": [OUTPUT_PARAMETER],
                "requestBody": {
                    "required": True,
                    "content": {"application/json": {"schema": _ref("RunRequest")}},
                },
                "responses": {"200": run_answer("The run's result"), **_ERRORS},
            }
        },
        "/v1/assess": {
            "post": {
                "summary": "Assess code without running it",
                "operationId": "assess",
                "security": _AUTH,
                "requestBody": {
                    "required": True,
                    "content": {"application/json": {"schema": _ref("AssessRequest")}},
                },
                "responses": {
                    "200": _json({"type": "object"}, "The assessment and its decision"),
                    **_ERRORS,
                },
            }
        },
        **SESSION_PATHS,
        **BATCH_PATHS,
        "/v1/health": {
            "get": {
                "summary": "Whether the service answers (no key needed)",
                "operationId": "health",
                "security": [],
                "responses": {"200": _json({"type": "object"}, "status and version")},
            }
        },
        "/metrics": {
            "get": {
                "summary": "Prometheus metrics",
                "operationId": "metrics",
                "security": _AUTH,
                "responses": {
                    "200": {
                        "description": "Prometheus text format",
                        "content": {"text/plain": {"schema": _STR}},
                    },
                    "401": _ERRORS["401"],
                },
            }
        },
    },
}


def _open_objects(node: Any) -> None:
    """Every object schema that names neither its properties nor what else it may hold says
    that it may hold anything (`additionalProperties: true`): a generated client types it as
    any object (openapi-typescript's `{[key: string]: unknown}`), not as one with no keys."""
    if isinstance(node, dict):
        kind = node.get("type")
        is_object = kind == "object" or (isinstance(kind, list) and "object" in kind)
        if is_object and not {"properties", "additionalProperties", "$ref"} & set(node):
            node["additionalProperties"] = True
        for value in node.values():
            _open_objects(value)
    elif isinstance(node, list):
        for value in node:
            _open_objects(value)


_open_objects(OPENAPI)


if __name__ == "__main__":  # python -m hazmat.server.openapi > docs/openapi.json
    import json

    print(json.dumps(OPENAPI, indent=2))
