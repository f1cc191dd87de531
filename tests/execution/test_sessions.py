"""Sessions on the real engine: a container kept between calls, under runc and runsc.

Each test opens its own session (sessions own a container each; the module's sandbox is shared
and has no pool). Expiry and the CPU budget are checked by calling the janitor's `sweep()`
after moving the session's clock (or using the CPU), never by sleeping; the janitor thread
may get there first, so the tests check the session's state, not who ended it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from hazmat import (
    ImageNotFound,
    InputError,
    Outcome,
    QuotaExceeded,
    Sandbox,
    SessionClosed,
    SessionNotFound,
    parse_policy,
)
from hazmat.audit.log import AuditLog
from hazmat.backends.container.engine import Engine
from hazmat.backends.container.owners import LABEL, owner_labels
from hazmat.backends.docker.driver import DockerBackend
from hazmat.policy import Runtime
from hazmat.sessions import Session
from hazmat.testing import as_asked

pytestmark = pytest.mark.docker
OVERRIDE = "session test: the container must contain this whatever the assessment says"


def records(log_dir: Path) -> list[dict[str, object]]:
    lines = []
    for segment in sorted((log_dir / "segments").glob("*.jsonl")):
        lines += [json.loads(line)["record"] for line in segment.read_text().splitlines()]
    return lines


@pytest.fixture(scope="module")
def audit_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("session-audit")


@pytest.fixture(scope="module")
def sb(engine: Engine, audit_dir: Path) -> Iterator[Sandbox]:
    with Sandbox(as_asked(), backend=DockerBackend(engine), audit=AuditLog(audit_dir)) as sandbox:
        yield sandbox


def session_containers(engine: Engine) -> list[str]:
    """This process's containers that are not a warm pool's (another test's session-scoped
    pooled sandbox may hold some): its sessions' and runs' in progress."""
    mine = f"{LABEL}.owner={owner_labels()[f'{LABEL}.owner']}"
    found = engine.api.containers(all=True, filters={"label": [mine, f"{LABEL}.pooled=0"]})
    return [c["Id"] for c in found]


def test_python_keeps_its_variables_between_calls(sb: Sandbox, runtime: str) -> None:
    with sb.session("python", runtime=runtime) as session:
        first = session.run("import math\ntotal = 6 * 7\nprint('set')")
        assert (first.outcome, first.stdout) == (Outcome.OK, "set\n")
        second = session.run("total + round(math.pi)")
        assert second.stdout == "45\n"  # a final expression's value is printed, as in a notebook
        assert second.runtime.value == runtime


def test_files_stay_and_each_call_gets_its_own_stdin_env_and_args(
    sb: Sandbox, runtime: str
) -> None:
    with sb.session("python", runtime=runtime) as session:
        session.run("open('notes/a.txt', 'w').write('kept')", files={"notes/seed": "x"})
        result = session.run(
            "import os, sys\nprint(open('notes/a.txt').read(), input(), os.environ['WHO'],"
            " sys.argv[1:])",
            stdin="typed\n",
            env={"WHO": "me"},
            args=["--flag"],
        )
        assert result.stdout == "kept typed me ['--flag']\n"
        later = session.run("import os, sys\nprint(os.environ.get('WHO'), sys.argv[1:])")
        assert later.stdout == "None []\n"  # a call's env and args are its own


def test_upload_and_download(sb: Sandbox) -> None:
    with sb.session("python") as session:
        session.upload({"data/in.csv": b"a,b\n1,2\n", "raw.bin": bytes(range(256))})
        session.run(
            "open('data/out.csv', 'w').write(open('data/in.csv').read().upper())\n"
            "assert open('raw.bin', 'rb').read() == bytes(range(256))"
        )
        got = session.download(["data/out.csv", "raw.bin"])
        assert got == {"data/out.csv": b"A,B\n1,2\n", "raw.bin": bytes(range(256))}
        with pytest.raises(InputError, match=re.escape("missing.txt")):
            session.download(["missing.txt"])
        with pytest.raises(InputError, match="unsafe"):
            session.upload({"../escape": b"x"})


def test_an_interpreter_that_dies_is_replaced_and_the_files_stay(sb: Sandbox) -> None:
    with sb.session("python") as session:
        session.run("x = 1\nopen('kept.txt', 'w').write('yes')")
        died = session.run("import os\nos._exit(4)", override_reason=OVERRIDE)
        assert died.exit_code == 4
        assert "the next call starts a new one" in died.stderr
        after = session.run("print('x' in globals(), open('kept.txt').read())")
        assert after.stdout == "False yes\n"


def test_sys_exit_sets_the_status_and_keeps_the_state(sb: Sandbox) -> None:
    with sb.session("python") as session:
        failed = session.run("y = 5\nimport sys\nsys.exit(3)")
        assert (failed.outcome, failed.exit_code) == (Outcome.ERROR, 3)
        raised = session.run("1 / 0")
        assert raised.exit_code == 1 and "ZeroDivisionError" in raised.stderr
        assert "line 1" in raised.stderr
        assert session.run("y").stdout == "5\n"


@pytest.mark.matrix
def test_nothing_a_call_started_outlives_it(sb: Sandbox, runtime: str) -> None:
    with sb.session("python", runtime=runtime) as session:
        session.run(
            "import subprocess\nsubprocess.Popen(['sleep', '300'])", override_reason=OVERRIDE
        )
        probe = session.run(
            "import os\n"
            "names = []\n"
            "for p in os.listdir('/proc'):\n"
            "    if p.isdigit():\n"
            "        names.append(open(f'/proc/{p}/comm').read().strip())\n"
            "print(sorted(names))",
            override_reason=OVERRIDE,
        )
        assert "sleep" not in probe.stdout, probe.stdout


# A child whose first thread exits while another runs on: it shows Z in /proc/<pid>/stat, as a
# zombie would, but lives (the kind of process a cleanup that skips zombies misses)
ZOMBIE_LEADER = (
    "import ctypes, os, threading, time\n"
    "if os.fork() == 0:\n"
    "    def linger():\n"
    "        while True:\n"
    "            open('/tmp/alive', 'w').write(str(time.time()))\n"
    "            time.sleep(0.001)\n"
    "    threading.Thread(target=linger).start()\n"
    "    ctypes.CDLL(None).pthread_exit(None)\n"
    "time.sleep(0.1)\n"
)
MY_OTHERS = (
    "import os\n"
    "mine = [p for p in os.listdir('/proc') if p.isdigit() and int(p) != os.getpid()\n"
    "        and os.stat(f'/proc/{p}').st_uid == os.getuid()]\n"
    "print(len(mine))"
)


def host_processes_of(uid: str) -> list[str]:
    """The host's processes running as `uid` (under runc a sandbox's program is one)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            owner = (entry / "status").read_text().split("\nUid:\t", 1)[1].split("\t", 1)[0]
        except (OSError, IndexError):
            continue
        if owner == uid:
            found.append(entry.name)
    return found


