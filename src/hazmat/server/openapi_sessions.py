"""The session endpoints' part of the OpenAPI document (server/openapi.py merges it), and how a
run is answered (shared by `/v1/runs` and a session's `/runs`)."""

from __future__ import annotations

from typing import Any

from hazmat.options import Use, json_properties

# one connection through the allowlist proxy, as a result lists it (egress/proxy.py)
CONNECTION: dict[str, Any] = {
    "type": "object",
    "required": ["host", "port", "allowed", "reason"],
    "properties": {
        "host": {"type": "string", "description": "as the program asked it"},
        "port": {"type": ["integer", "null"]},
        "allowed": {"type": "boolean"},
        "reason": {"type": "string", "description": "why it was refused; empty if allowed"},
        "address": {"type": ["string", "null"], "description": "the address connected to"},
        "sent": {"type": "integer", "description": "bytes the program sent upstream"},
        "received": {"type": "integer", "description": "bytes it received"},
        "duration_ms": {"type": "number"},
        "secret": {
            "type": "string",
            "description": "the name of the policy's secret the proxy added (never its value)",
        },
    },
}

__all__ = [
    "DISPLAYS",
    "OUTPUT_PARAMETER",
    "SESSION_PATHS",
    "SESSION_SCHEMAS",
    "run_answer",
]

