"""What a model is shown of a run's output (tools/shown.py): a stream past the level's
`shown_output_bytes` is its head and tail around a marker, the whole stream is kept as a file
of the session, and `read_file` gives it back in parts (over the recording backend; the real
engine's: tests/execution/test_agent_examples.py)."""

from __future__ import annotations

import json

import pytest

from hazmat import Sandbox
from hazmat.backends.base import Job, RunReport
from hazmat.policy import PolicyError
from hazmat.policy.file import parse_policy
from hazmat.testing import RecordingBackend, as_asked, report
from hazmat.tools import CodeTools
from hazmat.tools.shown import OUTPUT_FOLDER, head_and_tail

# the print loop that gave a model a 308 KB tool message: 20,000 numbered lines
LOOP = b"".join(b"line %05d of the loop's output\n" % n for n in range(10_000))


def looping(job: Job) -> RunReport:
    if "main.py" not in job.program.files:
        return report()  # a files call: the upload of the whole output
    return report(stdout=LOOP, stderr=b"one warning\n")


def test_a_long_stream_is_its_head_and_tail_and_the_rest_is_kept_in_a_file() -> None:
    backend = RecordingBackend(answer=looping)
    with Sandbox(as_asked(), backend=backend) as sandbox, CodeTools(sandbox) as tools:
        output = tools.handle("run_code", {"code": "for n in range(10_000): print(n)"})
        said = json.loads(output.text)
        [kept] = backend.kept
        mode, upload = kept.calls[-1]
    assert len(LOOP) > 300_000 and len(output.text) < 17 * 1024
    stdout = said["stdout"]
    assert stdout.startswith("line 00000 of the loop's output\n")
    assert stdout.endswith("line 09999 of the loop's output\n")
    head, _, tail = stdout.partition("\n[... ")
    marker, _, tail = tail.partition(" ...]\n")
    assert head.endswith("output\n") and tail.startswith("line ")  # cut at line ends
    cut = len(LOOP) - len(head) - len(tail)
    lines = LOOP.count(b"\n") - head.count("\n") - tail.count("\n")
    assert marker.startswith(f"{cut:,} bytes ({lines:,} lines) of stdout cut here")
    [name] = upload.program.files
    assert mode == "files" and name.startswith(OUTPUT_FOLDER) and name.endswith(".stdout")
    assert upload.program.files[name] == LOOP
    assert f"is the file {name}: read it in parts with read_file" in marker
    assert said["stderr"] == "one warning\n"  # a short stream is whole


def test_read_file_gives_a_long_file_in_parts_that_make_it_whole() -> None:
    backend = RecordingBackend(answer=lambda job: report(files={"out.txt": LOOP}))
    with Sandbox(as_asked(), backend=backend) as sandbox, CodeTools(sandbox) as tools:
        parts, offset = [], 0
        while offset is not None:
            part = json.loads(tools.handle("read_file", {"name": "out.txt", "offset": offset}).text)
            assert part["size"] == len(LOOP) and len(part["text"]) <= 16 * 1024
            parts.append(part["text"])
            offset = part["next_offset"]
        small = json.loads(
            tools.handle("read_file", {"name": "out.txt", "offset": 32, "length": 10}).text
        )
        wrong = tools.handle("read_file", {"name": "out.txt", "offset": -1})
    assert "".join(parts).encode() == LOOP and len(parts) == -(-len(LOOP) // (16 * 1024))
    assert (small["text"], small["offset"], small["next_offset"]) == ("line 00001", 32, 42)
    assert wrong.is_error and "offset is 0 or more" in wrong.text


def test_the_part_shown_is_the_levels_and_its_bounds_are_checked() -> None:
    levels = {"trust": {"untrusted": {"shown_output_bytes": 2048}}}
    backend = RecordingBackend(answer=looping)
    sandbox = Sandbox(parse_policy(levels), backend=backend)
    with sandbox, CodeTools(sandbox) as tools:
        said = json.loads(tools.handle("run_code", {"code": "print(1)"}).text)
    assert 1024 < len(said["stdout"].encode()) < 2048 + 400  # the marker's words beside
    with pytest.raises(PolicyError, match="shown_output_bytes"):
        parse_policy({"trust": {"untrusted": {"shown_output_bytes": 10}}})


@pytest.mark.parametrize("limit", [2, 7, 100, 1000])
def test_head_and_tail_stay_within_the_limit(limit: int) -> None:
    for data in (LOOP, b"x" * 5000, "é".encode() * 3000):
        head, tail = head_and_tail(data, limit)
        assert len(head) + len(tail) <= limit
        assert data.startswith(head) and data.endswith(tail) and head and tail
