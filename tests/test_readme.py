"""README.md's examples, run as written, print what the README says they print.

Every fenced block of README.md is either run here or listed in `NOT_RUN` with the reason, by
its first line (its comment left out); a block the README gains or changes is neither until it
is added here, and `test_every_example_is_run_or_listed` fails. What the README's comments
claim, and how that is checked:

- Python: a comment at the end of a line holding a whole `print(...)` call is exactly what that
  call prints, without the trailing line breaks (`print(result.stdout)` of "6\\n" prints a blank
  line too; the comment leaves it out); a call that prints more than once is checked on all it
  printed. `...` in such a comment stands for any text (a duration, an id, the fields past
  the ones shown). Other comments are prose. The examples run in this process, on the real
  engine and images, each compiled from README.md itself (tracebacks name its lines), with
  `hazmat` imported as the first one does and `print` recording which line printed what. The
  first three open a Sandbox of their own; the two that use `sandbox` (and `session`) without
  opening them run in one opened here for both.
- Shell: each command line (a line ending in a backslash joined to the next) runs with bash,
  as a user of its own (HOME, XDG folders and audit log under the test's folders; the local
  servers and the service it starts are stopped at the end), in a folder holding the files the
  commands name: `script.py`, `my-policy.yaml`, and `examples/grading/tasks.jsonl` with the
  example set's Python tasks (tests/execution/test_grading.py grades the whole set in ten
  languages; here it is the command line and its path through the local server that count). A
  command must exit 0. A comment starting `hazmat:` is a line the command writes (stdout or
  stderr), `...` standing for any text. `...` as an argument stands for a run's arguments
  (`script.py` here); in `export NAME=VALUE`, `...` in the value stands for what an earlier
  line printed (the key `hazmat keys create` printed). A line ending in `&` runs in the
  background, and the next line waits until the port it names (`--port N`) answers.
- The CLI synopsis is checked against the parser, both ways; so is every `hazmat ...` command
  line and code span, every `make` target named, the exit-status table against `hazmat run
  --help`, and the `--json` fields against a result's `to_dict()`.
"""

from __future__ import annotations

import argparse
import ast
import builtins
import io
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import tokenize
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import hazmat
from hazmat.cli import COMMANDS, _parser
from hazmat.cli.run import RUN_EXITS

ROOT = Path(__file__).parent.parent
README = ROOT / "README.md"
EXAMPLE_SET = ROOT / "examples" / "grading" / "tasks.jsonl"
PNG = b"\x89PNG\r\n\x1a\n"


@dataclass(frozen=True)
class Block:
    lang: str
    line: int  # README's line number of the block's first line of code
    code: str

    @property
    def key(self) -> str:
        return command_and_comment(self.code.splitlines()[0])[0]


def readme_blocks() -> list[Block]:
    lines = README.read_text().splitlines()
    blocks, opened, lang = [], 0, ""
    for number, line in enumerate(lines, 1):
        fence = re.fullmatch(r"```(\w*)\s*", line)
        if fence and not opened:
            opened, lang = number + 1, fence.group(1)
        elif fence:
            blocks.append(Block(lang, opened, "\n".join(lines[opened - 1 : number - 1]) + "\n"))
            opened = 0
    assert not opened, f"README.md:{opened}: a code block is never closed"
    return blocks


def command_and_comment(line: str) -> tuple[str, str | None]:
    """A shell (or Python) line without its trailing comment, and the comment's text: the
    first `#` outside quotes that starts the line or follows a space."""
    quote = ""
    for i, char in enumerate(line):
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].strip(), line[i + 1 :].strip()
    return line.strip(), None


def command_lines(block: Block) -> list[tuple[str, str | None]]:
    """A shell block's command lines, continuations joined, each with its comment."""
    joined = re.sub(r"\s*\\\n\s*", " ", block.code)
    found = [command_and_comment(line) for line in joined.splitlines()]
    return [(command, comment) for command, comment in found if command]


