"""Displays on the real engine (displays.py): matplotlib figures, a final DataFrame and
display() calls come back from runs and session calls under runc and runsc, in order; what the
program prints or writes itself is believed no further than the host's checks."""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Iterator
from types import MappingProxyType

import pytest

from hazmat import Outcome, Sandbox
from hazmat.backends.container.engine import Engine
from hazmat.backends.docker.driver import DockerBackend
from hazmat.policy import Policy, TrustLevel
from hazmat.testing import as_asked

pytestmark = pytest.mark.docker

PNG = b"\x89PNG\r\n\x1a\n"

NOTEBOOK = """\
import matplotlib.pyplot as plt
import pandas as pd
plt.figure(figsize=(4, 3), dpi=50)
plt.plot([1, 2, 3], [3, 1, 2])
plt.show()
plt.figure(figsize=(2, 2), dpi=50)
plt.bar([1, 2], [3, 4])
display({"text/html": "<b>made by display()</b>"}, raw=True)
print("hello")
pd.DataFrame({"a": [1, 2], "b": [3.5, 4.5]})
"""


def _size(png: bytes) -> tuple[int, int]:
    assert png.startswith(PNG)
    width, height = struct.unpack(">II", png[16:24])  # the IHDR chunk
    return width, height


def test_figures_tables_and_display_calls_come_back_in_order(
    sandbox: Sandbox, runtime: str
) -> None:
    result = sandbox.run(NOTEBOOK, "python", image="python-data", runtime=runtime)
    assert (result.outcome, result.stdout) == (Outcome.OK, "hello\n"), result.stderr
    shown, drawn, table, still_open = result.displays
    assert set(shown) == {"image/png", "text/plain"}
    assert shown["text/plain"].startswith("<Figure size 200x150")
    assert drawn == {"text/html": "<b>made by display()</b>"}
    assert "<table" in table["text/html"] and "3.5" in table["text/plain"]
    assert isinstance(still_open["image/png"], bytes)
    width, height = _size(still_open["image/png"])
    assert 50 < width <= 100 and 50 < height <= 100  # 2 x 2 inches at 50 dpi, cut tight
    assert result.notes == ()


def test_a_session_shows_each_calls_own_displays(engine: Engine, runtime: str) -> None:
    with (
        Sandbox(as_asked(), backend=DockerBackend(engine)) as sb,
        sb.session("python", image="python-data", runtime=runtime) as session,
    ):
        first = session.run(
            "import matplotlib.pyplot as plt, pandas as pd\n"
            "frame = pd.DataFrame({'x': [1, 2, 3]})\n"
            "frame.plot()\n"
        )
        second = session.run("total = int(frame['x'].sum())\ntotal")
        third = session.run("frame.describe()", figure_formats=["svg"])
        fourth = session.run("frame.plot(); plt.gcf().set_dpi(40)", figure_formats=["svg"])
        fifth = session.run("frame.plot()\ntotal + 1", final_value="result")
    assert first.outcome is Outcome.OK, first.stderr
    [figure] = first.displays
    assert figure["image/png"][:8] == PNG  # open at the call's end: shown, then closed
    assert (second.stdout, second.displays) == ("6\n", ())  # a plain value is only printed
    [described] = third.displays  # shown, and so not printed as well
    assert "<table" in described["text/html"] and "count" in described["text/plain"]
    assert third.stdout == ""
    [vector] = fourth.displays
    assert set(vector) == {"image/svg+xml", "text/plain"}
    assert vector["image/svg+xml"].lstrip().startswith("<?xml")
    # the last line's value as the result (E2B's main result): a display, marked, not printed
    assert fifth.stdout == "" and fifth.result_display == 0, fifth.stderr
    value, drawn = fifth.displays
    assert value == {"text/plain": "7"} and drawn["image/png"][:8] == PNG


def test_a_runs_last_value_comes_back_as_the_result_when_asked(sandbox: Sandbox) -> None:
    asked = sandbox.run("x = 6\nx * 7", "python", trust="unknown", final_value="result")
    assert (asked.stdout, asked.displays, asked.result_display) == ("", ({"text/plain": "42"},), 0)
    plain = sandbox.run("x = 6\nx * 7", "python", trust="unknown")
    assert (plain.stdout, plain.displays, plain.result_display) == ("", (), None)


def test_a_display_printed_by_the_program_is_only_output(sandbox: Sandbox) -> None:
    forged = '{"image/png": "iVBORw0KGgo="}'
    code = f"print({forged!r})\nprint('--hazmat-files-x--')\n"
    result = sandbox.run(code, "python", trust="unknown")
    assert result.outcome is Outcome.OK
    assert result.stdout == forged + "\n--hazmat-files-x--\n"
    assert result.displays == ()


def test_what_the_program_writes_into_the_display_file_is_checked(
    sandbox: Sandbox, runtime: str
) -> None:
    code = """\
import base64, json
lines = [
    {"image/png": base64.b64encode(b"not a png").decode(), "text/plain": "kept"},
    {"application/x-evil": "x"},
    {"image/png": "%%% not base64"},
    "a string",
]
with open("/tmp/.hazmat-displays", "a") as f:
    for line in lines:
        f.write(json.dumps(line) + "\\n")
    f.write("{not json\\n")
display({"text/markdown": "**real**"}, raw=True)
"""
    result = sandbox.run(code, "python", runtime=runtime, trust="unknown")
    assert result.outcome is Outcome.OK, result.stderr
    assert result.displays == ({"text/plain": "kept"}, {"text/markdown": "**real**"})
    assert "4 displays dropped: not a display hazmat can check" in " ".join(result.notes)
    assert "1 part(s) of displays left out" in " ".join(result.notes)


