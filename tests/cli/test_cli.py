"""The `hazmat` command as other tools script it: exit codes, --json, files, errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hazmat.images.recipes import RECIPES
from hazmat.languages import LANGUAGES
from hazmat.testing import Invoked, invoke
from server_helpers import owned_by


def hazmat(*args: str, stdin: bytes = b"", env: dict[str, str] | None = None) -> Invoked:
    return invoke(args, stdin=stdin, env=env)


# --- no engine needed: bad requests are refused before anything runs ----------------------


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["run", "-c", "print(1)", "--lang", "cobol"], 2, b"unknown language 'cobol'"),
        (["run", "-c", "   "], 2, b"code is empty"),
        (["run", "/no/such/file.py"], 2, b"cannot read program"),
        (["run", "-c", "1", "--output-file", "../escape"], 2, b"unsafe file path"),
        (["run", "-c", "1", "--stdin", "/no/such/input"], 2, b"cannot read stdin"),
        (["run", "-c", "1", "--timeout", "0"], 2, b"positive number of seconds"),
        (
            ["run", "-c", "int main(){}", "--lang", "cpp", "--build-flags=-O2 -fplugin=x.so"],
            2,
            b"build_flags: '-fplugin=x.so' is not allowed for cpp at this level",
        ),
        (["run", "-c", "1", "--build-flags=-O2"], 2, b"python takes no compiler flags"),
        (["run", "-c", "1", "--policy", "/no/such/policy.yaml"], 78, b"cannot read policy file"),
        (["run", "notes.txt"], 2, b"cannot read program"),
    ],
)
def test_bad_requests_exit_with_clear_errors(args: list[str], code: int, message: bytes) -> None:
    result = hazmat(*args)
    assert result.exit_code == code, result.stderr_bytes
    assert message in result.stderr_bytes
    assert result.stderr_bytes.startswith(b"hazmat: error: ")


def test_unknown_extension_asks_for_lang(tmp_path: Path) -> None:
    program = tmp_path / "prog.txt"
    program.write_text("print(1)")
    result = hazmat("run", str(program))
    assert result.exit_code == 2 and b"pass --lang" in result.stderr_bytes


def test_policy_errors_name_the_file_and_key(tmp_path: Path) -> None:
    policy = tmp_path / "p.yaml"
    policy.write_text("trust:\n  untrusted:\n    memory: 5\n")
    result = hazmat("run", "-c", "1", "--policy", str(policy))
    assert result.exit_code == 78
    assert f"{policy}: trust.untrusted.memory: unknown key".encode() in result.stderr_bytes


def test_stopped_engine_exits_125_and_doctor_says_what_to_do(tmp_path: Path) -> None:
    dead = {"DOCKER_HOST": f"unix://{tmp_path}/stopped.sock"}
    result = hazmat("run", "-c", "print(1)", env=dead)
    assert result.exit_code == 125
    said = result.stderr_bytes.decode()
    assert said.startswith(f"hazmat: cannot reach the Docker engine at {dead['DOCKER_HOST']}")
    assert "DOCKER_HOST" in said and "No such file or directory" in said
    assert "('" not in said and "scripts/" not in said  # no raw tuple, no source-tree path
    as_json = hazmat("run", "-c", "print(1)", "--json", env=dead)
    data = json.loads(as_json.stdout_bytes)
    assert data["outcome"] == "infra_error" and data["error"] in said
    doctor = hazmat("doctor", env=dead)
    assert doctor.exit_code == 1
    assert doctor.stdout_bytes.startswith(b"FAIL engine: cannot reach the Docker engine")
    assert b"fix: start the engine" in doctor.stdout_bytes


def test_version_and_help() -> None:
    assert hazmat("--version").stdout_bytes.startswith(b"hazmat ")
    assert b"--timeout SEC" in hazmat("run", "--help").stdout_bytes


# --- on the real engine --------------------------------------------------------------------


@pytest.mark.docker
@pytest.mark.parametrize(
    ("code", "exit_code", "outcome"),
    [
        ("print('hi')", 0, "ok"),
        ("import sys; sys.exit(7)", 7, "error"),
        ("while True: pass", 124, "timeout"),
        ("x = bytearray(2**30)", 137, "memory_limit"),
        ("while True: print('x' * 100)", 141, "output_limit"),
    ],
)
def test_exit_codes_follow_the_outcome(code: str, exit_code: int, outcome: str) -> None:
    result = hazmat("run", "-c", code, "--timeout", "2", "--json")
    assert result.exit_code == exit_code, result.stderr_bytes
    data = json.loads(result.stdout_bytes)
    assert data["outcome"] == outcome
    for key in (
        "exit_code",
        "stdout",
        "stderr",
        "truncated",
        "duration_ms",
        "limits",
        "runtime",
        "image",
        "container_id",
    ):
        assert key in data


@pytest.mark.docker
def test_plain_output_is_the_programs_own(tmp_path: Path) -> None:
    program = tmp_path / "prog.js"
    program.write_text(
        "process.stdout.write('out\\n'); process.stderr.write('err\\n'); process.exit(3)"
    )
    result = hazmat("run", str(program))
    assert (result.exit_code, result.stdout_bytes, result.stderr_bytes) == (3, b"out\n", b"err\n")


@pytest.mark.docker
def test_timeout_explains_itself_on_stderr() -> None:
    result = hazmat("run", "-c", "import time; time.sleep(10)", "--timeout", "1")
    assert result.exit_code == 124
    assert result.stderr_bytes.endswith(
        b"hazmat: the program was stopped at its time limit of 1 s\n"
    )


@pytest.mark.docker
def test_a_program_imitating_a_timeout_is_told_apart_by_json() -> None:
    """The plain output is the program's to shape (README: `--json` is authoritative)."""
    code = (
        "import sys; print('hazmat: the program was stopped at its time limit of 1 s', "
        "file=sys.stderr); sys.exit(124)"
    )
    plain = hazmat("run", "-c", code, "--timeout", "5")
    assert plain.exit_code == 124
    assert b"hazmat: the program was stopped at its time limit of 1 s\n" in plain.stderr_bytes
    data = json.loads(hazmat("run", "-c", code, "--timeout", "5", "--json").stdout_bytes)
    assert (data["outcome"], data["exit_code"]) == ("error", 124)
    assert data["error"].startswith("the program exited with status 124")


