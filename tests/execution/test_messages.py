"""What a model reads: a small corpus of typical model-written snippets, each with the message
its result carries (docs/api.md, "Messages"). Each message says what happened and the one thing
the model can do next; hazmat's own frames never show in a traceback.

Real runs on the engine, one cell each (the messages do not depend on the tier or runtime).
"""

from __future__ import annotations

from typing import Any

import pytest

from hazmat import Outcome, Sandbox

pytestmark = pytest.mark.docker

# (language, code, options, outcome, what the error or a note must say)
CORPUS: list[tuple[str, str, dict[str, Any], Outcome, str]] = [
    (
        "python",
        "import seaborn as sns\nsns.set_theme()\n",
        {},
        Outcome.ERROR,
        "'seaborn' is not in hazmat/python",
    ),
    (
        "python",
        "import seaborn as sns\nsns.set_theme()\n",
        {},
        Outcome.ERROR,
        "the sandbox has no network, so it cannot be installed from the program: write the code "
        "without it",
    ),
    (
        "python",
        "import pandas as pd\nprint(pd.DataFrame({'a': [1]}))\n",
        {},
        Outcome.ERROR,
        "run the code again with image='python-data'",
    ),
    (
        "python",
        "import urllib.request\n"
        "print(urllib.request.urlopen('https://data.example.invalid/prices.csv').read())\n",
        {},
        Outcome.ERROR,
        "The sandbox has no network: no host can be reached and nothing can be downloaded",
    ),
    (
        "javascript",
        "const r = await fetch('https://data.example.invalid/prices.json');\n"
        "console.log(await r.json());\n",
        {},
        Outcome.ERROR,
        "The sandbox has no network",
    ),
    (
        "python",
        "total = 0\nwhile True:\n    total += 1\n",
        {"timeout": 1},
        Outcome.TIMEOUT,
        "the program was stopped at its time limit of 1 s",
    ),
    (
        "python",
        "import ctypes\nlibc = ctypes.CDLL(None)\nprint(libc.getpid())\n",
        {},
        Outcome.BLOCKED,
        "Nothing ran: write the code without that",
    ),
]


@pytest.mark.parametrize(
    ("language", "code", "options", "outcome", "says"),
    CORPUS,
    ids=[f"{i}-{entry[0]}" for i, entry in enumerate(CORPUS)],
)
def test_each_snippet_gets_a_message_a_model_can_act_on(
    sandbox: Sandbox, language: str, code: str, options: dict[str, Any], outcome: Outcome, says: str
) -> None:
    result = sandbox.run(code, language, **options)
    assert result.outcome is outcome, (result.error, result.stderr)
    read = " ".join([result.error or "", *result.notes])
    assert says in read, read


def test_a_session_traceback_shows_the_programs_frames_only(sandbox: Sandbox) -> None:
    with sandbox.session("python") as session:
        session.run("def ratio(a, b):\n    return a / b")
        failed = session.run("ratio(1, 0)")
    assert failed.outcome is Outcome.ERROR
    assert failed.stderr.startswith("Traceback (most recent call last):\n")
    frames = [line for line in failed.stderr.splitlines() if line.startswith("  File ")]
    assert len(frames) == 2 and all("main.py" in line for line in frames), failed.stderr
    assert failed.stderr.rstrip().endswith("ZeroDivisionError: division by zero")
