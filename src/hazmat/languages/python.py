"""Python 3: Debian's python3, a runner kept warm with the container; a session keeps its
variables."""

from types import MappingProxyType

from hazmat.languages import IMAGE_VERSION, ImageSpec, Language, Repl, SelfTest

LANGUAGE = Language(
    name="python",
    image=f"hazmat/python:{IMAGE_VERSION}",
    source_name="main.py",
    extensions=(".py",),
    run="exec python3 main.py",
    runner="python",
    displays=True,
    entry="main.py",
    # the interpreter a session keeps: its variables live on between calls, like a notebook's
    repl=Repl(command='exec python3 -c "$3"', hazmat="python"),
    aliases=("py", "python3"),
    version="import platform\nprint(platform.python_version())\n",
    hello="print(1)",
    env=MappingProxyType({"PYTHONDONTWRITEBYTECODE": "1", "PYTHONIOENCODING": "utf-8"}),
    rank=0,
    analysers=("python-ast", "bandit"),
    names=MappingProxyType(
        {
            "polygon": ("python.",),
            "sandbox_fusion": ("python",),
            "piston": ("python", "py", "py3", "python3"),
            "judge0": ("71",),
        }
    ),
    images=(ImageSpec("python", ("python3", "python3-pip"), "Python, standard library, pip"),),
    self_test=SelfTest(
        greet="import sys\nprint('hello', sys.stdin.read().strip())\n",
        streams="import sys\nprint('out')\nprint('err', file=sys.stderr)\nsys.exit(3)\n",
    ),
    title="Python 3",
    keeps=(
        "its variables, functions and imports, as in a notebook; the value of a final "
        "expression is printed"
    ),
    shows=(
        "matplotlib figures, a final DataFrame and display(obj) come back as images and "
        "text"
    ),
    out_of_memory=("MemoryError",),
)
