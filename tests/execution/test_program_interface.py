"""What the program sees of its run, in every language, on both runtimes and both paths:
the caller's environment variables and arguments (and nothing of the host's or hazmat's),
input and output files in folders, and tracebacks without hazmat's own frames."""

from __future__ import annotations

import os

import pytest

from hazmat import Outcome, Sandbox

pytestmark = [pytest.mark.docker, pytest.mark.oci, pytest.mark.matrix]

ENV_ARGS = {
    "python": (
        "import os, sys\n"
        "print(os.environ.get('GREETING'), os.environ.get('EMPTY') == '', sys.argv[1:])\n"
        "print(sorted(k for k in os.environ if k.startswith(('HAZMAT', 'HOST_SECRET'))))\n"
    ),
    "javascript": (
        "console.log(process.env.GREETING, process.env.EMPTY === '', "
        "JSON.stringify(process.argv.slice(2)));\n"
        "console.log(JSON.stringify(Object.keys(process.env)"
        ".filter(k => k.startsWith('HAZMAT') || k.startsWith('HOST_SECRET'))));\n"
    ),
    "typescript": (
        "const args: string[] = process.argv.slice(2);\n"
        "console.log(process.env.GREETING, process.env.EMPTY === '', JSON.stringify(args));\n"
        "console.log(JSON.stringify(Object.keys(process.env)"
        ".filter((k: string) => k.startsWith('HAZMAT') || k.startsWith('HOST_SECRET'))));\n"
    ),
    "go": (
        'package main\n\nimport (\n\t"encoding/json"\n\t"fmt"\n\t"os"\n\t"strings"\n)\n\n'
        "func main() {\n"
        '\tempty, set := os.LookupEnv("EMPTY")\n'
        "\targs, _ := json.Marshal(os.Args[1:])\n"
        '\tfmt.Println(os.Getenv("GREETING"), set && empty == "", string(args))\n'
        "\tleaked := []string{}\n"
        "\tfor _, kv := range os.Environ() {\n"
        '\t\tif strings.HasPrefix(kv, "HAZMAT") || strings.HasPrefix(kv, "HOST_SECRET") {\n'
        "\t\t\tleaked = append(leaked, kv)\n\t\t}\n\t}\n"
        "\tout, _ := json.Marshal(leaked)\n\tfmt.Println(string(out))\n}\n"
    ),
}
ARGS = ["--name", "two words", "it's", "$HOME", ""]