@pytest.mark.matrix
def test_a_process_whose_first_thread_exited_does_not_outlive_a_call_or_the_session(
    sb: Sandbox, engine: Engine, runtime: str
) -> None:
    session = sb.session("python", runtime=runtime)
    left = session.run(ZOMBIE_LEADER, override_reason=OVERRIDE)
    assert left.outcome is Outcome.OK, left.stderr
    assert session.run(MY_OTHERS, override_reason=OVERRIDE).stdout == "0\n"
    cid = left.container_id
    assert cid is not None
    env = engine.api.inspect_container(cid)["Config"]["Env"]
    uid = next(e.split("=", 1)[1] for e in env if e.startswith("HAZMAT_UID="))
    session.close()
    assert cid not in session_containers(engine)
    assert host_processes_of(uid) == []


CAPABILITY_SETS = ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")
PRIVILEGE_PROBES = {
    # the kept interpreter (Python's), the kept shell (Bash's), a program the agent builds and
    # starts each call (C)
    "python": (
        "import os\nprint(open('/proc/self/status').read())\n"
        "print('hazmat variables:', sum(k.startswith('HAZMAT_') for k in os.environ))"
    ),
    "bash": 'cat /proc/self/status; echo "hazmat variables: $(env | grep -c ^HAZMAT_)"',
    "c": (
        "#include <stdio.h>\n#include <string.h>\nextern char **environ;\n"
        "int main(void) {\n  char line[512]; int n = 0;\n"
        "  FILE *f = fopen(\"/proc/self/status\", \"r\");\n"
        "  while (fgets(line, sizeof line, f)) fputs(line, stdout);\n"
        "  for (char **e = environ; *e; e++) n += strncmp(*e, \"HAZMAT_\", 7) == 0;\n"
        "  printf(\"hazmat variables: %d\\n\", n);\n  return 0;\n}\n"
    ),
}


