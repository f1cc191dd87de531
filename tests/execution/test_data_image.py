"""The python-data image on the real engine: a pandas + matplotlib program returns its plot as
an output file, and a program that imports a package its image lacks gets a note saying where
to find it."""

from __future__ import annotations

import struct

import pytest

from hazmat import Outcome, Sandbox
from hazmat.images.recipes import RECIPES

pytestmark = pytest.mark.docker

PLOT = """\
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

frame = pd.DataFrame({"x": np.arange(10), "y": np.arange(10) ** 2})
print(frame["y"].sum())
ax = frame.plot(x="x", y="y", figsize=(4, 3))
ax.figure.savefig("plot.png", dpi=50)
"""


def test_a_pandas_and_matplotlib_program_returns_a_png(sandbox: Sandbox, runtime: str) -> None:
    result = sandbox.run(
        PLOT, "python", image="python-data", runtime=runtime, output_files=["plot.png"]
    )
    assert (result.outcome, result.stdout) == (Outcome.OK, "285\n"), result.stderr
    png = result.files["plot.png"]
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", png[16:24])  # the IHDR chunk
    assert (width, height) == (200, 150)
    assert result.image == RECIPES["python-data"].ref


def test_scipy_and_scikit_learn_are_there_too(sandbox: Sandbox) -> None:
    code = (
        "import scipy.stats, sklearn.linear_model as lm\n"
        "m = lm.LinearRegression().fit([[0], [1], [2]], [1, 3, 5])\n"
        "print(round(m.coef_[0], 3), round(scipy.stats.norm.cdf(0), 2))\n"
    )
    result = sandbox.run(code, "python", image="python-data", runtime="runc")
    assert (result.outcome, result.stdout) == (Outcome.OK, "2.0 0.5\n"), result.stderr


@pytest.mark.parametrize(
    ("language", "code", "image", "says"),
    [
        ("python", "import numpy\n", None, "'numpy' is not in " + RECIPES["python"].ref),
        ("python", "import numpy\n", None, "the python-data image has it"),
        ("python", "import requests\n", "python-data", "--from python-data --pip requests"),
        ("javascript", "require('lodash')\n", None, "--from node --npm lodash"),
        (
            "javascript",
            "import _ from 'lodash';\n",
            None,
            "'lodash' is not in " + RECIPES["node"].ref,
        ),
        (
            "go",
            'package main\n\nimport "example.invalid/x"\n\nfunc main() { x.Y() }\n',
            None,
            "not in " + RECIPES["go"].ref,
        ),
    ],
)
def test_a_missing_package_gets_a_note_saying_where_to_find_it(
    sandbox: Sandbox, language: str, code: str, image: str | None, says: str
) -> None:
    result = sandbox.run(code, language, image=image, runtime="runc")
    assert result.outcome in (Outcome.ERROR, Outcome.COMPILE_ERROR), result.stderr
    assert any(says in note for note in result.notes), (result.notes, result.stderr)
