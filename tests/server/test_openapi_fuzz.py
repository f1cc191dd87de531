"""Schemathesis against the committed OpenAPI document and a live server: whatever the schema
lets a client send (and what it does not), the answer is never a 5xx, and its status, content
type and body are ones the document declares."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis import checks

from server_helpers import LiveServer

pytestmark = [pytest.mark.docker, pytest.mark.slow]

CONFORMANCE = [
    checks.not_a_server_error,
    checks.status_code_conformance,
    checks.content_type_conformance,
    checks.response_headers_conformance,
    checks.response_schema_conformance,
]


@schemathesis.serializer("application/x-ndjson")
def json_lines(ctx: schemathesis.SerializationContext, value: object) -> bytes:
    """A batch's tasks as JSON Lines: the document gives the body as a string (any string: the
    service must answer whatever arrives without a 5xx)."""
    return value.encode() if isinstance(value, str) else json.dumps(value).encode()


SCHEMA = schemathesis.openapi.from_dict(
    json.loads((Path(__file__).resolve().parents[2] / "docs" / "openapi.json").read_text())
)


@SCHEMA.parametrize()
@settings(
    max_examples=40,
    deadline=None,
    derandomize=True,  # the same cases every run: the suite stays deterministic
    database=None,
    suppress_health_check=list(HealthCheck),
)
def test_no_server_errors(case: schemathesis.Case, live_server: LiveServer) -> None:
    headers = {"Authorization": f"Bearer {live_server.keys['trusted']}"}
    response = case.call(base_url=live_server.url, headers=headers, timeout=120)
    assert response.status_code < 500, (case.body, response.text)
    # status, content type, headers and body as the document says (not whether a request the
    # schema allows is accepted: a ceiling or "stdin or stdin_base64" is no JSON Schema)
    case.validate_response(response, checks=CONFORMANCE)
