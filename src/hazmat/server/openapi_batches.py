"""The batch endpoints' part of the OpenAPI document (server/openapi.py merges it). A task is
the task line of docs/batch.md (grade/schema.py's TASK_SCHEMA), a result line its RESULT_SCHEMA."""

from __future__ import annotations

from typing import Any

from hazmat.grade.schema import RESULT_SCHEMA, TASK_SCHEMA

__all__ = ["BATCH_PATHS", "BATCH_SCHEMAS"]

_STR = {"type": "string"}
_AUTH: list[dict[str, list[str]]] = [{"bearer": []}]
_ID = {"name": "batch", "in": "path", "required": True, "schema": _STR}
_TRUST = {"type": "string", "enum": ["untrusted", "unknown", "trusted"]}
_JOBS = {"type": "integer", "minimum": 1, "description": "at most the key's concurrent runs"}
_LINES = "application/x-ndjson"


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _json(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _plain(schema: dict[str, Any]) -> dict[str, Any]:
    """A JSON Schema of grade/schema.py, without the keys that only a document's root has."""
    return {k: v for k, v in schema.items() if k not in ("$schema", "title")}


_ERROR = _ref("Error")
_ERRORS = {
    "400": _json(_ERROR, "The request is wrong (the message names the task or line)"),
    "401": _json(_ERROR, "No API key, or one the service does not know or revoked"),
    "403": _json(_ERROR, "The key may not ask for this (trust, runtime, override)"),
    "404": _json(_ERROR, "No batch of this tenant has that id"),
    "408": _json(_ERROR, "The body did not arrive within the service's body timeout"),
    "413": _json(_ERROR, "The body is over the key's cap"),
    "429": _json(_ERROR, "Over the tenant's quota or its most batches; see Retry-After"),
}

BATCH_SCHEMAS: dict[str, Any] = {
    "Task": _plain(TASK_SCHEMA),
    "TaskResult": _plain(RESULT_SCHEMA),
    "BatchRequest": {
        "type": "object",
        "additionalProperties": False,
        "required": ["tasks"],
        "properties": {
            "tasks": {"type": "array", "items": _ref("Task"), "minItems": 1},
            "jobs": _JOBS,
            "trust": _TRUST,
            "runtime": {"type": "string", "enum": ["runc", "runsc"]},
            "override_reason": _STR,
            "fresh": {
                "type": "boolean",
                "description": "every test case in a fresh container with a build of its own",
            },
        },
    },
    "Batch": {
        "type": "object",
        "required": ["id", "state", "total", "done", "running", "verdicts", "results"],
        "properties": {
            "id": _STR,
            "state": {"type": "string", "enum": ["running", "done", "cancelled"]},
            "total": {"type": "integer"},
            "done": {"type": "integer"},
            "waiting_for_core": {
                "type": ["integer", "null"],
                "description": "the service's measured programs waiting for a core now (its "
                "cores bound how many run at once, docs/batch.md); null where not known (a "
                "cluster's front)",
            },
            "running": {"type": "integer"},
            "verdicts": {"type": "object", "additionalProperties": {"type": "integer"}},
            "jobs": {"type": "integer"},
            "fresh": {"type": "boolean"},
            "created_at": {"type": "number"},
            "finished_at": {"type": ["number", "null"]},
            "results": {"type": "string", "description": "where its result lines stream"},
        },
    },
}

BATCH_PATHS: dict[str, Any] = {
    "/v1/batches": {
        "post": {
            "summary": "Grade tasks: each built once, its test cases run, verdicts out",
            "operationId": "createBatch",
            "security": _AUTH,
            "parameters": [
                {"name": "jobs", "in": "query", "required": False, "schema": _JOBS},
                {"name": "trust", "in": "query", "required": False, "schema": _TRUST},
                {"name": "fresh", "in": "query", "required": False, "schema": {"type": "boolean"}},
            ],
            "requestBody": {
                "required": True,
                "content": {
                    "application/json": {"schema": _ref("BatchRequest")},
                    _LINES: {
                        "schema": {
                            **_STR,
                            "description": "one task per line (options in the query)",
                        }
                    },
                },
            },
            "responses": {
                "202": _json(_ref("Batch"), "Accepted: every task checked; grading begun"),
                **_ERRORS,
            },
        },
        "get": {
            "summary": "The tenant's batches",
            "operationId": "listBatches",
            "security": _AUTH,
            "responses": {
                "200": _json(
                    {
                        "type": "object",
                        "properties": {"batches": {"type": "array", "items": _ref("Batch")}},
                    },
                    "{batches: [...]}",
                ),
                **_ERRORS,
            },
        },
    },
    "/v1/batches/{batch}": {
        "parameters": [_ID],
        "get": {
            "summary": "A batch's state and counts",
            "operationId": "getBatch",
            "security": _AUTH,
            "responses": {"200": _json(_ref("Batch"), "The batch"), **_ERRORS},
        },
        "delete": {
            "summary": "Cancel a batch: no task starts after; the running ones finish",
            "operationId": "cancelBatch",
            "security": _AUTH,
            "responses": {"200": _json(_ref("Batch"), "The batch"), **_ERRORS},
        },
    },
    "/v1/batches/{batch}/results": {
        "parameters": [_ID],
        "get": {
            "summary": "The batch's result lines, as JSON Lines, as its tasks finish",
            "operationId": "batchResults",
            "security": _AUTH,
            "parameters": [
                {
                    "name": "wait",
                    "in": "query",
                    "required": False,
                    "description": "false: only the lines there now (default: until it ends)",
                    "schema": {"type": "string", "enum": ["true", "false"]},
                }
            ],
            "responses": {
                "200": {
                    "description": "One TaskResult per line, in the order they finished",
                    "content": {_LINES: {"schema": _STR}},
                },
                **_ERRORS,
            },
        },
    },
}