def test_a_link_in_place_of_the_display_file_is_not_followed(sandbox: Sandbox) -> None:
    code = (
        "import os\n"
        "open('secret', 'w').write('{\"text/plain\": \"read through a link\"}\\n')\n"
        "os.symlink(os.path.abspath('secret'), '/tmp/.hazmat-displays')\n"
    )
    result = sandbox.run(code, "python", trust="unknown")
    assert result.outcome is Outcome.OK, result.stderr
    assert result.displays == ()


def _policy(**limits: int) -> Policy:
    levels = {
        level: dataclasses.replace(s, limits=s.limits.replace(**limits))
        for level, s in Policy().levels.items()
    }
    return Policy(levels=MappingProxyType(levels))


@pytest.fixture
def capped(engine: Engine) -> Iterator[Sandbox]:
    policy = _policy(max_displays=3, max_display_bytes=2000)
    with Sandbox(as_asked(policy), backend=DockerBackend(engine)) as sb:
        yield sb


def test_too_many_or_too_large_displays_are_cut_with_a_note(capped: Sandbox) -> None:
    code = (
        "display({'text/plain': 'x' * 1500}, raw=True)\n"
        "display({'text/plain': 'y' * 1500}, raw=True)\n"  # past 2000 bytes together
        "for i in range(4):\n"
        "    display(i)\n"  # two fit the count
    )
    result = capped.run(code, "python", trust=TrustLevel.UNKNOWN)
    assert result.outcome is Outcome.OK, result.stderr
    assert [d["text/plain"] for d in result.displays] == ["x" * 1500, "0", "1"]
    notes = " ".join(result.notes)
    assert "2 displays dropped: more than max_displays (3)" in notes
    assert "1 display dropped: together over max_display_bytes (2000 bytes)" in notes


def test_a_display_file_past_its_cap_is_not_collected(capped: Sandbox) -> None:
    code = "open('/tmp/.hazmat-displays', 'w').write('{}' * 100_000)\nprint('done')\n"
    result = capped.run(code, "python", trust=TrustLevel.UNKNOWN)
    assert (result.outcome, result.stdout, result.displays) == (Outcome.OK, "done\n", ())
    assert any("the displays were not collected" in note for note in result.notes)


def test_a_policy_without_displays_runs_python_as_python3_does(engine: Engine) -> None:
    with Sandbox(as_asked(_policy(max_displays=0)), backend=DockerBackend(engine)) as sb:
        result = sb.run(
            "import builtins\nprint(hasattr(builtins, 'display'))\n{'a': 1}",
            "python",
            trust=TrustLevel.UNKNOWN,
        )
    assert (result.stdout, result.displays) == ("False\n", ())


JS_DISPLAYS = """\
const png = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex');
display.html('<b>bold</b>');
display(png);
display({ rows: 2, ok: true });
display.markdown('**md**');
display.svg('<svg xmlns="http://www.w3.org/2000/svg"/>');
display({ 'text/plain': 'raw' }, { raw: true });
console.log('shown');
"""


@pytest.mark.parametrize("language", ["javascript", "typescript"])
def test_javascript_and_typescript_show_displays_too(
    sandbox: Sandbox, runtime: str, language: str
) -> None:
    result = sandbox.run(JS_DISPLAYS, language, runtime=runtime)
    assert (result.outcome, result.stdout) == (Outcome.OK, "shown\n"), result.stderr
    html, image, data, markdown, svg, raw = result.displays
    assert html == {"text/html": "<b>bold</b>"}
    assert image["image/png"] == bytes.fromhex("89504e470d0a1a0a0000000d49484452")
    assert '"rows": 2' in data["application/json"] and data["text/plain"]
    assert markdown == {"text/markdown": "**md**"} and raw == {"text/plain": "raw"}
    assert svg["image/svg+xml"].startswith("<svg")
    assert result.notes == ()


def test_javascript_displays_keep_to_the_limits_and_the_checks(capped: Sandbox) -> None:
    code = (
        "display.png(Buffer.from('not a png'));\n"  # the host's check: dropped with a note
        "for (let i = 0; i < 5; i++) display(i);\n"  # three fit the count
    )
    result = capped.run(code, "javascript", trust=TrustLevel.UNKNOWN)
    assert result.outcome is Outcome.OK, result.stderr
    assert [d["text/plain"] for d in result.displays] == ["0", "1"]
    notes = " ".join(result.notes)
    assert "displays dropped: more than max_displays (3)" in notes
    assert "not a display hazmat can check" in notes


def test_a_javascript_session_call_shows_its_own_displays(sandbox: Sandbox) -> None:
    with sandbox.session("javascript") as session:
        first = session.run("display.html('<i>one</i>');")
        second = session.run("console.log(typeof display);")
    assert first.displays == ({"text/html": "<i>one</i>"},), first.stderr
    assert (second.stdout, second.displays) == ("function\n", ())