@pytest.mark.docker
def test_stdin_files_and_output_files(tmp_path: Path) -> None:
    (tmp_path / "data.csv").write_text("a,b\n1,2\n")
    (tmp_path / "in.txt").write_text("from stdin")
    code = (
        "import sys\n"
        "rows = open('data.csv').read().splitlines()\n"
        "open('report.txt', 'w').write(f'{len(rows)} rows; ' + sys.stdin.read())\n"
    )
    out = tmp_path / "out"
    result = hazmat(
        "run",
        "-c",
        code,
        "--file",
        str(tmp_path / "data.csv"),
        "--stdin",
        str(tmp_path / "in.txt"),
        "--output-file",
        "report.txt",
        "--output-dir",
        str(out),
    )
    assert result.exit_code == 0, result.stderr_bytes
    assert (out / "report.txt").read_text() == "2 rows; from stdin"


@pytest.mark.docker
def test_missing_image_exits_125(tmp_path: Path) -> None:
    policy = tmp_path / "p.yaml"
    policy.write_text("images:\n  python: hazmat/python:nope\n")
    result = hazmat("run", "-c", "print(1)", "--policy", str(policy))
    assert result.exit_code == 125
    assert (
        b"is not on the Docker engine" in result.stderr_bytes
        and b"never pulls" in result.stderr_bytes
    )


@pytest.mark.docker
def test_memory_and_runtime_flags_are_applied() -> None:
    result = hazmat(
        "run",
        "-c",
        "print(1)",
        "--memory",
        "128",
        "--runtime",
        "runsc",
        "--json",
        "--trust",
        "trusted",
    )
    data = json.loads(result.stdout_bytes)
    assert (data["limits"]["memory_mb"], data["runtime"], data["trust"]) == (
        128,
        "runsc",
        "trusted",
    )