_STR = {"type": "string"}
_STR_MAP = {"type": "object", "additionalProperties": _STR}
# a Python run's displays (hazmat/displays.py), shared with the run's own schema
DISPLAYS = {
    "type": "array",
    "description": "what a Python program showed, in order: each a MIME type -> data object "
    "(image/png, image/svg+xml, text/html, text/plain, ...); binary types as base64",
    "items": _STR_MAP,
}
_AUTH: list[dict[str, list[str]]] = [{"bearer": []}]
_ID = {"name": "session", "in": "path", "required": True, "schema": _STR}


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _json(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _body(schema: dict[str, Any]) -> dict[str, Any]:
    return {"required": True, "content": {"application/json": {"schema": schema}}}


def run_answer(description: str) -> dict[str, Any]:
    """A run's 200: one JSON result, or server-sent events when the client accepts them."""
    return {
        "description": f"{description}; with Accept: text/event-stream, server-sent events",
        "content": {
            "application/json": {"schema": _ref("RunResult")},
            "text/event-stream": {
                "schema": {
                    **_STR,
                    "description": "events 'stdout' and 'stderr' ({text} or {base64}) while "
                    "the run goes, then one 'display' ({index, data}) per display once it has "
                    "ended, then 'result' (the RunResult) or 'error' ({error, status})",
                }
            },
        },
    }


OUTPUT_PARAMETER = {
    "name": "output",
    "in": "query",
    "required": False,
    "description": "base64: the output exactly as written, as base64, too",
    "schema": {"type": "string", "enum": ["base64"]},
}

_ERROR = _ref("Error")
_ERRORS = {
    "400": _json(_ERROR, "The request is wrong (the message says how)"),
    "401": _json(_ERROR, "No API key, or one the service does not know or revoked"),
    "403": _json(_ERROR, "The key may not ask for this (trust, runtime, override)"),
    "404": _json(_ERROR, "No open session of this tenant has that id"),
    "410": _json(_ERROR, "The session has ended (closed, expired, a call would not stop)"),
    "408": _json(_ERROR, "The body did not arrive within the service's body timeout"),
    "413": _json(_ERROR, "The body, the code or a file is over its cap"),
    "429": _json(
        _ERROR, "Over the tenant's quota or its most sessions; see the Retry-After header"
    ),
    "503": _json(_ERROR, "The engine, the audit log or the sandbox is unavailable"),
}

SESSION_SCHEMAS: dict[str, Any] = {
    "SessionRequest": {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "language": {"type": "string", "default": "python"},
            **json_properties(Use.OPEN),
        },
    },
    "Session": {
        "type": "object",
        "required": ["id", "language", "trust", "expires_at"],
        "properties": {
            "id": _STR,
            "language": _STR,
            "trust": _STR,
            "runtime": _STR,
            "image": _STR,
            "opened_at": {"type": "number"},
            "expires_at": {"type": "number", "description": "Unix time, if not called again"},
            "calls": {"type": "integer"},
            "idle_s": {"type": "number"},
            "lifetime_s": {"type": "number"},
            "cpu_s": {"type": "number"},
            "state": {"type": "string", "description": "'paused' for a paused session"},
            "worker": {
                **_STR,
                "description": "the cluster worker the session lives on (hazmat serve --redis)",
            },
            "resumed": {
                "type": "object",
                "description": "a resumed session: {paused_at, archive_bytes, loaded, lost}",
            },
            "forked": {
                "type": "object",
                "description": "a fork: {from (the source's id), archive_bytes, loaded, lost}",
            },
        },
    },
    "ForkRequest": {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "n": {
                "type": "integer",
                "minimum": 1,
                "default": 1,
                "description": "how many new sessions, at most the policy's sessions.max_open",
            }
        },
    },
    "ForkedSessions": {
        "type": "object",
        "required": ["sessions"],
        "properties": {"sessions": {"type": "array", "items": _ref("Session")}},
    },
    "SessionRun": {
        "type": "object",
        "additionalProperties": False,
        "required": ["code"],
        "properties": {"code": _STR, **json_properties(Use.CALL)},
    },
    "PausedSession": {
        "type": "object",
        "required": ["id", "state", "paused_at", "expires_at", "variables"],
        "properties": {
            "id": _STR,
            "state": {"type": "string", "enum": ["paused"]},
            "language": _STR,
            "trust": _STR,
            "runtime": _STR,
            "image": {"type": ["string", "null"]},
            "paused_at": {"type": "number"},
            "expires_at": {"type": "number", "description": "Unix time it is removed, unresumed"},
            "archive_bytes": {"type": "integer"},
            "variables": {
                "type": "object",
                "description": "Python: {saved: [names], lost: {name: why}}",
            },
        },
    },
    "SessionFiles": {
        "type": "object",
        "additionalProperties": False,
        "properties": {"files": _STR_MAP, "files_base64": _STR_MAP},
    },
    "PackagesRequest": {
        "type": "object",
        "additionalProperties": False,
        "required": ["packages"],
        "properties": {
            "packages": {
                "type": "array",
                "minItems": 1,
                "items": _STR,
                "description": "requirements: a name and optionally a version (Python: "
                "'seaborn==0.13.2'; JavaScript, TypeScript: 'lodash@4.17.21'); no URLs, paths "
                "or options",
            }
        },
    },
    "Installed": {
        "type": "object",
        "required": ["session", "requested", "packages", "duration_ms", "connections", "note"],
        "properties": {
            "session": _STR,
            "requested": {"type": "array", "items": _STR},
            "packages": {
                "type": "array",
                "description": "each file installed, dependencies included",
                "items": {
                    "type": "object",
                    "required": ["name", "version", "file", "sha256", "bytes", "cached"],
                    "properties": {
                        "name": _STR,
                        "version": _STR,
                        "file": _STR,
                        "sha256": _STR,
                        "bytes": {"type": "integer"},
                        "cached": {
                            "type": "boolean",
                            "description": "from the service's cache, not the index",
                        },
                        "requested": {"type": "boolean"},
                        "path": {
                            "type": "string",
                            "description": "npm: its place in the working directory",
                        },
                    },
                },
            },
            "duration_ms": {"type": "number"},
            "connections": {
                "type": "array",
                "description": "what the download connected to, through the allowlist proxy",
                "items": CONNECTION,
            },
            "note": {"type": "string", "description": "one sentence on what to do next"},
        },
    },
}