def matches(pattern: str, text: str) -> bool:
    """Whether `text` is `pattern`, where `...` stands for any text."""
    regex = ".*?".join(re.escape(part) for part in pattern.split("..."))
    return re.fullmatch(regex, text, re.DOTALL) is not None


BLOCKS = readme_blocks()
ALONE = "alone: it opens its own Sandbox"
OPENED = "in the Sandbox and session opened here, which it uses without opening them"
PYTHON = {
    "import hazmat": ALONE,
    'with hazmat.Sandbox() as sandbox, sandbox.session("python") as session:': ALONE,
    'with hazmat.Sandbox() as sandbox, sandbox.session("python", image="python-data") as '
    "session:": ALONE,
    "def show(stream, data):": OPENED,
    "result = sandbox.run(": OPENED,
}
# The shell lines each test runs, in this order, with what each prints on stdout (None: not
# checked here; `...` stands for any text).
LOCAL_SERVER = [
    ("hazmat run -c 'print(1)'", "1\n"),
    ("hazmat run -c 'print(2)'", "2\n"),
    ("hazmat server status", "hazmat: local server pid ...: up ..., 2 runs, pool hits ...\n"),
    ("hazmat server stop", "hazmat: stopped 1 local server(s)\n"),
    ("hazmat server start --policy my-policy.yaml", "hazmat: local server started (pid ...)\n"),
    ("hazmat run --local ...", "hello from script.py\n"),
    ("hazmat run script.py", "hello from script.py\n"),
    ("hazmat batch examples/grading/tasks.jsonl -o results.jsonl --trust unknown", ""),
]
SERVICE = [
    ("hazmat keys create --tenant acme --trust untrusted", "hzm_...\n"),
    ("export HAZMAT_API_KEY=hzm_...", None),
    ("hazmat serve --port 8537 &", None),
    (
        'curl -s http://127.0.0.1:8537/v1/runs -H "Authorization: Bearer $HAZMAT_API_KEY" '
        '-d \'{"code": "print(6 * 7)", "language": "python"}\'',
        '{"outcome":"ok","exit_code":0,"stdout":"42\\n",...}',
    ),
    ("HAZMAT_URL=http://127.0.0.1:8537 hazmat run -c 'print(1)'", "1\n"),
]
SYNOPSIS = (
    "hazmat run FILE | -c CODE [--lang L] [--trust T] [--policy FILE] [--timeout SEC] [--memory MB]"
)
NOT_RUN = {  # blocks, and lines of shell blocks, no test runs: why
    "make demo": "installs Debian packages and dockerd, builds the nine images and runs every "
    "example of examples/ (minutes, as root); its target is checked to exist",
    "make test": "the whole suite, this module's included; its target is checked to exist",
    "pip install -e .": "would install into the environment the tests run in (`make setup` "
    "did that)",
    "hazmat images build": "rebuilds the nine images as root (about 6 minutes); `make setup` "
    "did that, and every engine test fails on an absent or stale image (conftest.py)",
    SYNOPSIS: "a synopsis, not a command: checked against the parser both ways",
    "make unit": "make targets around the suite (unit tests, ruff, mypy, the suite, CI); each "
    "target is checked to exist",
    "hazmat batch examples/grading/judging.jsonl -o results.jsonl --trust unknown": "graded "
    "whole, with the Polygon package's tasks, by tests/execution/test_judging.py (C++ checkers "
    "and interactors take minutes as a user of its own)",
    "P=examples/grading/polygon/triangle": "a variable for the next line",
    "hazmat server console": "serves until Ctrl-C, on a fixed port; tests/cli/test_local_server.py "
    "runs it on a free port and fetches the console of the local server through it",
    "hazmat polygon $P $P/solutions/* -o tasks.jsonl && hazmat batch tasks.jsonl -o scored.jsonl": (
        "the same two commands run by tests/execution/test_judging.py; `hazmat polygon` also by "
        "tests/grade/test_polygon.py"
    ),
}