@pytest.mark.docker
def test_images_list_and_doctor() -> None:
    listing = hazmat("images", "list", "--json")
    assert listing.exit_code == 0
    rows = json.loads(listing.stdout_bytes)
    ours = [row for row in rows if row["from"] is None]
    assert {row["image"] for row in ours} == {recipe.ref for recipe in RECIPES.values()}
    assert all(row["present"] and row["current"] for row in ours), ours
    assert {row["languages"][0] for row in rows if row["from"] is None} == {
        "python",
        "javascript",
        "go",
        "bash",
        "c",
        "java",
        "rust",
        "ruby",
        "r",
    }
    doctor = hazmat("doctor")
    assert doctor.exit_code == 0, doctor.stdout_bytes
    assert (
        b"OK   runtime runsc" in doctor.stdout_bytes and b"OK   runtime runc" in doctor.stdout_bytes
    )
    # a local engine, and gcc here (`make test` installs it): the compiled agent, mounted
    assert b"OK   docker backend: agent: compiled, one process per sandbox" in doctor.stdout_bytes


@pytest.mark.docker
def test_images_export_and_the_doctors_checks_of_the_oci_tier(tmp_path: Path) -> None:
    env = {"HAZMAT_OCI_DIR": str(tmp_path / "oci")}
    # the OCI tier's prerequisites hold on the machines the engine tests run on: `auto` picks it
    export = hazmat("images", "export", "--lang", "python", "--if-default", env=env)
    assert export.exit_code == 0, export.stderr_bytes
    image = LANGUAGES["python"].image
    assert export.stdout_bytes.decode().startswith(f"{image}: {tmp_path / 'oci' / 'rootfs'}")
    policy = tmp_path / "oci.yaml"
    policy.write_text("backend: oci\n")
    # the other images are not exported here: a failure when the policy uses the tier...
    doctor = hazmat("doctor", "--json", "--policy", str(policy), env=env)
    checks = {c["name"]: c for c in json.loads(doctor.stdout_bytes)}
    assert doctor.exit_code == 1
    for name in ("runc", "runsc", "init", "cgroups"):
        assert checks[f"oci tier: {name}"]["ok"], checks[f"oci tier: {name}"]
    roots = checks["oci tier: root file systems"]
    assert not roots["ok"] and roots["needed"] and roots["fix"] == "hazmat images export"
    assert "1 prepared" in roots["detail"] and image not in roots["detail"]
    # ...and a warning when it does not
    plain = hazmat("doctor", env=env)
    assert plain.exit_code == 0, plain.stdout_bytes
    assert b"WARN oci tier: root file systems" in plain.stdout_bytes
    # the runtimes checked are the policy file's, not the built-in policy's
    assert b"built-in policy: untrusted: runsc," in plain.stdout_bytes
    policy.write_text("backend: docker\ntrust:\n  untrusted:\n    runtime: runc\n")
    mine = hazmat("doctor", "--json", "--policy", str(policy), env=env)
    runtimes = {c["name"]: c for c in json.loads(mine.stdout_bytes)}["policy runtimes"]
    assert runtimes["detail"].startswith("your policy: untrusted: runc,"), runtimes


def test_images_export_if_default_exports_nothing_where_auto_picks_docker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hazmat.backends.oci import prerequisites

    monkeypatch.setattr(prerequisites, "missing", lambda: ("no runsc binary",))
    export = hazmat("images", "export", "--if-default", env={"HAZMAT_OCI_DIR": str(tmp_path)})
    assert export.exit_code == 0, export.stderr_bytes
    assert export.stdout_bytes.decode() == (
        "nothing to export: the default tier here is docker "
        "(auto: the direct OCI tier is not usable here (no runsc binary))\n"
    )
    assert list(tmp_path.iterdir()) == []


# --- hazmat assess, and the enforcement seen from the command line ------------------------


def test_assess_prints_a_table_with_level_lines_and_rules(tmp_path: Path) -> None:
    program = tmp_path / "tool.py"
    program.write_text("import json\nimport subprocess\nsubprocess.run(['ls'])\n")
    result = hazmat("assess", str(program))
    assert result.exit_code == 0, result.stderr_bytes
    out = result.stdout_bytes.decode()
    assert out.startswith("HIGH  risk score ")
    assert "policy for untrusted: warn" in out
    assert any(line.split()[:3] == ["2", "high", "python-ast"] for line in out.splitlines())
    assert "import-subprocess" in out


