"""Request bodies: nesting is measured before decoding (no input reaches the decoder's
recursion limit), each bad body is told what is wrong with it (not UTF-8, not JSON and where,
too deep), on every endpoint of the real app, and a long id in a path makes a short error
(no engine)."""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hazmat import InputError, Sandbox
from hazmat.server.fields import MAX_DEPTH, check_depth, parse_body
from hazmat.server.http import create_app
from hazmat.service.tenant_keys import KeyStore
from hazmat.testing import RecordingBackend

with warnings.catch_warnings():  # Starlette would have httpx2 for its test client; httpx works
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient

# JSON values whose strings are full of brackets, quotes and backslashes
LEAVES = st.none() | st.integers() | st.text(alphabet='[]{}"\\ab\n', max_size=6)
VALUES = st.recursive(
    LEAVES,
    lambda inner: (
        st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=3), inner, max_size=2)
    ),
    max_leaves=60,
)


def depth(value: Any) -> int:
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list):
        return 1 + max((depth(item) for item in value), default=0)
    return 0


def nested(levels: int, kinds: str = "[{") -> Any:
    value: Any = 1
    for level in range(levels):
        value = [value] if kinds[level % len(kinds)] == "[" else {"k": value}
    return value


@settings(max_examples=400, derandomize=True, database=None)
@given(VALUES, st.integers(0, 3 * MAX_DEPTH), st.sampled_from(["[", "{", "[{", "{[["]))
def test_the_depth_check_refuses_exactly_what_is_too_deep(
    value: Any, extra: int, kinds: str
) -> None:
    """Any JSON value, wrapped in `extra` levels of arrays and objects in any order."""
    wrapped = nested(extra, kinds)
    body = json.dumps(wrapped).replace("1", json.dumps(value), 1).encode()
    whole = json.loads(body)
    if depth(whole) > MAX_DEPTH:
        with pytest.raises(InputError, match=f"nested deeper than {MAX_DEPTH} levels"):
            check_depth(body)
    else:
        check_depth(body)
        assert json.loads(body) == whole


@pytest.mark.parametrize(
    "body",
    [
        b"[" * 100_000 + b"]" * 100_000,  # what used to reach the decoder's recursion limit
        b'{"code": ' + b"[" * 1_000_000,
        json.dumps({"code": "x", "files": nested(MAX_DEPTH)}).encode(),
        b"[}",
    ],
)
def test_deep_or_broken_bodies_are_a_clear_400(body: bytes) -> None:
    with pytest.raises(InputError) as refused:
        parse_body(body)
    assert refused.value.http_status == 400


def test_brackets_inside_strings_do_not_count() -> None:
    code = "x = " + "[" * 5000 + '"\\\\"\\"'
    assert parse_body(json.dumps({"code": code}).encode()) == {"code": code}


def test_utf16_or_utf32_bodies_are_refused_before_the_decoder_sees_them() -> None:
    """The decoder would take them, but their quotes are not bytes of '"': refused outright."""
    deep = '{"a": ' + "[" * 200 + "]" * 200 + ', "b": "\u2241"}'
    for encoding in ("utf-16-le", "utf-16", "utf-32"):
        with pytest.raises(InputError, match=r"not UTF-8|a NUL byte at byte 1 \(send UTF-8"):
            parse_body(deep.encode(encoding))


def test_an_unterminated_string_is_read_once() -> None:
    """A quote with nothing but escaped quotes after it: every string match ends at once (it
    was retried from each later quote: 80 KB took 12 s)."""
    body = b'"' + b'\\"' * 2_000_000 + b"[" * 64
    check_depth(body)  # the brackets are inside the string that never ends
    with pytest.raises(InputError, match="not JSON: Unterminated string"):
        parse_body(body)


