"""JSON from outside (json_input.py): what the decoder would take but nothing after it can is
an InputError naming where it is, whatever the value holds."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hazmat import ExecutionRequest, InputError, Sandbox, TrustLevel
from hazmat.audit.log import AuditLog
from hazmat.json_input import MAX_NUMBER_CHARS, loads
from hazmat.testing import RecordingBackend, invoke

SURROGATE = "\udc80"


@pytest.mark.parametrize(
    ("value", "where"),
    [
        ({"code": SURROGATE}, "field 'code'"),
        ({"code": "x", "args": ["a", "b" + SURROGATE]}, "field 'args'[1]"),
        ({"env": {"A": "\ud800x"}}, "field 'env'['A']"),
        ({"files": {"a.txt": SURROGATE}}, "field 'files'['a.txt']"),
        ({"files": {SURROGATE: "x"}}, "a name in field 'files'"),
        ({SURROGATE: 1}, "a field's name"),
        ([{"id": SURROGATE}], "field 0['id']"),
        (SURROGATE, "the value"),
    ],
)
def test_a_lone_surrogate_is_refused_naming_its_field(value: Any, where: str) -> None:
    body = json.dumps(value).encode()  # ensure_ascii: the surrogate is a \\udc80 escape
    with pytest.raises(InputError, match="holds a lone surrogate") as refused:
        loads(body, "the request body")
    assert str(refused.value).startswith(f"the request body: {where} holds a lone surrogate")


def test_a_pair_of_surrogates_is_text() -> None:
    assert loads(b'{"code": "\\ud83d\\ude00 \\\\udc80"}') == {"code": "\U0001f600 \\udc80"}


@pytest.mark.parametrize(
    "number",
    ["9" * 4301, "9" * (MAX_NUMBER_CHARS + 1), "-" + "9" * 100, "1." + "0" * 100, "1e" + "9" * 50],
)
def test_a_number_too_long_is_refused_before_int_or_float_reads_it(number: str) -> None:
    with pytest.raises(InputError, match=f"has a number .*at most {MAX_NUMBER_CHARS} characters"):
        loads(f'{{"timeout": {number}}}'.encode())


def test_numbers_of_ordinary_length_are_numbers() -> None:
    assert loads(b"[18446744073709551616, -1, 0.1, 1e300]") == [2**64, -1, 0.1, 1e300]


TEXT = st.text(st.characters(exclude_categories=()))  # lone surrogates included
VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(VALUES)
def test_any_json_value_is_a_value_or_an_input_error(value: Any) -> None:
    """Any text (lone surrogates included), any number, any nesting: a value, or an
    InputError that says which of the bounds it is past; never another error."""
    body = json.dumps(value).encode()
    try:
        loads(body)
    except InputError as exc:
        assert "lone surrogate" in str(exc) or "has a number" in str(exc), exc


TASK = (
    '{"id": "a", "language": "python", "code": "1", "tests": [{"stdin": "", "expected_stdout": ""}]'
)


@pytest.mark.parametrize(
    ("line", "said"),
    [
        # it was exit 70, internal error (UnicodeEncodeError)
        (TASK.replace('"code": "1"', '"code": "\\udc80"') + "}", "field 'code' holds a lone"),
        # it was exit 74, "cannot record grade.verdict" after the task ran
        (TASK.replace('"id": "a"', '"id": "\\udc80"') + "}", "field 'id' holds a lone"),
        # it was exit 70, internal error (OverflowError: int too large to convert to float)
        (TASK + ', "timeout": 1' + "0" * 400 + "}", "the line has a number"),
    ],
)
def test_a_batch_files_lines_are_decoded_within_the_same_bounds(
    tmp_path: Path, line: str, said: str
) -> None:
    """`hazmat batch` reads its task lines as the service reads a body: refused before
    anything runs, naming the line (exit 2)."""
    (tmp_path / "t.jsonl").write_text(line + "\n")
    out = invoke(["batch", str(tmp_path / "t.jsonl"), "-o", str(tmp_path / "o"), "--local"])
    assert out.exit_code == 2, out.stderr
    assert "t.jsonl:1: the line" in out.stderr and said in out.stderr


@pytest.mark.parametrize(
    ("options", "said"),
    [
        ({"code": SURROGATE}, "code holds a lone surrogate"),  # UnicodeEncodeError
        ({"stdin": SURROGATE}, "option 'stdin' holds a lone surrogate"),
        ({"script": SURROGATE}, "option 'script' holds"),  # AuditError: cannot record
        (
            {"caller": "a" + SURROGATE},
            "option 'caller' holds a lone surrogate (\\udc80 at character 1)",
        ),
        ({"env": {"A": SURROGATE}}, "env value of 'A' holds"),
        ({"args": ["x", SURROGATE]}, "args[1] holds"),
        ({"files": {"a.txt": SURROGATE}}, "file 'a.txt' holds"),
    ],
)
def test_the_python_api_refuses_a_lone_surrogate_as_the_service_does(
    tmp_path: Path, options: dict[str, Any], said: str
) -> None:
    """A str from Python can hold one too (MCP over stdio, function calling, a caller's own):
    an InputError naming the option, never UnicodeEncodeError or the audit log's error."""
    code = options.pop("code", "print(1)")
    with Sandbox(backend=RecordingBackend(), audit=AuditLog(tmp_path)) as sandbox:
        with pytest.raises(InputError) as refused:
            sandbox.run(code, **options)
        sandbox.audit.close()
    assert said in str(refused.value)


@pytest.mark.parametrize("field", ["script", "caller"])
def test_a_request_built_by_hand_is_checked_as_the_options_are(tmp_path: Path, field: str) -> None:
    """`Sandbox.execute` with an ExecutionRequest made in Python: a lone surrogate in its
    script name or caller is the caller's InputError, never the audit log's AuditError."""
    fields = {field: "s" + SURROGATE}
    request = ExecutionRequest("print(1)", "python", TrustLevel.UNTRUSTED, **fields)
    with Sandbox(backend=RecordingBackend(), audit=AuditLog(tmp_path)) as sandbox:
        with pytest.raises(InputError, match=f"{field} holds a lone surrogate"):
            sandbox.execute(request)
        sandbox.audit.close()


@pytest.mark.parametrize("name", ["timeout", "memory_mb", "cpus"])
@pytest.mark.parametrize("value", [10**400, -(10**5000), 2**63], ids=["e400", "-e5000", "2e63"])
def test_a_huge_number_from_python_is_out_of_range(tmp_path: Path, name: str, value: int) -> None:
    """`math.isfinite(10**400)` raised OverflowError (`hazmat run --memory` of 4,000 digits:
    exit 70), and str() of 5,000 digits is an error of its own: the message gives its bits."""
    with Sandbox(backend=RecordingBackend(), audit=AuditLog(tmp_path)) as sandbox:
        with pytest.raises(InputError, match=f"option '{name}' is out of range \\(a \\d+-bit"):
            sandbox.run("print(1)", **{name: value})
        sandbox.audit.close()


@pytest.mark.parametrize("mb", ["1e308", "inf", "nan"])
def test_keys_create_with_a_body_cap_past_any_number_is_bad_input(tmp_path: Path, mb: str) -> None:
    """round() of 1e308 MiB (inf) raised OverflowError, of NaN ValueError: exit 70."""
    args = ["keys", "create", "--tenant", "t", "--trust", "untrusted", "--max-request-mb", mb]
    out = invoke([*args, "--keys", str(tmp_path / "keys.json")])
    assert out.exit_code == 2, out.stderr
    assert "--max-request-mb must be a number of MB" in out.stderr


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        ("[" * 100_000, "the JSON is nested deeper than 32 levels"),  # it raised RecursionError
        ('{"code": "\\udc80"}', "field 'code' holds a lone surrogate"),
        ('{"code": "1", "timeout": ' + "9" * 5000 + "}", "the JSON has a number"),
    ],
)
def test_function_calling_arguments_are_decoded_within_bounds(
    tmp_path: Path, arguments: str, says: str
) -> None:
    """A model's tool call (CodeTools.handle, OpenAI's JSON text): an error the model reads,
    never a raise."""
    from hazmat.tools import CodeTools

    with Sandbox(backend=RecordingBackend(), audit=AuditLog(tmp_path)) as sandbox:
        output = CodeTools(sandbox).handle("run_code", arguments)
        sandbox.audit.close()
    assert output.is_error and says in json.loads(output.text)["error"]