def test_every_example_is_run_or_listed() -> None:
    seen: list[str] = []
    for block in BLOCKS:
        assert block.lang in ("python", "sh", ""), f"README.md:{block.line}: {block.lang}?"
        if block.lang == "sh":
            seen += [command for command, _ in command_lines(block)]
        else:
            seen.append(block.key)
    listed = [*PYTHON, *(line for line, _ in LOCAL_SERVER + SERVICE), *NOT_RUN]
    assert sorted(seen) == sorted(listed)


# -- Python ------------------------------------------------------------------------------


class Printed:
    """A `print` for the examples' globals: what each of README's lines printed."""

    def __init__(self) -> None:
        self.by_line: dict[int, str] = {}
        self._lock = threading.Lock()

    def __call__(self, *args: Any, sep: str = " ", end: str = "\n", **kwargs: Any) -> None:
        if kwargs.get("file") is not None:
            builtins.print(*args, sep=sep, end=end, **kwargs)
            return
        text = io.StringIO()
        builtins.print(*args, sep=sep, end=end, file=text)
        line = sys._getframe(1).f_lineno
        with self._lock:
            self.by_line[line] = self.by_line.get(line, "") + text.getvalue()


def claimed_prints(block: Block) -> dict[int, str]:
    """README line -> the comment after a whole `print(...)` call on it."""
    comments = {
        token.start[0] + block.line - 1: token.string[1:].strip()
        for token in tokenize.generate_tokens(io.StringIO(block.code).readline)
        if token.type == tokenize.COMMENT
    }
    found = {}
    for node in ast.walk(ast.parse(block.code)):
        call = node.value if isinstance(node, ast.Expr) else None
        if (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Name)
            and call.func.id == "print"
            and node.lineno == node.end_lineno
        ):
            line = node.lineno + block.line - 1
            if line in comments:
                found[line] = comments[line]
    return found


def run_python(block: Block, names: dict[str, Any]) -> dict[str, Any]:
    """The block run with `names`, its prints checked against its comments; its globals."""
    printed = Printed()
    namespace = {"__name__": "readme", "hazmat": hazmat, **names, "print": printed}
    code = "\n" * (block.line - 1) + block.code  # README's own line numbers
    exec(compile(code, str(README), "exec"), namespace)
    claims = claimed_prints(block)
    wrong = [
        f"README.md:{line}: printed {printed.by_line.get(line)!r}, the README says {claim!r}"
        for line, claim in claims.items()
        if line not in printed.by_line or not matches(claim, printed.by_line[line].rstrip("\n"))
    ]
    assert not wrong, "\n".join(wrong)
    return namespace


def json_fields() -> set[str]:
    """The fields README says `hazmat run --json` prints."""
    text = " ".join(README.read_text().split())
    listed = re.search(r"With `--json` it prints one object with (.*?) \(all non-ASCII", text)
    assert listed, "README no longer lists `hazmat run --json`'s fields"
    return set(re.findall(r"`(\w+)`", re.sub(r"\(.*?\)", "", listed.group(1))))  # not (...)


def check_result(namespace: dict[str, Any], folder: Path) -> None:
    assert json_fields() == set(namespace["result"].to_dict())  # what `--json` prints


def check_chart(namespace: dict[str, Any], folder: Path) -> None:
    assert (folder / "chart.png").read_bytes().startswith(PNG)


def check_plot(namespace: dict[str, Any], folder: Path) -> None:
    assert (folder / "plot.png").read_bytes().startswith(PNG)  # "# a PNG"


AFTERWARDS: dict[str, Callable[[dict[str, Any], Path], None]] = {
    "import hazmat": check_result,
    'with hazmat.Sandbox() as sandbox, sandbox.session("python", image="python-data") as '
    "session:": check_chart,
    "result = sandbox.run(": check_plot,
}


@pytest.fixture(scope="module")
def opened() -> Iterator[dict[str, Any]]:
    """The `sandbox` and `session` the README's later examples use without opening them; no
    warm pool, which one run of each kind would only fill and throw away."""
    with hazmat.Sandbox(pool=False) as sandbox, sandbox.session("python") as session:
        yield {"sandbox": sandbox, "session": session}


