"""The exception a failed program ended with, read from its stderr (run/program_error.py)."""

from __future__ import annotations

from hazmat.models import ProgramException
from hazmat.run.program_error import program_exception

PYTHON_CHAINED = """\
Traceback (most recent call last):
  File "/work/main.py", line 2, in <module>
    {}["a"]
KeyError: 'a'

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "/work/main.py", line 4, in <module>
    raise ValueError("bad\\nrow")
ValueError: bad
row
"""

PYTHON_SYNTAX = """\
  File "/work/main.py", line 1
    x = (
        ^
SyntaxError: '(' was never closed
"""

NODE = """\
/work/main.js:2
  null.length;
       ^

TypeError: Cannot read properties of null (reading 'length')
    at f (/work/main.js:2:8)
    at Object.<anonymous> (/work/main.js:4:1)
    at Module._compile (node:internal/modules/cjs/loader:1256:14)
    at node:internal/main/run_main_module:23:47

Node.js v18.19.0
"""


def test_python_the_last_exception_with_its_value_and_frames() -> None:
    found = program_exception("python", PYTHON_CHAINED)
    assert found is not None
    assert (found.name, found.value) == ("ValueError", "bad\nrow")
    assert found.traceback.startswith("Traceback (most recent call last):\n")
    assert "line 4, in <module>" in found.traceback and "KeyError" not in found.traceback


def test_python_a_syntax_error_and_an_interrupt() -> None:
    syntax = program_exception("python", PYTHON_SYNTAX)
    assert syntax is not None
    assert (syntax.name, syntax.value) == ("SyntaxError", "'(' was never closed")
    interrupted = program_exception(
        "python",
        'Traceback (most recent call last):\n  File "/work/main.py", line 3\nKeyboardInterrupt\n',
    )
    assert interrupted == ProgramException(
        "KeyboardInterrupt",
        "",
        'Traceback (most recent call last):\n  File "/work/main.py", line 3',
    )


def test_node_the_error_and_the_programs_frames_only() -> None:
    found = program_exception("javascript", NODE)
    assert found is not None
    assert found.name == "TypeError"
    assert found.value == "Cannot read properties of null (reading 'length')"
    assert found.traceback.splitlines() == [
        "    at f (/work/main.js:2:8)",
        "    at Object.<anonymous> (/work/main.js:4:1)",
    ]


def test_nothing_when_the_output_ends_with_no_exception() -> None:
    assert program_exception("python", "some output\nError: not raised\n") is None
    assert program_exception("javascript", "Error: printed, not thrown\n") is None
    assert program_exception("go", "panic: boom\n") is None
    assert program_exception("python", "") is None


def test_python_the_last_syntax_block_and_frames_without_an_error() -> None:
    two = (
        PYTHON_SYNTAX + "  File \"/work/other.py\", line 3\n    y = ]\nSyntaxError: unmatched ']'\n"
    )
    last = program_exception("python", two)
    assert last is not None and last.value == "unmatched ']'"
    assert last.traceback.startswith('  File "/work/other.py", line 3')
    # frame lines and no error after them (one pass over them, however many)
    assert program_exception("python", '  File "a", line 1\n' * 50_000) is None
