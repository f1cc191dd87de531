"""The API's contract with its callers: options that fail loudly, one validation for every way
in, results that explain themselves, a closed state, and housekeeping after the record."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest

from hazmat import (
    ClosedError,
    ExecutionRequest,
    InputError,
    InputTooLarge,
    Outcome,
    Policy,
    Sandbox,
    TrustLevel,
    UnsafeFileName,
)
from hazmat.audit.log import AuditLog
from hazmat.backends.base import Job, RunReport
from hazmat.testing import RecordingBackend, audit_records, report


def run(**options: Any) -> Job:
    backend = RecordingBackend()
    with Sandbox(Policy(), backend=backend) as sandbox:
        sandbox.run("print(1)", **options)
    return backend.jobs[0]


@pytest.mark.parametrize(
    ("options", "text"),
    [
        ({"timeout_s": 2}, r"unknown option 'timeout_s'; did you mean 'timeout'\?"),
        ({"memory": 64}, r"did you mean 'memory_mb'\?"),
        ({"environment": {"A": "1"}}, r"did you mean 'env'\?"),
        ({"colour": "red"}, "valid options: args, build_flags, caller, clock, compile_timeout,"),
        ({"flags": ["-O2"]}, r"unknown option 'flags'; did you mean 'build_flags'\?"),
        ({"files": ["a.txt"]}, "option 'files' must be a mapping"),
        ({"output_files": "out.txt"}, "option 'output_files' must be a list of relative paths"),
        ({"timeout": "5"}, "option 'timeout' must be seconds"),
        ({"timeout": True}, "option 'timeout' must be seconds"),
        ({"timeout": float("nan")}, "positive number of seconds"),
        ({"memory_mb": 64.5}, "option 'memory_mb' must be megabytes"),
        ({"stdin": 5}, "option 'stdin' must be str or bytes"),
        ({"env": {"1X": "a"}}, "not a valid variable name"),
        ({"env": {"HAZMAT_RUN": "x"}}, "reserved for the sandbox"),
        ({"env": {"PATH": "/evil"}}, "reserved for the sandbox"),
        ({"env": {"A": 1}}, "env value of 'A' must be str"),
        ({"env": {"A": "a\x00b"}}, "NUL"),
        ({"args": "-v"}, "option 'args' must be a list of str"),
        ({"args": ["ok", 3]}, r"args\[1\] must be str"),
        ({"files": {"a": "x", "a/b": "y"}}, "input file 'a' is also the folder of 'a/b'"),
        ({"files": {"a//b": "x"}}, "empty"),
        ({"files": {"/etc/x": "x"}}, "absolute"),
        ({"output_files": ["out/../x"]}, "directory reference"),
    ],
)
def test_wrong_options_raise_input_error_naming_the_problem(
    options: dict[str, Any], text: str
) -> None:
    with pytest.raises(InputError, match=text):
        run(**options)


def test_oversized_env_and_args_are_refused() -> None:
    with pytest.raises(InputTooLarge, match="env and args come to"):
        run(env={"BIG": "x" * 70_000})


def test_env_args_and_nested_paths_reach_the_job() -> None:
    job = run(
        env={"GREETING": "hi", "EMPTY": ""},
        args=["--name", "x y"],
        files={"data/in.csv": "a,b"},
        output_files=["out/result.json"],
    )
    assert dict(job.program.env) == {"GREETING": "hi", "EMPTY": ""}
    assert tuple(job.program.args) == ("--name", "x y")
    assert job.program.files["data/in.csv"] == b"a,b"
    assert tuple(job.program.want) == ("out/result.json",)


@pytest.mark.parametrize(
    ("changes", "error"),
    [
        ({"files": {"../x": b""}}, UnsafeFileName),
        ({"files": ["a"]}, InputError),
        ({"files": {"a": "text, not bytes"}}, InputError),
        ({"output_files": "out.txt"}, InputError),
        ({"env": {"bad name": "x"}}, InputError),
        ({"args": "abc"}, InputError),
        ({"trust": "untrusted"}, InputError),
        ({"code": ""}, InputError),
        ({"language": "cobol"}, InputError),
        ({"stdin": b"x" * (1024 * 1024 + 1)}, InputTooLarge),
        ({"override_reason": "short"}, InputError),
        ({"caller": 7}, InputError),
    ],
)
def test_a_request_built_by_hand_is_checked_by_execute(
    changes: dict[str, Any], error: type[Exception]
) -> None:
    fields: dict[str, Any] = {
        "code": "print(1)",
        "language": "python",
        "trust": TrustLevel.UNTRUSTED,
    }
    request = ExecutionRequest(**{**fields, **changes})
    backend = RecordingBackend()
    with Sandbox(Policy(), backend=backend) as sandbox, pytest.raises(error):
        sandbox.execute(request)
    assert backend.jobs == []


def test_arun_refuses_bad_options_before_any_thread() -> None:
    with (
        Sandbox(Policy(), backend=RecordingBackend()) as sandbox,
        pytest.raises(InputError, match="did you mean 'timeout'"),
    ):
        asyncio.run(sandbox.arun("print(1)", timeout_s=1))  # type: ignore[call-arg]


@pytest.mark.parametrize(
    ("facts", "outcome", "exit_code", "error"),
    [
        ({}, Outcome.OK, 0, None),
        (
            {"exit_code": 1, "stderr": b"Traceback...\nValueError: bad\n"},
            Outcome.ERROR,
            1,
            "the program exited with status 1: ValueError: bad",
        ),
        (
            {
                "exit_code": 1,
                "stderr": b"TypeError: x\n    at f (/work/main.js:1)\n\nNode.js v18\n",
            },
            Outcome.ERROR,
            1,
            "the program exited with status 1: TypeError: x",
        ),
        (  # a bare Error: the sentence names it, not the last frame of the stack
            {
                "exit_code": 1,
                "stderr": b"/work/main.js:1\nthrow new Error('boom');\n^\n\nError: boom\n"
                b"    at Object.<anonymous> (/work/main.js:1:7)\n"
                b"    at process.processImmediate (node:internal/timers:485:21)\n\nNode.js v20\n",
            },
            Outcome.ERROR,
            1,
            "the program exited with status 1: Error: boom",
        ),
        (
            {
                "exit_code": 1,
                "stderr": b"node:internal/modules/cjs/loader:1228\n  throw err;\n  ^\n\n"
                b"Error: Cannot find module 'left-pad'\nRequire stack:\n- /work/main.js\n"
                b"    at Module._resolveFilename (node:internal/modules/cjs/loader:1225:15)\n"
                b"  code: 'MODULE_NOT_FOUND',\n  requireStack: [ '/work/main.js' ]\n}\n",
            },
            Outcome.ERROR,
            1,
            "the program exited with status 1: Error: Cannot find module 'left-pad'",
        ),
        (  # the compiler's first diagnostic, not the search path after it
            {
                "exit_code": 1,
                "build_status": 1,
                "stderr": b'main.go:3:8: cannot find package "github.com/x/y" in any of:\n'
                b"\t/usr/lib/go/src/github.com/x/y (from $GOROOT)\n"
                b"\t/tmp/go/src/github.com/x/y (from $GOPATH)\n",
            },
            Outcome.COMPILE_ERROR,
            1,
            'compilation failed with status 1: main.go:3:8: cannot find package "github.com/x/y"',
        ),
        (
            {
                "exit_code": 1,
                "build_status": 1,
                "stderr": b"# command-line-arguments\n./main.go:3:2: undefined: x\n"
                b"./main.go:4:2: undefined: y\n",
            },
            Outcome.COMPILE_ERROR,
            1,
            "compilation failed with status 1: ./main.go:3:2: undefined: x",
        ),
        (
            {
                "exit_code": 1,
                "build_status": 1,
                "stderr": '✘ [ERROR] Expected ";" but found "b"\n\n    main.ts:1:6:\n'
                "      1 │ let a b\n        ╵       ^\n\n1 error\n".encode(),
            },
            Outcome.COMPILE_ERROR,
            1,
            'compilation failed with status 1: ✘ [ERROR] Expected ";" but found "b"',
        ),
        (  # the compiler killed at the memory limit: its build failed, but that is not the code's
            {"exit_code": 1, "build_status": 1, "oom_killed": True, "stderr": b"signal: killed\n"},
            Outcome.MEMORY_LIMIT,
            137,
            "the build step was killed at its memory limit of 512 MB (compile_memory_mb); the "
            "program did not run",
        ),
        (  # the build was done but left more in use than the program may have
            {"exit_code": 137, "build_status": 0, "held_after_build": 300 * 1024 * 1024},
            Outcome.MEMORY_LIMIT,
            137,
            "what the build left (300 MB in use: its files and the sandbox's own memory) did "
            "not fit in the program's memory limit of 256 MB; the program did not run",
        ),
        ({"exit_code": 3}, Outcome.ERROR, 3, "the program exited with status 3"),
        ({"exit_code": 130}, Outcome.ERROR, 130, "the program exited with status 130 (SIGINT)"),
        (  # a C program's segmentation fault: the shell's status, and the signal it stands for
            {"exit_code": 139},
            Outcome.ERROR,
            139,
            "the program exited with status 139 (SIGSEGV)",
        ),
        (
            {
                "exit_code": 1,
                "stderr": b'Exception in thread "main" java.lang.IllegalStateException: boom\n'
                b"\tat Main.run(Main.java:7)\n\tat Main.main(Main.java:3)\n",
            },
            Outcome.ERROR,
            1,
            'the program exited with status 1: Exception in thread "main" '
            "java.lang.IllegalStateException: boom",
        ),
        (  # Ruby names the error class last on the first line, then the backtrace
            {
                "exit_code": 1,
                "stderr": b"main.rb:2:in 'Integer#/': divided by 0 (ZeroDivisionError)\n"
                b"\tfrom main.rb:2:in 'Object#f'\n\tfrom main.rb:4:in '<main>'\n",
            },
            Outcome.ERROR,
            1,
            "the program exited with status 1: main.rb:2:in 'Integer#/': divided by 0 "
            "(ZeroDivisionError)",
        ),
        (  # Rust prints a panic's message on the line after it, then a hint about backtraces
            {
                "exit_code": 101,
                "stderr": b"\nthread 'main' panicked at main.rs:2:5:\nboom\n"
                b"note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n",
            },
            Outcome.ERROR,
            101,
            "the program exited with status 101: thread 'main' panicked at main.rs:2:5: boom",
        ),
        (
            {"exit_code": 127, "stderr": b"main.sh: line 3: frobnicate: command not found\n"},
            Outcome.ERROR,
            127,
            "the program exited with status 127: main.sh: line 3: frobnicate: command not found",
        ),
        (
            {
                "exit_code": 134,
                "stderr": b"terminate called after throwing an instance of 'std::runtime_error'\n"
                b"  what():  boom\nAborted\n",
            },
            Outcome.ERROR,
            134,
            "the program exited with status 134 (SIGABRT): what():  boom",
        ),
        (  # gcc: the first error, not a warning before it
            {
                "exit_code": 1,
                "build_status": 1,
                "stderr": b"main.c: In function 'main':\n"
                b"main.c:3:9: warning: unused variable 'x' [-Wunused-variable]\n"
                b"main.c:4:5: error: 'y' undeclared (first use in this function)\n",
            },
            Outcome.COMPILE_ERROR,
            1,
            "compilation failed with status 1: main.c:4:5: error: 'y' undeclared "
            "(first use in this function)",
        ),
        (  # rustc: an error with its code, after a warning
            {
                "exit_code": 1,
                "build_status": 1,
                "stderr": b"warning: unused variable: `a`\n --> main.rs:2:9\n"
                b"error[E0425]: cannot find value `x` in this scope\n --> main.rs:3:20\n"
                b"error: aborting due to 1 previous error; 1 warning emitted\n",
            },
            Outcome.COMPILE_ERROR,
            1,
            "compilation failed with status 1: error[E0425]: cannot find value `x` in this scope",
        ),
        (
            {
                "exit_code": 1,
                "build_status": 1,
                "stderr": b"/tmp/.hazmat-build/src/Greeter.java:3: error: ';' expected\n"
                b"        int x = 1\n                 ^\n1 error\n",
            },
            Outcome.COMPILE_ERROR,
            1,
            "compilation failed with status 1: /tmp/.hazmat-build/src/Greeter.java:3: error: "
            "';' expected",
        ),
        (
            {"exit_code": 137, "timed_out": True},
            Outcome.TIMEOUT,
            124,
            "the program was stopped at its time limit of 15 s",
        ),
        (
            {"exit_code": 137, "cancelled": True, "oom_killed": True},  # the caller came first
            Outcome.CANCELLED,
            130,
            "the run was stopped by its caller",
        ),
        (
            {"exit_code": 137, "oom_killed": True},
            Outcome.MEMORY_LIMIT,
            137,
            "the program was killed at its memory limit of 256 MB",
        ),
        (
            {"exit_code": None, "output_exceeded": True},
            Outcome.OUTPUT_LIMIT,
            141,
            "the program was stopped after writing more than its output limit of",
        ),
    ],
)
def test_every_result_that_is_not_ok_explains_itself_and_exit_codes_match_the_cli(
    facts: dict[str, Any], outcome: Outcome, exit_code: int, error: str | None
) -> None:
    backend = RecordingBackend(report(**facts))
    with Sandbox(Policy(), backend=backend) as sandbox:
        result = sandbox.run("print(1)")
    assert result.outcome is outcome
    assert result.exit_code == exit_code == result.exit_status
    if error is None:
        assert result.error is None
    else:
        assert result.error is not None and result.error.startswith(error)


def test_blocked_and_infra_results_carry_a_sentence_and_the_outcome_status() -> None:
    from hazmat import EngineUnavailable

    with Sandbox(Policy(), backend=RecordingBackend()) as sandbox:
        blocked = sandbox.run("import ctypes\nctypes.CDLL(None)")
    assert blocked.outcome is Outcome.BLOCKED and blocked.exit_status == 126
    assert blocked.error and blocked.error.startswith("blocked by the static assessment")
    backend = RecordingBackend(error=EngineUnavailable("engine gone"))
    with Sandbox(Policy(), backend=backend) as sandbox:
        failed = sandbox.run("print(1)")
    assert (failed.error, failed.exit_code, failed.exit_status) == ("engine gone", None, 125)


def test_outcome_exit_status_is_the_one_mapping() -> None:
    assert {o: o.exit_status for o in Outcome} == {
        Outcome.OK: None,
        Outcome.ERROR: None,
        Outcome.PIDS_LIMIT: None,  # the program's own status: it failed after the refusal
        Outcome.COMPILE_ERROR: None,  # the compiler's own status
        Outcome.COMPILE_TIMEOUT: 124,
        Outcome.TIMEOUT: 124,
        Outcome.MEMORY_LIMIT: 137,
        Outcome.OUTPUT_LIMIT: 141,
        Outcome.BLOCKED: 126,
        Outcome.INFRA_ERROR: 125,
        Outcome.CANCELLED: 130,  # as a program stopped by SIGINT
    }


def test_a_closed_sandbox_refuses_at_once_and_records_nothing(tmp_path: Path) -> None:
    backend = RecordingBackend()
    log = AuditLog(tmp_path)
    sandbox = Sandbox(Policy(), backend=backend, audit=log)
    sandbox.close()
    sandbox.close()  # twice is fine
    request = ExecutionRequest("print(1)", "python", TrustLevel.UNTRUSTED)
    for call in (
        lambda: sandbox.run("print(1)"),
        lambda: sandbox.request("print(1)"),
        lambda: sandbox.execute(request),
        lambda: sandbox.warm("python"),
    ):
        with pytest.raises(ClosedError, match="closed"):
            call()
    assert backend.jobs == []
    assert sandbox.assessor._child is None  # no assessment child was started again


class SettlingBackend(RecordingBackend):
    """Notes what the audit log held when the pipeline asked it to settle."""

    def __init__(self) -> None:
        super().__init__()
        self.sandbox: Sandbox | None = None
        self.seen_at_settle: list[list[str]] = []

    def settle(self) -> None:
        assert self.sandbox is not None
        self.seen_at_settle.append([k for k, _ in audit_records(self.sandbox)])


def test_housekeeping_waits_until_the_run_is_recorded(tmp_path: Path) -> None:
    backend = SettlingBackend()
    with Sandbox(Policy(), backend=backend, audit=AuditLog(tmp_path)) as sandbox:
        backend.sandbox = sandbox
        sandbox.run("print(1)")
    kinds = backend.seen_at_settle[0]
    assert kinds[-2:] == ["run.started", "run.finished"]


def test_requests_are_immutable_values() -> None:
    request = Sandbox(Policy(), backend=RecordingBackend()).request(
        "print(1)", env={"A": "1"}, files={"f": "x"}
    )
    assert isinstance(request.env, MappingProxyType) and isinstance(request.files, MappingProxyType)


def test_a_run_report_is_never_blamed_on_the_code_for_an_infra_failure() -> None:
    # a report with no exit status and no limit hit is an error of the program, with a sentence
    result = Sandbox(Policy(), backend=RecordingBackend(RunReport(None, b"", b"", 1.0))).run("x=1")
    assert result.outcome is Outcome.ERROR
    assert result.error == "the program ended without an exit status the host could read"
