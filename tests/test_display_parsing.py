"""The host's reading of a run's displays (displays.py): only known types, each checked, within
the policy's count and bytes, with notes on what was cut; any bytes give a result; the JSON form
round-trips; the CLI's files and the audit log's digests."""

from __future__ import annotations

import base64
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hazmat._exceptions import InputError
from hazmat.displays import (
    bundle_from_json,
    bundle_to_json,
    display_cap,
    display_files,
    parse_displays,
)

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 20


def _file(*bundles: object) -> bytes:
    return b"".join(json.dumps(b).encode() + b"\n" for b in bundles)


def test_known_types_come_back_decoded_in_order() -> None:
    blob = _file(
        {"image/png": base64.b64encode(PNG).decode(), "text/plain": "<Figure>"},
        {"text/html": "<table></table>", "application/json": '{"a": 1}'},
    )
    displays, notes, _ = parse_displays(blob, 16, 10_000)
    assert displays == (
        {"image/png": PNG, "text/plain": "<Figure>"},
        {"text/html": "<table></table>", "application/json": '{"a": 1}'},
    )
    assert notes == []


@pytest.mark.parametrize(
    "bundle",
    [
        {"image/png": base64.b64encode(b"GIF89a....").decode()},  # not a PNG
        {"image/jpeg": base64.b64encode(PNG).decode()},
        {"application/pdf": "not base64!"},
        {"application/json": "{not json"},
        {"text/x-unknown": "hi"},
        {"text/plain": 3},
        {"text/plain": "\ud800"},  # a lone surrogate: not UTF-8
        ["text/plain", "x"],
        "text",
        {"hazmat/dropped": "elsewhere"},
    ],
)
def test_data_not_of_its_type_is_no_display(bundle: object) -> None:
    displays, notes, _ = parse_displays(_file(bundle), 16, 10_000)
    assert displays == ()
    assert notes == [
        "1 display dropped: not a display hazmat can check (unknown types, or data not of its type)"
    ]


def test_a_bad_part_is_left_out_of_a_display_that_keeps_the_rest() -> None:
    blob = _file({"image/png": base64.b64encode(b"nope").decode(), "text/plain": "kept"})
    displays, notes, _ = parse_displays(blob, 16, 10_000)
    assert displays == ({"text/plain": "kept"},)
    assert notes[0].startswith("1 part(s) of displays left out")


def test_the_count_and_the_bytes_are_the_hosts_whatever_the_runner_says() -> None:
    blob = _file(
        {"text/plain": "a" * 60},
        {"text/plain": "b" * 60},  # past 100 bytes together
        {"text/plain": "c"},
        {"text/plain": "d"},  # past 2 displays
        {"hazmat/dropped": "count"},  # the runner's own word on one more
        {"hazmat/dropped": "bytes"},
    )
    displays, notes, _ = parse_displays(blob, 2, 100)
    assert displays == ({"text/plain": "a" * 60}, {"text/plain": "c"})
    assert notes == [
        "2 displays dropped: more than max_displays (2)",
        "2 displays dropped: together over max_display_bytes (100 bytes)",
    ]


def test_text_counts_in_utf8_bytes() -> None:
    displays, _, _ = parse_displays(_file({"text/plain": "é" * 50}), 2, 99)
    assert displays == ()


def test_nothing_collected_is_no_display() -> None:
    assert parse_displays(None, 16, 100) == ((), [], None)
    assert parse_displays(b"", 16, 100) == ((), [], None)


@given(st.binary(max_size=2000))
def test_any_bytes_give_a_result(blob: bytes) -> None:
    displays, notes, _ = parse_displays(blob, 4, 1000)
    assert len(displays) <= 4 and all(isinstance(n, str) for n in notes)


def test_deep_json_is_refused_not_a_crash() -> None:
    displays, notes, _ = parse_displays(b"[" * 100_000 + b"\n", 4, 1000)
    assert displays == () and len(notes) == 1


def test_the_json_form_round_trips_and_says_what_is_wrong() -> None:
    bundle = {"image/png": PNG, "text/plain": "x", "image/svg+xml": "<svg/>"}
    wire = bundle_to_json(bundle)
    assert wire["image/png"] == base64.b64encode(PNG).decode()
    assert bundle_from_json(json.loads(json.dumps(wire))) == bundle
    with pytest.raises(InputError, match=r"displays\[0\]\['image/png'\] is not valid base64"):
        bundle_from_json({"image/png": "%%"}, "displays[0]")
    with pytest.raises(InputError, match="must be an object"):
        bundle_from_json([], "displays[0]")


def test_the_file_cap_holds_the_data_as_base64_and_its_json() -> None:
    assert display_cap(0, 100) == display_cap(16, 0) == 0
    data = b"\x00" * 3000
    line = _file({"image/png": base64.b64encode(PNG + data).decode(), "text/plain": "<F>"})
    assert len(line) <= display_cap(1, len(PNG + data) + 3)


def test_displays_as_files_are_numbered_with_their_types() -> None:
    files = display_files(
        [
            {"image/png": PNG, "text/plain": "<Figure>"},
            {"text/html": "<t>", "text/plain": "t"},
            {"text/plain": "é"},
        ]
    )
    assert files == {
        "display-1.png": PNG,  # a picture's plain text says nothing
        "display-2.html": b"<t>",
        "display-2.txt": b"t",
        "display-3.txt": "é".encode(),
    }


def test_the_last_lines_value_is_marked_as_the_result_and_unmarked() -> None:
    """`final_value: result`: the runner marks the value's display; the mark is not a type."""
    blob = _file(
        {"text/plain": "<Figure>", "image/png": base64.b64encode(PNG).decode()},
        {"text/plain": "42", "hazmat/result": True},
    )
    shown = parse_displays(blob, 16, 10_000)
    assert shown.displays[1] == {"text/plain": "42"} and shown.result == 1
    assert shown.notes == []
    assert parse_displays(blob, 1, 10_000).result is None  # its display was cut: no result
    forged = _file({"text/plain": "x", "hazmat/result": "yes"})  # only `true` marks one
    assert parse_displays(forged, 16, 10_000).result is None