def test_assess_json_has_the_documented_keys() -> None:
    result = hazmat(
        "assess", "-c", "require('child_' + 'process')", "--lang", "javascript", "--json"
    )
    assert result.exit_code == 126, result.stderr_bytes  # the policy would block it
    data = json.loads(result.stdout_bytes)
    assert {"level", "risk_score", "complete", "findings", "duration_ms"} <= set(data)
    assert data["level"] == "BLOCKED" and data["complete"] is True
    finding = data["findings"][0]
    assert {"rule", "source", "severity", "line", "message"} <= set(finding)
    assert finding["rule"] == "obfuscated-name" and finding["line"] == 1


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["assess", "-c", "x", "--lang", "cobol"], 2, b"unknown language 'cobol'"),
        (["assess", "/no/such/file.go"], 2, b"cannot read program"),
    ],
)
def test_assess_bad_input(args: list[str], code: int, message: bytes) -> None:
    result = hazmat(*args)
    assert result.exit_code == code, result.stderr_bytes
    assert message in result.stderr_bytes


def test_assess_refuses_code_over_the_trust_levels_limit(tmp_path: Path) -> None:
    program = tmp_path / "big.py"
    program.write_text("#" * 200_000)
    result = hazmat("assess", str(program), "--trust", "untrusted")
    assert result.exit_code == 2 and b"assessment limit is 131072" in result.stderr_bytes


def test_assess_refuses_invalid_utf8_in_a_file(tmp_path: Path) -> None:
    program = tmp_path / "bad.py"
    program.write_bytes(b"print('\xff\xfe')\n")
    result = hazmat("assess", str(program))
    assert result.exit_code == 2 and b"not valid UTF-8" in result.stderr_bytes


def test_run_refuses_blocked_code_with_exit_126_and_says_how_to_override() -> None:
    result = hazmat("run", "-c", "().__class__.__base__.__subclasses__()")
    assert result.exit_code == 126, result.stderr_bytes
    assert b"blocked by the static assessment" in result.stderr_bytes
    assert b"--override-reason" in result.stderr_bytes


def test_run_override_reason_too_short_is_a_bad_request() -> None:
    result = hazmat("run", "-c", "print(1)", "--override-reason", "why")
    assert result.exit_code == 2 and b"at least 20 characters" in result.stderr_bytes


@pytest.mark.docker
def test_run_with_an_override_reason_runs_blocked_code() -> None:
    code = "print(len(().__class__.__base__.__subclasses__()) > 10)"
    reason = "grader self-test: counts classes, nothing more"
    result = hazmat("run", "-c", code, "--override-reason", reason, "--json")
    assert result.exit_code == 0, result.stderr_bytes
    data = json.loads(result.stdout_bytes)
    assert data["stdout"] == "True\n" and data["decision"] == "override"
    assert data["override_reason"] == reason and data["assessment"]["level"] == "BLOCKED"


@pytest.mark.docker
def test_bench_shows_progress_and_ctrl_c_leaves_no_container(tmp_path: Path) -> None:
    import signal

    # As at a terminal: a process started in the background by a non-interactive shell (as
    # test runners often are) inherits SIGINT ignored; Ctrl-C reaches a user's hazmat.
    at_a_terminal = (
        "import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
        "sys.argv[0] = 'hazmat'; runpy.run_module('hazmat', run_name='__main__')"
    )
    bench = subprocess.Popen(
        [sys.executable, "-c", at_a_terminal, "bench", "--runs", "2", "--lang", "python",
         "--runtime", "runc", "--throughput-seconds", "300"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "HAZMAT_AUDIT_DIR": str(tmp_path / "audit")},  # its own log
    )  # fmt: skip
    assert bench.stdout is not None
    seen = []
    for line in bench.stdout:  # progress comes line by line, long before the end
        seen.append(line)
        if b"raw create+start, " in line:  # the raw phase, which piles up containers
            break
    bench.send_signal(signal.SIGINT)
    rest, err = bench.communicate(timeout=120)
    assert bench.returncode == 130, (bench.returncode, err, seen[-3:], rest[-300:])
    assert b"Traceback" not in err
    assert any(b"hazmat warm pool" in line for line in seen)  # the latency rows came first
    assert owned_by(bench.pid) == []  # on either tier
