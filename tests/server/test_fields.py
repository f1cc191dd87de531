"""Request bodies: nesting is measured before decoding (no input reaches the decoder's
recursion limit), and a key's trust level bounds what a body may ask for (no engine)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hazmat import InputError
from hazmat.server.fields import MAX_DEPTH, check_depth, parse_body

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
        with pytest.raises(InputError, match="not UTF-8 JSON"):
            parse_body(deep.encode(encoding))


def test_an_unterminated_string_is_read_once() -> None:
    """A quote with nothing but escaped quotes after it: every string match ends at once (it
    was retried from each later quote: 80 KB took 12 s)."""
    body = b'"' + b'\\"' * 2_000_000 + b"[" * 64
    check_depth(body)  # the brackets are inside the string that never ends
    with pytest.raises(InputError, match="not valid JSON"):
        parse_body(body)
