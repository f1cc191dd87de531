"""How a Python program ends, through the runner that runs it in a warm sandbox
(backends/inside/python_runner.py): exactly as `python3 main.py` ends in the same image, which the
same sandbox runs beside it. Once per runtime, on one tier each (the runner is the same on
every tier)."""

from __future__ import annotations

import json
import re

import pytest

from hazmat import Outcome, Sandbox

pytestmark = [pytest.mark.docker, pytest.mark.oci]


# How a Python program ends, each as its own program: the runner ends it (without tearing
# down the interpreter's modules) exactly as `python3 main.py` does in the same image
PYTHON_ENDS = {
    "atexit, and stdout without a newline": (
        "import atexit\natexit.register(print, 'bye')\nprint('x', end='')\n"
    ),
    "a thread that outlives the main code": (
        "import threading\nthreading.Thread(target=lambda: print(sum(range(300000)))).start()\n"
    ),
    "a daemon thread still running": (
        "import threading, time\n"
        "threading.Thread(target=time.sleep, args=(60,), daemon=True).start()\nprint('ok')\n"
    ),
    "__del__ of a global": (
        "class A:\n    def __del__(self):\n        print('deleted', flush=True)\n"
        "a = A()\nprint('end')\n"
    ),
    "a file never closed, held by a global": "f = open('out.txt', 'w')\nf.write('global')\n",
    "a file never closed, in a cycle": (
        "class B:\n    pass\nb = B()\nb.me = b\nb.f = open('out.txt', 'w')\nb.f.write('cycle')\n"
        "del b\n"
    ),
    "a file never closed, in the program's own module": ("import helper\nprint(helper.NAME)\n"),
    "C's own stdout buffer": (
        "import ctypes\nctypes.CDLL(None).printf(b'from C\\n')\nprint('from Python')\n"
    ),
    "sys.exit with a message": "import sys\nprint('out')\nsys.exit('a message')\n",
    "sys.exit(258)": "import sys\nsys.exit(258)\n",
    "sys.exit(-1)": "import sys\nsys.exit(-1)\n",
    "sys.exit(2**70)": "import sys\nsys.exit(2**70)\n",
    "sys.exit(True)": "import sys\nsys.exit(True)\n",
    "sys.exit(None)": "import sys\nsys.exit(None)\n",
    "an error in an atexit function": (
        "import atexit\ndef f():\n    raise ValueError('late')\natexit.register(f)\nprint(1)\n"
    ),
    "an uncaught KeyboardInterrupt": "print('before')\nraise KeyboardInterrupt\n",
    "stdout closed by the program": "import sys\nprint('a')\nsys.stdout.close()\n",
    "something not a module in sys.modules": (
        "import sys\nsys.modules['odd'] = 42\nsys.modules['odder'] = None\nprint('ok')\n"
    ),
}
HELPER = "f = open('out.txt', 'w')\nf.write('module')\nNAME = 'helper'\n"
# runs every case above with the image's own python3, in a folder of its own
AS_PYTHON3 = """
import json, os, subprocess, sys
cases, helper, got = json.load(open('cases.json')), open('helper.txt').read(), {}
for i, (name, code) in enumerate(cases.items()):
    folder = f'/work/c{i}'
    os.mkdir(folder)
    for file, text in (('main.py', code), ('helper.py', helper)):
        with open(os.path.join(folder, file), 'w') as f:
            f.write(text)
    ran = subprocess.run([sys.executable, 'main.py'], cwd=folder, capture_output=True,
                         stdin=subprocess.DEVNULL, text=True)
    out = os.path.join(folder, 'out.txt')
    got[name] = [ran.returncode if ran.returncode >= 0 else 128 - ran.returncode,
                 ran.stdout, ran.stderr.replace(folder + '/', '/work/'),
                 open(out).read() if os.path.exists(out) else None]
print(json.dumps(got))
"""


def _plain(stderr: str) -> str:
    return re.sub(r"0x[0-9a-f]+", "0x", stderr)


@pytest.mark.parametrize("on", ["runc", "runsc"])
def test_a_python_program_ends_as_python3_main_py_ends(sandbox: Sandbox, on: str) -> None:
    """Exit status, output, atexit functions, threads, __del__, files never closed and C's
    own buffers: the runner ends the program without tearing down the interpreter's modules
    (140 ms with python-data's), and nothing of that shows."""
    ours: dict[str, list[object]] = {}
    for name, code in PYTHON_ENDS.items():
        result = sandbox.run(
            code,
            "python",
            files={"helper.py": HELPER},
            output_files=["out.txt"],
            runtime=on,
            override_reason="the C case imports ctypes, which the assessment blocks",
        )
        out = result.files.get("out.txt")
        ours[name] = [
            result.exit_code,
            result.stdout,
            _plain(result.stderr),
            out.decode() if out is not None else None,
        ]
    reference = sandbox.run(
        AS_PYTHON3,
        "python",
        runtime=on,
        files={"cases.json": json.dumps(PYTHON_ENDS), "helper.txt": HELPER},
    )
    assert reference.outcome is Outcome.OK, reference.stderr
    theirs = {
        name: [rc, out, _plain(err), file]
        for name, (rc, out, err, file) in json.loads(reference.stdout).items()
    }
    differ = {
        name: (ours[name], theirs[name]) for name in PYTHON_ENDS if ours[name] != theirs[name]
    }
    assert differ == {}
    assert theirs["sys.exit(258)"][0] == 2 and theirs["an uncaught KeyboardInterrupt"][0] == 130