@pytest.mark.matrix
@pytest.mark.parametrize("language", sorted(PRIVILEGE_PROBES))
def test_a_sessions_program_holds_no_privilege_and_nothing_of_hazmats(
    sb: Sandbox, runtime: str, language: str
) -> None:
    """Whatever the agent starts in a session runs as the session's uid, in no group, with
    every capability set empty and no HAZMAT_ variable, on its second call as on its first."""
    with sb.session(language, runtime=runtime) as session:
        for _ in range(2):
            probe = session.run(PRIVILEGE_PROBES[language], override_reason=OVERRIDE)
            assert probe.outcome is Outcome.OK, probe.stderr
            status = dict(
                line.split(":", 1) for line in probe.stdout.splitlines() if ":" in line
            )
            uids = {*status["Uid"].split(), *status["Gid"].split()}
            assert len(uids) == 1 and int(uids.pop()) >= 1_500_000_000, status
            assert status["Groups"].strip() == "", status
            for field in CAPABILITY_SETS:  # (gVisor lists no CapAmb)
                assert int(status.get(field, "0"), 16) == 0, (field, status.get(field))
            assert set(CAPABILITY_SETS[:4]) <= status.keys()
            if runtime == "runc":  # (gVisor lists no NoNewPrivs; the engine's setting, checked)
                assert status["NoNewPrivs"].strip() == "1"
            assert status["hazmat variables"].strip() == "0"


def test_a_forged_end_marker_is_only_output(sb: Sandbox) -> None:
    with sb.session("python") as session:
        fake = "\n--hazmat-end-0123456789abcdef0123456789abcdef-- 0\n"
        result = session.run(f"print({fake!r})\nimport sys\nsys.exit(7)")
        assert result.exit_code == 7
        assert fake in result.stdout


def test_output_between_calls_goes_to_the_next_call(sb: Sandbox) -> None:
    with sb.session("python") as session:
        session.run(
            "import threading, sys, os\n"
            "gate = threading.Event()\n"
            "def later():\n"
            "    gate.wait()\n"
            "    os.write(1, b'from the thread\\n')\n"
            "threading.Thread(target=later, daemon=True).start()"
        )
        # the thread writes once this call has set the gate; whatever order the bytes take,
        # the calls stay in step: each result has its own exit status
        first = session.run("gate.set()\nimport time\ntime.sleep(0.2)\nprint('done')")
        second = session.run("print('next')")
        together = first.stdout + second.stdout
        assert together.count("from the thread") == 1
        assert first.stdout.endswith("done\n") and second.stdout.endswith("next\n")


@pytest.mark.matrix
def test_a_call_past_its_time_is_interrupted_and_the_session_goes_on(
    sb: Sandbox, engine: Engine, runtime: str
) -> None:
    session = sb.session("python", runtime=runtime)
    cid = session._backend.container_id
    session.run("open('kept.txt', 'w').write('file')\nbefore = 41")
    slow = session.run("n = 0\nwhile True:\n    n += 1", timeout=1)
    assert slow.outcome is Outcome.TIMEOUT
    assert slow.stderr.rstrip().endswith("KeyboardInterrupt")
    assert 'File "<string>"' not in slow.stderr  # only the program's own frames
    assert any("still open, with its variables and files" in note for note in slow.notes)
    after = session.run("print(before + 1, n > 0, open('kept.txt').read())")
    assert after.stdout == "42 True file\n"
    assert session._backend.container_id == cid and cid in session_containers(engine)
    session.close()
    assert cid not in session_containers(engine)