@pytest.mark.docker
@pytest.mark.runsc  # the built-in policy's default trust level runs under gVisor
@pytest.mark.parametrize("key", list(PYTHON))
def test_a_python_example_prints_what_it_says(
    key: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    [block] = [b for b in BLOCKS if b.lang == "python" and b.key == key]
    monkeypatch.chdir(tmp_path)  # the files the examples write
    monkeypatch.setenv("HAZMAT_SESSIONS_DIR", str(tmp_path / "sessions"))  # a paused session
    names = request.getfixturevalue("opened") if PYTHON[key] == OPENED else {}
    namespace = run_python(block, names)
    if key in AFTERWARDS:
        AFTERWARDS[key](namespace, tmp_path)


# -- Shell -------------------------------------------------------------------------------


def shell_line(command: str) -> tuple[str, str | None]:
    """README's command line `command`, with its comment."""
    found = [
        line
        for block in BLOCKS
        if block.lang == "sh"
        for line in command_lines(block)
        if line[0] == command
    ]
    assert len(found) == 1, f"README has {len(found)} command lines {command!r}"
    return found[0]


class Shell:
    """Runs README's command lines with bash, as a user of its own, in `folder`."""

    def __init__(self, home: Path, runtime: Path, folder: Path) -> None:
        self.folder = folder
        self.env = {**os.environ, "HOME": str(home), "XDG_RUNTIME_DIR": str(runtime)}
        for name in ("XDG_STATE_HOME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME"):
            self.env[name] = str(home / name.lower())
        self.env["HAZMAT_AUDIT_DIR"] = str(home / "audit")
        bin_folder = Path(sys.executable).parent  # the venv's, where pip put `hazmat`
        assert (bin_folder / "hazmat").exists(), f"no `hazmat` in {bin_folder}: run .venv's pytest"
        self.env["PATH"] = f"{bin_folder}:{self.env['PATH']}"
        for name in ("HAZMAT_NO_SERVER", "HAZMAT_URL", "HAZMAT_API_KEY"):
            self.env.pop(name, None)
        self.printed: list[str] = []
        self.background: list[tuple[subprocess.Popen[bytes], Path]] = []

    def run(self, command: str, stdout: str | None) -> None:
        line, comment = shell_line(command)
        if line.startswith("export "):
            name, value = line.removeprefix("export ").split("=", 1)
            self.env[name] = self.printed_line(value) if "..." in value else value
        elif line.endswith("&"):
            self.start(line.removesuffix("&").strip())
        else:
            argv = ["bash", "-c", re.sub(r"(?<=\s)\.\.\.(?=\s|$)", "script.py", line)]
            done = subprocess.run(
                argv, env=self.env, cwd=self.folder, capture_output=True, text=True, timeout=300
            )
            assert done.returncode == 0, f"{line}: exit {done.returncode}\n{done.stderr}"
            said = (done.stdout + done.stderr).splitlines()
            if comment is not None and comment.startswith("hazmat:"):
                assert any(matches(comment, s) for s in said), f"{line}: said {said}"
            if stdout is not None:
                assert matches(stdout, done.stdout), f"{line}: printed {done.stdout!r}"
            self.printed += done.stdout.splitlines()

    def printed_line(self, pattern: str) -> str:
        [found] = [line for line in self.printed if matches(pattern, line)]
        return found

    def start(self, line: str) -> None:
        port = re.search(r"--port (\d+)", line)
        assert port, f"{line}: the test waits for a port, and it names none"
        assert not answers(int(port.group(1))), f"{line}: something else listens there"
        log = self.folder / f"background-{len(self.background)}.log"
        with log.open("wb") as out:
            process = subprocess.Popen(
                ["bash", "-c", f"exec {line}"],
                env=self.env,
                cwd=self.folder,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.background.append((process, log))
        deadline = time.monotonic() + 120
        while not answers(int(port.group(1))):
            assert process.poll() is None, f"{line}: ended: {log.read_text()}"
            assert time.monotonic() < deadline, f"{line}: no answer: {log.read_text()}"
            time.sleep(0.1)

    def close(self) -> None:
        for process, log in self.background:
            process.send_signal(signal.SIGTERM)
            assert process.wait(timeout=150) == 0, log.read_text()
        argv = [sys.executable, "-m", "hazmat", "server", "stop"]
        stop = subprocess.run(argv, env=self.env, capture_output=True, text=True)
        assert stop.returncode == 0, stop.stderr


def answers(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(1)
        return probe.connect_ex(("127.0.0.1", port)) == 0


@pytest.fixture
def shell(tmp_path: Path) -> Iterator[Shell]:
    """A user of its own in a folder holding what README's commands name; a short runtime
    folder (a unix socket's path is at most 107 bytes)."""
    runtime = Path(tempfile.mkdtemp(prefix="hz-", dir="/tmp"))
    folder = tmp_path / "here"
    (folder / "examples" / "grading").mkdir(parents=True)
    (folder / "script.py").write_text("print('hello from script.py')\n")
    (folder / "my-policy.yaml").write_text("pool:\n  size: 1\n")
    python_tasks = [
        line for line in EXAMPLE_SET.read_text().splitlines() if '"language": "python"' in line
    ]
    (folder / "examples" / "grading" / "tasks.jsonl").write_text("\n".join(python_tasks) + "\n")
    user = Shell(tmp_path / "home", runtime, folder)
    try:
        yield user
    finally:
        try:
            user.close()
        finally:
            shutil.rmtree(runtime, ignore_errors=True)


@pytest.mark.docker
@pytest.mark.runsc
def test_the_local_server_examples(shell: Shell) -> None:
    for command, stdout in LOCAL_SERVER:
        shell.run(command, stdout)
    graded = [
        json.loads(line) for line in (shell.folder / "results.jsonl").read_text().splitlines()
    ]
    tasks = (shell.folder / "examples" / "grading" / "tasks.jsonl").read_text().splitlines()
    assert len(graded) == len(tasks) > 1
    for task in graded:  # each id says what its submission deserves: -right, or -wrong-<verdict>
        want = "accepted" if task["id"].endswith("-right") else task["id"].rsplit("-", 1)[1]
        assert task["verdict"] == want, task


@pytest.mark.docker
@pytest.mark.runsc
def test_the_service_example(shell: Shell) -> None:
    for command, stdout in SERVICE:
        shell.run(command, stdout)
    assert shell.env["HAZMAT_API_KEY"].startswith("hzm_")


# -- What the README says of commands and options ----------------------------------------


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    found: dict[str, argparse.ArgumentParser] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found.update(action.choices)
    return found


def command_of(words: list[str]) -> tuple[list[str], argparse.ArgumentParser, list[str]]:
    """The command `words` (after `hazmat`) name, its parser, and the words past it."""
    path: list[str] = []
    parser = _parser()
    while words and words[0] in subcommands(parser):
        path.append(words[0])
        parser = subcommands(parser)[words.pop(0)]
    return path, parser, words


def options(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {name: action for action in parser._actions for name in action.option_strings}


def unknown_options(parser: argparse.ArgumentParser, words: list[str]) -> list[str]:
    known = options(parser)
    return [w for w in words if w.startswith("-") and w.split("=")[0] not in known]


def synopsis() -> list[tuple[list[str], str]]:
    """(command, what the synopsis gives it) for each command the CLI synopsis names; after
    ` | `, a subcommand of the same group names another command, anything else is an
    alternative of the same one."""
    [block] = [b for b in BLOCKS if b.key == SYNOPSIS]
    entries: list[str] = []
    for line in block.code.splitlines():
        text = re.sub(r"\s+#.*", "", line)
        if line.startswith(" "):
            entries[-1] += " " + text.strip()
        else:
            entries.append(text)
    found = []
    for entry in entries:
        first, *alternatives = entry.removeprefix("hazmat ").split(" | ")
        path, _, rest = command_of(first.split())
        found.append((path, " ".join(rest)))
        for alternative in alternatives:
            word, _, tail = alternative.partition(" ")
            group = command_of(path[:-1])[1]
            if word in subcommands(group):
                path = [*path[:-1], word]
                found.append((path, tail))
            else:
                found.append((path, alternative))
    return found


def test_the_cli_synopsis_is_the_parsers() -> None:
    """Every option the synopsis gives a command is the command's, with the same choices; and
    every subcommand and option of each command group it names is in it (an option may be
    given once for its group: `--log DIR` on `audit verify` stands for every audit command)."""
    wrong, named, given = [], set(), {}
    for path, text in synopsis():
        parser = command_of(list(path))[1]
        named.add(tuple(path))
        flags = re.findall(r"(?<![\w-])--?[a-z][\w-]*", text)
        wrong += [f"{' '.join(path)} {flag}" for flag in unknown_options(parser, flags)]
        for flag, choices in re.findall(r"\[(--[\w-]+) ([\w-]+(?:\|[\w-]+)+)\]", text):
            action = options(parser).get(flag)
            if action is not None and set(choices.split("|")) != set(action.choices or ()):
                wrong.append(f"{' '.join(path)} {flag}: {choices}, the parser {action.choices}")
        given.setdefault(path[0], set()).update(flags)
    for group in given:
        parser = subcommands(_parser())[group]
        leaves = {(group, name): p for name, p in subcommands(parser).items()} or {(group,): parser}
        for path, leaf in leaves.items():
            if path not in named:
                wrong.append(f"the synopsis lacks `hazmat {' '.join(path)}`")
            for action in leaf._actions:
                flags = set(action.option_strings) - {"-h", "--help"}
                if flags and not flags & given[group]:
                    wrong.append(f"the synopsis lacks {' '.join(path)} {sorted(flags)[-1]}")
    assert wrong == []


def hazmat_commands() -> Iterator[tuple[str, list[str]]]:
    """Where, and the words after `hazmat`, of every command README shows: shell lines (past
    `NAME=VALUE` words) and code spans in its prose."""
    for block in BLOCKS:
        for command, _ in command_lines(block) if block.lang == "sh" else []:
            words = shlex.split(command.removesuffix("&"))
            while words and re.fullmatch(r"[A-Z_]+=\S*", words[0]):
                words.pop(0)
            if words[:1] == ["hazmat"]:
                yield f"README.md:{block.line}", words[1:]
    prose = re.sub(r"^```.*?^```", "", README.read_text(), flags=re.DOTALL | re.MULTILINE)
    for span in re.findall(r"`hazmat\s+([a-z][^`]*)`", prose):
        yield "README's prose", span.split()


def test_every_command_the_readme_shows_is_the_clis() -> None:
    wrong, shown = [], set()
    for where, words in hazmat_commands():
        path, parser, rest = command_of(list(words))
        shown.add(path[0] if path else words[0])
        if not path:
            wrong.append(f"{where}: no command `hazmat {words[0]}`")
        wrong += [
            f"{where}: `hazmat {' '.join(path)}` has no {w}" for w in unknown_options(parser, rest)
        ]
    wrong += [f"README never shows `hazmat {name}`" for name in set(COMMANDS) - shown]
    assert wrong == []


def test_every_make_target_the_readme_names_is_the_makefiles() -> None:
    targets = set(re.findall(r"^([\w-]+):", (ROOT / "Makefile").read_text(), re.MULTILINE))
    named = set(re.findall(r"(?:^|`)make ([\w-]+)", README.read_text(), re.MULTILINE))
    assert len(named) > 3 and named <= targets, named - targets


def test_the_exit_status_table_is_hazmat_runs() -> None:
    table = set(re.findall(r"^\|\s*(\d+)\s*\|", README.read_text(), re.MULTILINE))
    help_lists = set(re.findall(r"^  (\d+)\s", RUN_EXITS, re.MULTILINE))
    assert table == help_lists
