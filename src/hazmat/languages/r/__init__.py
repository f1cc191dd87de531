"""R: Debian's r-base-core, for statistics and plots. Everything hazmat knows of R is in this
folder: the language (here), its analyser (analysis.py), the code that turns its plots into
displays (display.R) and its session's interpreter (session.R).

A run is `Rscript main.R`. Plots are PNG displays: R reads display.R as its user profile (the
pool writes it into /tmp before the job: `prepare`), which makes every new plot device a PNG
file per page (cairo) and, when R ends, writes each page as a display. A session keeps one R
between calls: each call's main.R is evaluated in the same workspace (visible values printed
as R's console prints them), and its plots are displays of that call.
"""

import shlex
from importlib.resources import files
from types import MappingProxyType

from hazmat.languages import IMAGE_VERSION, ImageSpec, Language, Repl, SelfTest

_PROFILE = "/tmp/.hazmat-Rprofile"
_HERE = files(__name__)

LANGUAGE = Language(
    name="r",
    image=f"hazmat/r:{IMAGE_VERSION}",
    source_name="main.R",
    extensions=(".r",),
    run="exec Rscript main.R",
    env=MappingProxyType({"R_PROFILE_USER": _PROFILE}),
    prepare=f"printf '%s' {shlex.quote(_HERE.joinpath('display.R').read_text())} > {_PROFILE}",
    displays=True,
    # R 4.5 will not start with fewer than 168 open files (measured: "the limit on the number of
    # open files is too low"); the standard level's 256 leaves room for its 128 connections
    min_nofile=256,
    # R's fd 0 is a file of the session's own, emptied when R starts (session.R).
    # The agent starts it in the background, where a shell ignores SIGINT, and R then ignores
    # it too: `env --default-signal` gives it back, so the agent's interrupt reaches R
    repl=Repl(
        command=(
            ": >/tmp/.hazmat-r-stdin && exec env --default-signal=INT"
            ' R_HAZMAT_REPL="$3"'
            " Rscript -e 'eval(parse(text = Sys.getenv(\"R_HAZMAT_REPL\")))'"
            " </tmp/.hazmat-r-stdin"
        ),
        code=_HERE.joinpath("session.R").read_text(),
    ),
    version="cat(format(getRversion()), '\\n')\n",
    hello='cat("1\\n")',
    rank=10,
    analysers=("r",),
    names=MappingProxyType(
        {
            "sandbox_fusion": ("R",),
            "piston": ("r", "rscript", "r-lang"),
            "judge0": ("80",),
        }
    ),
    own_analyser=f"{__name__}.analysis:RAnalyzer",
    images=(
        ImageSpec(
            "r",
            ("r-base-core", "fonts-dejavu-core"),
            "R and its base packages (stats, graphics, ...), PNG plots through cairo",
        ),
    ),
    self_test=SelfTest(
        greet='cat(sprintf("hello %s\\n", readLines(file("stdin"), n = 1)))\n',
        streams='cat("out\\n")\nmessage("err")\nquit(status = 3)\n',
    ),
    title="R",
    keeps=(
        "its workspace (variables and functions), as in an R console; visible values are "
        "printed as R prints them"
    ),
    shows=(
        "plots come back as PNG images"
    ),
    out_of_memory=("cannot allocate vector of size",),
)