def test_a_cell_that_will_not_stop_loses_its_variables_not_its_files(engine: Engine) -> None:
    policy = parse_policy({"sessions": {"interrupt_grace_s": 0.5}})
    with Sandbox(as_asked(policy), backend=DockerBackend(engine)) as sandbox:
        session = sandbox.session("python")
        session.run("open('kept.txt', 'w').write('file')\nbefore = 1")
        stubborn = session.run(
            "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass",
            timeout=1,
        )
        assert stubborn.outcome is Outcome.TIMEOUT
        assert any("did not stop within 0.5 s" in note for note in stubborn.notes)
        assert any("its variables are gone" in note for note in stubborn.notes)
        after = session.run("print(open('kept.txt').read(), 'before' in globals())")
        assert after.stdout == "file False\n"
        session.close()


@pytest.mark.parametrize(
    ("language", "setup", "slow", "check", "seen"),
    [
        ("bash", "x=5; cd /tmp", "while :; do :; done", 'echo "$x $PWD"', "5 /tmp\n"),
        (
            "javascript",
            "require('fs').writeFileSync('kept.txt', 'file')",
            "setInterval(() => {}, 1000)",
            "console.log(require('fs').readFileSync('kept.txt', 'utf8'))",
            "file\n",
        ),
    ],
)
def test_a_slow_call_keeps_the_session_in_other_languages(
    sb: Sandbox, language: str, setup: str, slow: str, check: str, seen: str
) -> None:
    with sb.session(language) as session:
        session.run(setup)
        result = session.run(slow, timeout=1)
        assert result.outcome is Outcome.TIMEOUT
        assert any("the session is still open" in note for note in result.notes)
        assert session.run(check).stdout == seen


def test_an_ended_session_refuses_its_calls_and_says_why(sb: Sandbox, engine: Engine) -> None:
    session = sb.session("python")
    cid = session._backend.container_id
    session.close()
    assert cid not in session_containers(engine)
    with pytest.raises(SessionClosed, match="it was closed"):
        session.run("print(1)")
    with pytest.raises(SessionClosed, match="it was closed"):
        sb.sessions.get(session.id)  # the book remembers why, for the service's 410
    with pytest.raises(SessionNotFound):
        sb.sessions.get("s-0000000000000000")


@pytest.mark.matrix
def test_the_memory_limit_ends_the_call_not_the_session(sb: Sandbox, runtime: str) -> None:
    """The interpreter's address space is the session's memory (backends/inside/repl.py): an
    allocation past it is a MemoryError in the call, under runc and under runsc alike (where
    the host's OOM killer would end the whole sandbox), and the session keeps its variables
    and files; so does one that grows a little at a time."""
    session = sb.session("python", runtime=runtime)
    session.run("kept = 41\nopen('still.txt', 'w').write('here')")
    big = session.run("x = 'x' * (1024**3)", override_reason=OVERRIDE)
    assert big.outcome is Outcome.MEMORY_LIMIT, (big.error, big.stderr)
    assert big.exception is not None and big.exception.name == "MemoryError"
    assert any("the session is still open, with its variables" in n for n in big.notes)
    grown = session.run("chunks = []\nwhile True:\n    chunks.append(b'y' * 2**20)")
    assert grown.outcome is Outcome.MEMORY_LIMIT, (grown.error, grown.stderr)
    after = session.run("del chunks\nprint(kept + 1, open('still.txt').read())")
    assert after.stdout == "42 here\n", (after.stderr, after.notes)
    session.close()