@pytest.mark.parametrize("language", sorted(ENV_ARGS))
def test_env_and_args_reach_the_program_and_nothing_of_the_host(
    sandbox: Sandbox, runtime: str, language: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOST_SECRET_TOKEN", "must-not-leak")
    env = {"GREETING": "hi 'there' $USER `x`\nline2", "EMPTY": ""}
    result = sandbox.run(ENV_ARGS[language], language, env=env, args=ARGS, runtime=runtime)
    assert result.outcome is Outcome.OK, result.stderr
    first, second = result.stdout.rsplit("\n", 2)[-3:-1]
    expected_args = '["--name", "two words", "it\'s", "$HOME", ""]'
    if language == "python":
        assert result.stdout.startswith("hi 'there' $USER `x`\nline2 True ")
        assert "['--name', 'two words', \"it's\", '$HOME', '']" in result.stdout
        assert second == "[]"
    else:
        assert result.stdout.startswith("hi 'there' $USER `x`\nline2 true ")
        assert first.endswith(expected_args.replace(", ", ","))
        assert second in ("[]", "null")
    assert "must-not-leak" not in result.stdout and os.environ["HOST_SECRET_TOKEN"]


NESTED = {
    "python": (
        "import os\nos.makedirs('out/deep', exist_ok=True)\n"
        "data = open('data/in/numbers.txt').read().split()\n"
        "open('out/deep/sum.txt', 'w').write(str(sum(map(int, data))))\n"
    ),
    "javascript": (
        "const fs = require('fs');\nfs.mkdirSync('out/deep', { recursive: true });\n"
        "const n = fs.readFileSync('data/in/numbers.txt', 'utf8').split(/\\s+/).filter(Boolean);\n"
        "fs.writeFileSync('out/deep/sum.txt', String(n.map(Number).reduce((a, b) => a + b)));\n"
    ),
    "go": (
        'package main\n\nimport (\n\t"os"\n\t"strconv"\n\t"strings"\n)\n\n'
        "func main() {\n"
        '\tdata, _ := os.ReadFile("data/in/numbers.txt")\n\tsum := 0\n'
        "\tfor _, f := range strings.Fields(string(data)) {\n"
        "\t\tn, _ := strconv.Atoi(f)\n\t\tsum += n\n\t}\n"
        '\tos.MkdirAll("out/deep", 0o755)\n'
        '\tos.WriteFile("out/deep/sum.txt", []byte(strconv.Itoa(sum)), 0o644)\n}\n'
    ),
}


@pytest.mark.parametrize("language", sorted(NESTED))
def test_input_and_output_files_in_folders(sandbox: Sandbox, runtime: str, language: str) -> None:
    result = sandbox.run(
        NESTED[language],
        language,
        files={"data/in/numbers.txt": "1 2 3 4\n"},
        output_files=["out/deep/sum.txt", "out/missing.txt"],
        runtime=runtime,
    )
    assert result.outcome is Outcome.OK, result.stderr
    assert dict(result.files) == {"out/deep/sum.txt": b"10"}
    assert any("out/missing.txt" in note for note in result.notes)



def test_input_files_are_the_programs_and_odd_output_files_are_refused(
    sandbox: Sandbox, runtime: str
) -> None:
    """Without a runner the agent unpacks the input files (folders too) and they are the
    program's uid's; output files that are not regular files the program can read are not
    collected, and nothing waits on them: a FIFO nobody writes, a file its owner made
    unreadable, a link, a folder."""
    code = (
        'echo "OWNERS $(stat -c %u data data/in.txt | sort -u)" "UID $(id -u)"\n'
        "mkfifo pipe; printf x > locked; chmod 000 locked; ln -s data/in.txt link; mkdir dir\n"
        "cp data/in.txt copy.txt\n"
    )
    result = sandbox.run(
        code,
        "bash",
        files={"data/in.txt": "payload\n"},
        output_files=["pipe", "locked", "link", "dir", "copy.txt"],
        runtime=runtime,
    )
    assert result.outcome is Outcome.OK, result.stderr
    owners, uid = result.stdout.split(" UID ")
    assert owners == f"OWNERS {uid.strip()}", result.stdout  # one owner: the program's uid
    assert dict(result.files) == {"copy.txt": b"payload\n"}
    notes = " ".join(result.notes)
    for name in ("pipe", "locked", "link", "dir"):
        assert f"'{name}' not collected: not a regular file" in notes, notes

TRACEBACKS = {
    "python": ("def f():\n    raise ValueError('boom')\nf()\n", "ValueError: boom"),
    "javascript": ("function f() { throw new TypeError('boom'); }\nf();\n", "TypeError: boom"),
    "typescript": (
        "const f = (): number => { throw new RangeError('boom'); };\nf();\n",
        "RangeError: boom",
    ),
}
# the runners' frames (a TypeScript bundle's path, /tmp/.hazmat-build, is the program's own)
HAZMAT_FRAMES = ("<string>", "[eval]", "_hazmat", "hazmatStart", "hazmat-agent")


@pytest.mark.parametrize("language", sorted(TRACEBACKS))
def test_tracebacks_show_the_program_and_none_of_hazmat(
    sandbox: Sandbox, runtime: str, language: str
) -> None:
    code, error = TRACEBACKS[language]
    result = sandbox.run(code, language, runtime=runtime)
    assert result.outcome is Outcome.ERROR and result.exit_code == 1
    assert error in result.stderr
    assert not [word for word in HAZMAT_FRAMES if word in result.stderr], result.stderr
    assert result.error == f"the program exited with status 1: {error}"


# (language, code, the outcome, what `result.error` must say, what it must not)
REAL_CAUSES = [
    ("javascript", "throw new Error('boom');\n", Outcome.ERROR, "Error: boom", "processImmediate"),
    (
        "javascript",
        "require('left-pad');\n",
        Outcome.ERROR,
        "Cannot find module 'left-pad'",
        "status 1: }",
    ),
    (
        "go",
        'package main\n\nimport "github.com/nothere/pkg"\n\nfunc main() { pkg.F() }\n',
        Outcome.COMPILE_ERROR,
        "github.com/nothere/pkg",
        "$GOPATH",
    ),
    (
        "go",
        "package main\n\nfunc main() {\n\tx()\n\ty()\n}\n",
        Outcome.COMPILE_ERROR,
        "undefined: x",
        "undefined: y",
    ),
    ("typescript", "const x: number = ;\n", Outcome.COMPILE_ERROR, "[ERROR]", "1 error"),
]


@pytest.mark.parametrize("case", REAL_CAUSES, ids=lambda case: f"{case[0]}-{case[3]}")
def test_the_error_sentence_names_the_real_cause(
    sandbox: Sandbox, runtime: str, case: tuple[str, str, Outcome, str, str]
) -> None:
    """The one sentence in `error` names what went wrong: the error the program raised, the
    module or package that is missing, the compiler's first complaint; not a frame of the
    stack, a closing brace or a search path."""
    language, code, outcome, says, not_says = case
    result = sandbox.run(code, language, runtime=runtime)
    assert result.outcome is outcome, result.stderr
    assert result.error is not None and says in result.error, (result.error, result.stderr)
    assert not_says not in result.error


def test_a_syntax_error_looks_as_python_shows_it(sandbox: Sandbox) -> None:
    result = sandbox.run("x = (\n", "python")
    assert result.outcome is Outcome.ERROR
    assert result.stderr.startswith('  File "/work/main.py", line 1\n')
    assert "Traceback" not in result.stderr and "_hazmat" not in result.stderr