SESSION_PATHS: dict[str, Any] = {
    "/v1/sessions": {
        "post": {
            "summary": "Open a session: a container kept between calls",
            "operationId": "openSession",
            "security": _AUTH,
            "requestBody": _body(_ref("SessionRequest")),
            "responses": {"201": _json(_ref("Session"), "The session"), **_ERRORS},
        },
        "get": {
            "summary": "The tenant's open sessions",
            "operationId": "listSessions",
            "security": _AUTH,
            "responses": {"200": _json({"type": "object"}, "{sessions: [...]}"), **_ERRORS},
        },
    },
    "/v1/sessions/{session}": {
        "parameters": [_ID],
        "get": {
            "summary": "One session, open or paused (a PausedSession)",
            "operationId": "getSession",
            "security": _AUTH,
            "responses": {"200": _json(_ref("Session"), "The session"), **_ERRORS},
        },
        "delete": {
            "summary": "Close a session and remove its container",
            "operationId": "closeSession",
            "security": _AUTH,
            "responses": {"200": _json({"type": "object"}, "{id, ended}"), **_ERRORS},
        },
    },
    "/v1/sessions/{session}/runs": {
        "parameters": [_ID],
        "post": {
            "summary": "Run code in the session (the whole pipeline, recorded)",
            "operationId": "runInSession",
            "security": _AUTH,
            "parameters": [OUTPUT_PARAMETER],
            "requestBody": _body(_ref("SessionRun")),
            "responses": {"200": run_answer("The call's result"), **_ERRORS},
        },
    },
    "/v1/sessions/{session}/files": {
        "parameters": [_ID],
        "put": {
            "summary": "Write files into the session's working directory",
            "operationId": "uploadToSession",
            "security": _AUTH,
            "requestBody": _body(_ref("SessionFiles")),
            "responses": {"200": _json({"type": "object"}, "{uploaded: [...]}"), **_ERRORS},
        },
        "get": {
            "summary": "Read files from the session's working directory",
            "operationId": "downloadFromSession",
            "security": _AUTH,
            "parameters": [
                {
                    "name": "name",
                    "in": "query",
                    "required": True,
                    "schema": {"type": "array", "items": _STR},
                    "style": "form",
                    "explode": True,
                }
            ],
            "responses": {"200": _json({"type": "object"}, "{files_base64: {...}}"), **_ERRORS},
        },
    },
    "/v1/sessions/{session}/packages": {
        "parameters": [_ID],
        "post": {
            "summary": "Install packages into the session from the policy's index: pip's for "
            "Python, npm's for JavaScript and TypeScript (403 where the policy does not let it "
            "install: the message says why)",
            "operationId": "installPackages",
            "security": _AUTH,
            "requestBody": _body(_ref("PackagesRequest")),
            "responses": {
                "200": _json(_ref("Installed"), "What was installed"),
                "403": _json(_ERROR, "The policy does not let this session install these"),
                **_ERRORS,
            },
        },
    },
    "/v1/sessions/{session}/pause": {
        "parameters": [_ID],
        "post": {
            "summary": "Pause a session: its files (and Python's variables that can be saved) "
            "kept by the service, its container removed",
            "operationId": "pauseSession",
            "security": _AUTH,
            "responses": {"200": _json(_ref("PausedSession"), "What was kept"), **_ERRORS},
        },
    },
    "/v1/sessions/{session}/fork": {
        "parameters": [_ID],
        "post": {
            "summary": "Fork an open session into n new ones, each a new container with its "
            "files and (Python) the variables that can be saved, as they are now; the session "
            "goes on. Each counts as an open session of the tenant (429 past its cap)",
            "operationId": "forkSession",
            "security": _AUTH,
            "requestBody": {**_body(_ref("ForkRequest")), "required": False},
            "responses": {"201": _json(_ref("ForkedSessions"), "The new sessions"), **_ERRORS},
        },
    },
    "/v1/sessions/{session}/resume": {
        "parameters": [_ID],
        "post": {
            "summary": "Resume a paused session in a new container, with the same id",
            "operationId": "resumeSession",
            "security": _AUTH,
            "responses": {
                "201": _json(_ref("Session"), "The session, open again"),
                "409": _json(_ERROR, "Another resume of this session is under way"),
                **_ERRORS,
            },
        },
    },
}