def test_a_call_over_the_memory_limit_under_runsc_keeps_the_session_and_its_files(
    sb: Sandbox,
) -> None:
    """gVisor has no OOM killer of its own: under runsc the host watches a session's call and
    ends it once its memory passes the limit (backends/container/memory.py), before the host's
    OOM killer would end the whole sandbox. The call is memory_limit and the session goes on
    with its files (JavaScript keeps no interpreter between calls; 4 MB at a time, as fast as
    it can). Under runc the kernel's OOM killer is the watch (and it may first reclaim the
    program's own code from the page cache for as long as the call's time lasts)."""
    session = sb.session("javascript", runtime=Runtime.RUNSC.value)
    session.run("require('fs').writeFileSync('k.txt', 'kept')")
    big = session.run(
        "const a = [];\nfor (;;) a.push(Buffer.alloc(4 << 20, 1));", override_reason=OVERRIDE
    )
    assert big.outcome is Outcome.MEMORY_LIMIT, (big.error, big.notes)
    assert any("the session is still open, with its files." in n for n in big.notes), big.notes
    after = session.run("console.log(require('fs').readFileSync('k.txt', 'utf8'))")
    assert after.outcome is Outcome.OK and after.stdout == "kept\n", (after.error, after.notes)
    session.close()


def test_an_interpreter_past_the_memory_limit_under_runsc_is_ended_not_its_session(
    sb: Sandbox,
) -> None:
    """A Python program may raise its own address-space limit (inside/repl.py's is not the
    boundary): past the memory limit under runsc the host ends the call, the interpreter too,
    and the session goes on with its files, saying its variables are gone. On cgroup v2 the
    kernel also slows the sandbox's allocations from halfway up the backstop (memory.high)."""
    session = sb.session("python", runtime=Runtime.RUNSC.value)
    session.run("kept = 41\nopen('still.txt', 'w').write('here')")
    big = session.run(
        "import resource\nresource.setrlimit(resource.RLIMIT_AS, (resource.RLIM_INFINITY,) * 2)"
        "\nchunks = []\nwhile True:\n    chunks.append(b'y' * 2**22)",
        override_reason=OVERRIDE,
    )
    assert big.outcome is Outcome.MEMORY_LIMIT, (big.error, big.notes)
    gone = "the interpreter too; the session is still open with its files, but its variables"
    assert any(gone in note for note in big.notes), big.notes
    cgroup = session._backend.started.cgroup if session._backend.started else None
    if cgroup is not None and cgroup.unified:
        high, limit = (int((cgroup.memory / f"memory.{n}").read_text()) for n in ("high", "max"))
        assert high < limit, (high, limit)
    after = session.run("print(open('still.txt').read())\nprint(kept)")
    assert after.stdout == "here\n" and after.exception is not None, after.stderr
    assert after.exception.name == "NameError"
    session.close()


@pytest.mark.parametrize(
    ("language", "write", "read"),
    [
        (
            "javascript",
            "require('fs').writeFileSync('k.txt', 'js'); console.log('w')",
            "console.log(require('fs').readFileSync('k.txt', 'utf8'))",
        ),
        (
            "typescript",
            "import { writeFileSync } from 'fs';\nconst v: string = 'ts';\n"
            "writeFileSync('k.txt', v);",
            "import { readFileSync } from 'fs';\nconsole.log(readFileSync('k.txt', 'utf8'));",
        ),
        (
            "go",
            'package main\nimport "os"\nfunc main() { os.WriteFile("k.txt", []byte("go"), 0o600) }',
            'package main\nimport ("fmt"; "os")\n'
            'func main() { b, _ := os.ReadFile("k.txt"); fmt.Println(string(b)) }',
        ),
        (
            "c",
            '#include <stdio.h>\nint main(void) { fputs("c", fopen("k.txt", "w")); return 0; }',
            "#include <stdio.h>\nint main(void) { char b[8] = {0}; fread(b, 1, 7,"
            ' fopen("k.txt", "r")); puts(b); return 0; }',
        ),
        (
            "cpp",
            '#include <fstream>\nint main() { std::ofstream("k.txt") << "cpp"; }',
            '#include <bits/stdc++.h>\nint main() { std::ifstream f("k.txt"); std::string s;'
            " f >> s; std::cout << s << std::endl; }",
        ),
        (
            "java",
            "import java.nio.file.*;\npublic class W { public static void main(String[] a)"
            ' throws Exception { Files.writeString(Path.of("k.txt"), "java"); } }',
            "import java.nio.file.*;\npublic class R { public static void main(String[] a)"
            ' throws Exception { System.out.println(Files.readString(Path.of("k.txt"))); } }',
        ),
        (
            "rust",
            'fn main() { std::fs::write("k.txt", "rust").unwrap(); }',
            'fn main() { println!("{}", std::fs::read_to_string("k.txt").unwrap()); }',
        ),
        ("ruby", 'File.write("k.txt", "ruby")', 'puts File.read("k.txt")'),
    ],
)
def test_other_languages_keep_their_files(
    sb: Sandbox, language: str, write: str, read: str
) -> None:
    with sb.session(language, trust="trusted", runtime="runc") as session:
        assert session.run(write).outcome is Outcome.OK
        result = session.run(read)
        assert result.outcome is Outcome.OK, result.stderr
        short = {"javascript": "js", "typescript": "ts"}
        assert result.stdout.strip() == short.get(language, language)


