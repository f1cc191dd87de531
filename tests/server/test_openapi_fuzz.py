"""Schemathesis against the committed OpenAPI document and a live server: whatever the schema
lets a client send (and what it does not), the answer is never a 5xx, and its status, content
type and body are ones the document declares; the same with a lone surrogate (`"\\udc80"`:
valid JSON, no text) in every string of the body. (The console's fragments are not in the
document: test_no_server_errors.py fuzzes them with Hypothesis.)"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis import checks

from hazmat.json_input import surrogate_in
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
    if isinstance(value, str):  # a lone surrogate as the bytes it would be: not UTF-8
        return value.encode("utf-8", "surrogatepass")
    return json.dumps(value).encode()


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


def surrogated(value: Any) -> Any:
    """`value` with a lone surrogate after every string in it, names included."""
    if isinstance(value, str):
        return value + "\udc80"
    if isinstance(value, list):
        return [surrogated(v) for v in value]
    if isinstance(value, dict):
        return {surrogated(k): surrogated(v) for k, v in value.items()}
    return value


@SCHEMA.parametrize()
@settings(
    max_examples=10,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)
def test_lone_surrogates_in_any_string_of_a_body_are_no_server_error(
    case: schemathesis.Case, live_server: LiveServer
) -> None:
    """They were a 500 in a run's code, stdin, args, env and files, a 503 in its session, and
    a 500 in session calls, uploads and /v1/assess. Refused where the body is decoded, naming
    the field; a request refused before its body is read (a 404, a 401) stays so."""
    if not isinstance(case.body, dict | list | str):
        return  # no body for this operation (or an empty one): nothing to put one in
    headers = {"Authorization": f"Bearer {live_server.keys['trusted']}"}
    sent = case.as_transport_kwargs(base_url=live_server.url, headers=headers)
    body = surrogated(case.body)  # Schemathesis's own call would check it against the schema,
    for name in ("json", "data"):  # which cannot encode it: the request is sent here
        sent.pop(name, None)
    if isinstance(body, str):  # JSON Lines: the surrogate as the bytes it would be (not UTF-8)
        sent["data"] = body.encode("utf-8", "surrogatepass")
    else:
        sent["data"] = json.dumps(body).encode()  # ensure_ascii: as \udc80
    response = requests.request(**sent, timeout=120)
    assert response.status_code < 500, (body, response.text)
    if response.status_code == 400 and not isinstance(body, str) and surrogate_in(body):
        message = response.json()["error"]["message"]  # refused as it was decoded
        assert any(bound in message for bound in DECODER_BOUNDS), message


# what json_input.py refuses a body for, in the order it looks
DECODER_BOUNDS = ("not UTF-8", "nested deeper", "has a number", "lone surrogate")
