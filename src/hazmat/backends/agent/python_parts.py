"""The parts both Pythons embed: the Python runner (runners.py) and a session's interpreter
(session_repl.py). Each is Python source from backends/inside/, put on the line of theirs that
stands in for it (backends/inside/__init__.py).

`PRELOAD` (preload.py) is an image's warm-up (languages.PRELOAD_FILE), run before the job
exists: what it imports is paid for once per sandbox, not once per run.

`DISPLAY` (python_display.py) is the displays' part (displays.py). It defines
`_hazmat_displays()`, which returns three functions: `begin(ask)` before each run or call
(`ask` is the job's `{"max": n, "bytes": b, "formats": ["png", ...]}`, or None when the policy
allows no display), `end()` after it, and `final(value)` for the value of a final expression.
Between them:

- `display(*objs)` is a builtin, as in IPython: each object becomes one bundle from its
  `_repr_mimebundle_` and `_repr_png_`/`_svg_`/`_html_`/`_markdown_`/`_latex_`/`_json_`/
  `_jpeg_`/`_pdf_` methods (looked up on the type, as IPython does), plus its `repr()` as
  text/plain; a matplotlib figure is drawn in the asked formats; `display(bundle, raw=True)`
  takes a mapping as it is. With no display asked it prints the repr, as IPython does outside
  a notebook.
- `matplotlib.pyplot.show()` shows every open figure and closes them (matplotlib_inline's
  rule), whether pyplot was imported before the job (python-data's preload) or by the
  program; `end()` shows the figures still open.
- a final expression's value is shown when it has a representation beyond text.

Each bundle is one JSON line in /tmp/.hazmat-displays (binary data as base64), counted
against the job's caps here (what is over them becomes a `hazmat/dropped` line, for the
host's note) and again by the host, which believes none of it. None of this is a boundary:
the program can write that file itself, and all it can forge is its own displays.
"""

from __future__ import annotations

from hazmat.backends.inside import program
from hazmat.languages import PRELOAD_FILE

__all__ = ["DISPLAY", "PRELOAD"]

DISPLAY = program("python_display.py")

PRELOAD = program("preload.py", PRELOAD_FILE=PRELOAD_FILE).strip("\n")