def test_bash_keeps_its_directory_variables_and_functions_like_a_terminal(
    sb: Sandbox, runtime: str
) -> None:
    with sb.session("bash", runtime=runtime) as session:
        first = session.run(
            "mkdir -p data && cd data\ncount=41\nexport ANSWER=yes\n"
            'greet() { echo "hi $1"; }\necho set'
        )
        assert (first.outcome, first.stdout) == (Outcome.OK, "set\n"), first
        second = session.run(
            'pwd; echo $((count + 1)) "$ANSWER"; greet there; sh -c \'echo "$ANSWER"\'',
            stdin="unused\n",
        )
        assert second.stdout == "/work/data\n42 yes\nhi there\nyes\n", second
        # each call gets its own args and stdin; its status is its last command's
        third = session.run(
            'read line\necho "$line" "$#" "$1"\nfalse', stdin="typed\n", args=["a1"]
        )
        assert (third.exit_code, third.stdout) == (1, "typed 1 a1\n"), third
        fourth = session.run('echo "$#" $count; echo "unterminated')
        assert fourth.exit_code == 2 and "unexpected EOF" in fourth.stderr, fourth
        fifth = session.run("echo $count")
        assert (fifth.outcome, fifth.stdout) == (Outcome.OK, "41\n"), fifth


def test_exit_ends_the_shell_and_the_next_call_starts_a_new_one(sb: Sandbox) -> None:
    with sb.session("bash", runtime="runc") as session:
        session.run("cd /tmp\nkept=1\necho file > /work/f.txt")
        ended = session.run("exit 4")
        assert ended.exit_code == 4 and "the shell ended (status 4)" in ended.stderr, ended
        after = session.run('pwd; echo "[$kept]"; cat f.txt; kept=2')
        assert after.stdout == "/work\n[]\nfile\n", after
        # as in a terminal, `set -e` and a failing command end the shell too
        failed = session.run("set -e\nfalse\necho not reached")
        assert failed.exit_code == 1 and "the shell ended (status 1)" in failed.stderr, failed
        assert session.run('echo "[$kept]"').stdout == "[]\n"


def test_an_esm_call_after_a_commonjs_one_runs_the_new_source(sb: Sandbox) -> None:
    with sb.session("javascript", trust="trusted", runtime="runc") as session:
        assert session.run("console.log('cjs')").stdout == "cjs\n"
        esm = session.run("const x = await Promise.resolve('esm');\nconsole.log(x)")
        assert esm.stdout == "esm\n", esm.stderr
        assert session.run("console.log(typeof require)").stdout == "function\n"


def test_blocked_code_is_refused_and_the_session_goes_on(sb: Sandbox) -> None:
    with sb.session("python") as session:
        session.run("z = 3")
        blocked = session.run("().__class__.__base__.__subclasses__()")
        assert blocked.outcome is Outcome.BLOCKED
        assert session.run("z").stdout == "3\n"