@pytest.mark.parametrize(
    ("body", "said"),
    [
        # brackets that do not match: not JSON, where it breaks (it was "nested deeper")
        (
            b'{"code": "print(1)"',
            "is not JSON: Expecting ',' delimiter: line 1 column 20 (char 19)",
        ),
        (b'{"code": "x"}}', "is not JSON: Extra data: line 1 column 14 (char 13)"),
        (b"[}", "is not JSON: Expecting value: line 1 column 2 (char 1)"),
        (b"[" * 40 + b"1", "is not JSON: Expecting ',' delimiter: line 1 column 42 (char 41)"),
        (b"code=print(1)", "is not JSON: Expecting value: line 1 column 1 (char 0)"),
        (b"", "is not JSON: Expecting value: line 1 column 1 (char 0)"),
        (b'{"code": "\xff"}', "is not UTF-8 (byte 10: invalid start byte); send UTF-8 JSON"),
        (
            b'{"code": 1}\x00',
            "is not JSON: a NUL byte at byte 11 (send UTF-8, not UTF-16 or UTF-32)",
        ),
        # too deep: said so, whether the brackets match or not
        (b"[" * 33 + b"]" * 33, f"is nested deeper than {MAX_DEPTH} levels"),
        (b"[" * 100_000, f"is nested deeper than {MAX_DEPTH} levels"),
        (b"[" * 40 + b"]" * 39, f"is nested deeper than {MAX_DEPTH} levels"),
        (b"[1]", "must be a JSON object, not list"),
    ],
)
def test_each_bad_body_is_told_what_is_wrong_with_it(body: bytes, said: str) -> None:
    with pytest.raises(InputError) as refused:
        parse_body(body)
    assert str(refused.value) == f"the request body {said}"


@pytest.fixture
def client(tmp_path: Path) -> Iterator[tuple[TestClient, dict[str, str]]]:
    """The real app in process, on a backend that runs nothing (nothing here gets that far)."""
    store = KeyStore(tmp_path / "keys.json")
    headers = {"Authorization": f"Bearer {store.create('acme', 'untrusted')[1]}"}
    with (
        Sandbox(backend=RecordingBackend()) as sandbox,
        TestClient(create_app(sandbox, store)) as test_client,
    ):
        yield test_client, headers


@pytest.mark.parametrize("path", ["/v1/runs", "/v1/assess", "/v1/sessions", "/v1/batches"])
@pytest.mark.parametrize(
    ("body", "said"),
    [
        (
            b'{"code": "print(1)"',
            "is not JSON: Expecting ',' delimiter: line 1 column 20 (char 19)",
        ),
        (b'{"code": "\xff"}', "is not UTF-8 (byte 10: invalid start byte); send UTF-8 JSON"),
        (b"[" * 100_000, f"is nested deeper than {MAX_DEPTH} levels"),
    ],
)
def test_every_endpoint_answers_a_bad_body_with_a_400_that_says_what(
    client: tuple[TestClient, dict[str, str]], path: str, body: bytes, said: str
) -> None:
    test_client, headers = client
    answer = test_client.post(path, content=body, headers=headers)
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["message"] == f"the request body {said}"


def test_a_batch_line_that_is_not_json_names_its_line(
    client: tuple[TestClient, dict[str, str]],
) -> None:
    test_client, headers = client
    lines = {**headers, "Content-Type": "application/x-ndjson"}
    answer = test_client.post("/v1/batches", content=b'{"id": "a"}\n{"id": ', headers=lines)
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["message"] == (
        "line 2: the request body is not JSON: Expecting value: line 1 column 8 (char 7)"
    )


def test_mcp_bodies_whose_brackets_do_not_match_are_not_json(
    client: tuple[TestClient, dict[str, str]],
) -> None:
    test_client, headers = client
    answer = test_client.post("/mcp", content=b'{"jsonrpc": "2.0", "params": [', headers=headers)
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["message"].startswith("the request body is not JSON: ")


@pytest.mark.parametrize(
    ("method", "path", "status", "said"),
    [
        ("GET", "/v1/batches/", 404, "no batch "),
        ("DELETE", "/v1/batches/", 404, "no batch "),
        ("GET", "/v1/sessions/", 404, "no open session "),
        ("POST", "/v1/sessions/{}/resume", 404, "no paused session "),
    ],
)
def test_a_long_id_in_a_path_makes_a_short_error(
    client: tuple[TestClient, dict[str, str]], method: str, path: str, status: int, said: str
) -> None:
    test_client, headers = client
    long_id = "b" * 10_000
    where = path.format(long_id) if "{}" in path else path + long_id
    answer = test_client.request(method, where, headers=headers)
    assert answer.status_code == status, answer.text
    assert answer.json()["error"]["message"] == f"{said}'{'b' * 80}'... (10000 characters)"