def test_options_fixed_at_opening_are_refused_per_call(sb: Sandbox) -> None:
    with sb.session("python") as session:
        with pytest.raises(InputError, match="fixed when the session opened"):
            session.run("print(1)", trust="trusted")  # type: ignore[call-arg]
        with pytest.raises(InputError, match="fixed when the session opened"):
            session.run("print(1)", memory_mb=64)  # type: ignore[call-arg]


def test_every_call_and_file_transfer_is_recorded(sb: Sandbox, audit_dir: Path) -> None:
    with sb.session("python", caller="tester") as session:
        session.run("a = 1")
        session.upload({"up.txt": b"u"})
        session.download(["up.txt"])
        sid = session.id
    every = records(audit_dir)
    mine = [r for r in every if r["data"].get("session") == sid]  # type: ignore[attr-defined]
    kinds = [r["kind"] for r in mine]
    assert kinds == [
        "session.opened",
        "run.started",
        "session.files",
        "session.files",
        "session.ended",
    ]
    data = [r["data"] for r in mine]
    started = data[1]
    assert started["caller"] == "tester"  # type: ignore[index]
    finished = [r for r in every if r["kind"] == "run.finished"]
    assert any(r["data"]["run"] == started["run"] for r in finished)  # type: ignore[index]
    assert list(data[2]["uploaded"]) == ["up.txt"]  # type: ignore[index]
    assert list(data[3]["downloaded"]) == ["up.txt"]  # type: ignore[index]
    assert data[4]["why"] == "it was closed"  # type: ignore[index]


def _sandbox(engine: Engine, tmp_path: Path, sessions: dict[str, object]) -> Sandbox:
    policy = parse_policy({"sessions": sessions})
    return Sandbox(as_asked(policy), backend=DockerBackend(engine), audit=AuditLog(tmp_path))


def test_idle_and_lifetime_expiry_end_a_session(engine: Engine, tmp_path: Path) -> None:
    with _sandbox(engine, tmp_path, {"idle_s": 30, "lifetime_s": 120}) as sandbox:
        idle = sandbox.session("python")
        old = sandbox.session("python")
        idle.last_used -= 31
        old.opened -= 121
        old.last_used = old.opened + 200  # used recently: only the lifetime is past
        sandbox.sessions.sweep()  # the janitor thread may have done it first: same result
        assert sandbox.sessions.all() == []
        with pytest.raises(SessionClosed, match="idle for 30 s"):
            idle.run("print(1)")
        with pytest.raises(SessionClosed, match="lifetime"):
            old.run("print(1)")
        assert session_containers(engine) == []


def test_the_cpu_budget_ends_a_session(engine: Engine, tmp_path: Path) -> None:
    """The budget is looked at once a second, during calls too: a call that passes it is
    killed then and there (not at its own 30 s), and its result says why."""
    with _sandbox(engine, tmp_path, {"cpu_s": 1}) as sandbox:
        session = sandbox.session("python", trust="trusted", runtime="runc")
        result = session.run(
            "import time\nend = time.process_time() + 30\nwhile time.process_time() < end:\n"
            "    pass",
            timeout=30,
        )
        sandbox.sessions.sweep()  # the janitor thread did it during the call; once more
        assert session.ended == "it used its CPU budget (1 s)"
        # killed by the session, not stopped by its own limit nor lost with its container
        assert result.outcome not in (Outcome.OK, Outcome.TIMEOUT, Outcome.INFRA_ERROR), result
        assert "the session ended during the call: it used its CPU budget (1 s)" in result.notes
        with pytest.raises(SessionClosed, match="CPU budget"):
            session.run("print(1)")


def test_at_most_max_open_sessions(engine: Engine, tmp_path: Path) -> None:
    with _sandbox(engine, tmp_path, {"max_open": 1}) as sandbox:
        first = sandbox.session("python")
        with pytest.raises(QuotaExceeded, match=re.escape("sessions.max_open")) as refused:
            sandbox.session("python")
        assert refused.value.retry_after_s > 0
        first.close()
        sandbox.session("python").close()


def test_parallel_opens_cannot_pass_max_open_together(engine: Engine, tmp_path: Path) -> None:
    """max_open 2 with one open: of two opens at once exactly one starts a container; the
    place is taken before the start and given back when an open fails."""
    with _sandbox(engine, tmp_path, {"max_open": 2}) as sandbox:
        first = sandbox.session("python", runtime="runc")

        def try_open(_: int) -> Session | QuotaExceeded:
            try:
                return sandbox.session("python", runtime="runc")
            except QuotaExceeded as exc:
                return exc

        with ThreadPoolExecutor(2) as pool:
            got = list(pool.map(try_open, range(2)))
        opened = [s for s in got if isinstance(s, Session)]
        assert len(opened) == 1 and len(got) - len(opened) == 1, got
        assert len(sandbox.sessions.all()) == 2
        for session in (first, *opened):
            session.close()
    assert session_containers(engine) == []


def test_an_open_that_fails_gives_its_place_back(engine: Engine, tmp_path: Path) -> None:
    policy = parse_policy(
        {"images": {"python": "hazmat-test/never-built:1"}, "sessions": {"max_open": 1}}
    )
    with Sandbox(
        as_asked(policy), backend=DockerBackend(engine), audit=AuditLog(tmp_path)
    ) as sandbox:
        for _ in range(2):  # the second would be QuotaExceeded had the first kept its place
            with pytest.raises(ImageNotFound, match="never-built"):
                sandbox.session("python", runtime="runc")
        assert sandbox.sessions.all() == []


def test_closing_the_sandbox_ends_its_sessions(engine: Engine, tmp_path: Path) -> None:
    sandbox = _sandbox(engine, tmp_path, {})
    session = sandbox.session("python")
    sandbox.close()
    assert session.ended == "its sandbox closed"
    assert session_containers(engine) == []


def test_a_missing_image_fails_the_opening_clearly(engine: Engine, tmp_path: Path) -> None:
    policy = parse_policy({"images": {"python": "hazmat-test/never-built:1"}})
    with Sandbox(
        as_asked(policy), backend=DockerBackend(engine), audit=AuditLog(tmp_path)
    ) as sandbox:
        with pytest.raises(ImageNotFound) as missing:
            sandbox.session("python", runtime="runc")
        assert sandbox.sessions.all() == []
    assert str(missing.value).startswith(
        "image hazmat-test/never-built:1 is not on the Docker engine; hazmat never pulls"
    )


def test_a_killed_session_container_is_reported_not_hung(sb: Sandbox, engine: Engine) -> None:
    session = sb.session("python")
    cid = session._backend.container_id
    engine.api.kill(cid)
    result = session.run("print(1)")
    assert result.outcome is Outcome.INFRA_ERROR or any(
        "the session ended" in note for note in result.notes
    )
    with pytest.raises(SessionClosed):
        session.run("print(1)")


def test_arun_keeps_state_too(sb: Sandbox) -> None:
    import asyncio

    async def calls() -> list[str]:
        with sb.session("python") as session:
            await session.arun("n = 2")
            return [(await session.arun(code)).stdout for code in ("n * 21", "n + 1")]

    assert asyncio.run(calls()) == ["42\n", "3\n"]


FLOODS = {  # what defines x = 41, floods stdout, then uses x
    "python": ("x = 41", "import sys\nwhile True:\n    sys.stdout.write('x' * 99999)", "x + 1"),
    "bash": ("x=41", "yes", "echo $((x + 1))"),
}


@pytest.mark.matrix
@pytest.mark.parametrize("language", sorted(FLOODS))
def test_a_call_over_the_output_limit_is_stopped_and_the_session_goes_on(
    sb: Sandbox, engine: Engine, runtime: str, language: str
) -> None:
    define, flood, use = FLOODS[language]
    with sb.session(language, runtime=runtime) as session:
        cid = session._backend.container_id
        session.run(define)
        loud = session.run(flood)
        assert loud.outcome is Outcome.OUTPUT_LIMIT and loud.truncated
        assert any(
            "wrote more than its output limit" in n and "still open, with its variables" in n
            for n in loud.notes
        ), loud.notes
        assert session.run(use).stdout == "42\n"  # the interpreter (or shell) kept
        assert cid in session_containers(engine)


