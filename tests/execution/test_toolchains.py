"""Bash, C, C++, Java, Rust, Ruby and R on the real engine, under runc and runsc, cold and pooled:
time and memory limits, output files, the error sentence, graders' own test code, and the
hostile programs the suite already runs in Python, written in each language where they apply.
(Hello with stdin, compile errors and exit statuses of every language: test_languages.py.)"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from probes import run

from hazmat import Outcome, Sandbox, parse_policy
from hazmat.backends.container.engine import Engine
from hazmat.backends.docker.driver import DockerBackend
from hazmat.languages import LANGUAGES
from hazmat.testing import as_asked

pytestmark = pytest.mark.docker

SPIN = {
    "bash": "while :; do :; done",
    "c": "int main(void) { volatile unsigned long x = 0; for (;;) x++; }\n",
    "cpp": "int main() { volatile unsigned long x = 0; for (;;) x++; }\n",
    "java": "public class Main {\n    public static void main(String[] a) {\n"
    "        long x = 0;\n        while (x >= 0) { x++; if (x == Long.MAX_VALUE) x = 0; }\n"
    "    }\n}\n",
    "rust": "fn main() {\n    let mut x: u64 = 0;\n"
    "    loop { x = std::hint::black_box(x.wrapping_add(1)); }\n}\n",
    "ruby": "x = 0\nloop { x += 1 }\n",
}


@pytest.mark.parametrize("language", sorted(SPIN))
def test_a_program_past_its_time_limit_is_stopped(
    sandbox: Sandbox, runtime: str, language: str
) -> None:
    result = sandbox.run(SPIN[language], language, runtime=runtime, timeout=1.5)
    assert result.outcome is Outcome.TIMEOUT, result
    assert result.exit_code == 124
    assert result.error == "the program was stopped at its time limit of 1.5 s"


MEMORY_BOMB = {
    "bash": 'x=aaaaaaaaaaaaaaaa\nwhile :; do x="$x$x"; done\n',
    "c": "#include <stdlib.h>\n#include <string.h>\nint main(void) {\n"
    "    for (;;) { char *p = malloc(1 << 20); if (!p) return 2; memset(p, 1, 1 << 20); }\n}\n",
    "cpp": "#include <vector>\nint main() {\n    std::vector<std::vector<char>> v;\n"
    "    for (;;) v.emplace_back(1 << 20, 'x');\n}\n",
    "java": "import java.util.*;\npublic class Main {\n    public static void main(String[] a) {\n"
    "        List<byte[]> v = new ArrayList<>();\n"
    "        while (true) { byte[] b = new byte[1 << 20]; Arrays.fill(b, (byte) 1); v.add(b); }\n"
    "    }\n}\n",
    "rust": "fn main() {\n    let mut v = Vec::new();\n"
    "    loop { v.push(vec![1u8; 1 << 20]); }\n}\n",
    "ruby": 'a = []\nloop { a << "x" * (1 << 20) }\n',
}


@pytest.mark.parametrize("language", sorted(MEMORY_BOMB))
def test_a_memory_bomb_hits_the_memory_limit(sandbox: Sandbox, runtime: str, language: str) -> None:
    result = run(sandbox, runtime, MEMORY_BOMB[language], language=language)
    assert result.outcome is Outcome.MEMORY_LIMIT, result
    assert result.exit_code == 137
    assert result.error is not None and "memory limit of 256 MB" in result.error


FLOOD = {
    "bash": "yes flooding-the-output",
    "c": '#include <stdio.h>\nint main(void) { for (;;) puts("flooding the output"); }\n',
    "cpp": '#include <iostream>\nint main() { for (;;) std::cout << "flood\\n"; }\n',
    "java": "public class Main {\n    public static void main(String[] a) {\n"
    '        while (true) System.out.println("flooding the output");\n    }\n}\n',
    "rust": 'fn main() {\n    loop { println!("flooding the output"); }\n}\n',
    "ruby": 'loop { puts "flooding the output" }\n',
}


@pytest.mark.parametrize("language", sorted(FLOOD))
def test_an_output_flood_is_stopped_at_the_cap(
    sandbox: Sandbox, runtime: str, language: str
) -> None:
    result = sandbox.run(FLOOD[language], language, runtime=runtime)
    assert result.outcome is Outcome.OUTPUT_LIMIT, result
    assert result.truncated and result.exit_code == 141
    assert len(result.stdout_bytes) <= result.limits.output_bytes


OUTPUT_FILE = {
    "bash": 'mkdir -p out && tr a-z A-Z < in.txt > out/up.txt && echo "$(wc -c < in.txt)"',
    "c": "#include <stdio.h>\n#include <ctype.h>\nint main(void) {\n"
    '    FILE *in = fopen("in.txt", "r"), *out = fopen("out/up.txt", "w"); int c, n = 0;\n'
    "    while ((c = fgetc(in)) != EOF) { fputc(toupper(c), out); n++; }\n"
    '    fclose(out); printf("%d\\n", n); return 0;\n}\n',
    "cpp": "#include <bits/stdc++.h>\nint main() {\n"
    '    std::ifstream in("in.txt"); std::string s((std::istreambuf_iterator<char>(in)), {});\n'
    "    for (auto &c : s) c = std::toupper(c);\n"
    '    std::ofstream("out/up.txt") << s; std::cout << s.size() << "\\n";\n}\n',
    "java": "import java.nio.file.*;\npublic class Upper {\n"
    "    public static void main(String[] a) throws Exception {\n"
    '        String s = Files.readString(Path.of("in.txt"));\n'
    '        Files.writeString(Path.of("out/up.txt"), s.toUpperCase());\n'
    "        System.out.println(s.length());\n    }\n}\n",
    "rust": "use std::fs;\nfn main() {\n"
    '    let s = fs::read_to_string("in.txt").unwrap();\n'
    '    fs::write("out/up.txt", s.to_uppercase()).unwrap();\n    println!("{}", s.len());\n}\n',
    "ruby": 's = File.read("in.txt")\nFile.write("out/up.txt", s.upcase)\nputs s.size\n',
}


@pytest.mark.parametrize("language", sorted(OUTPUT_FILE))
def test_input_and_output_files(sandbox: Sandbox, runtime: str, language: str) -> None:
    result = sandbox.run(
        OUTPUT_FILE[language],
        language,
        runtime=runtime,
        files={"in.txt": "hello files\n", "out/.keep": ""},
        output_files=["out/up.txt"],
    )
    assert result.outcome is Outcome.OK, result
    assert result.stdout == "12\n"
    assert dict(result.files) == {"out/up.txt": b"HELLO FILES\n"}


ARGS_ENV = {
    "bash": 'echo "$GREETING" "$#" "$2"',
    "c": "#include <stdio.h>\n#include <stdlib.h>\nint main(int argc, char **argv) {\n"
    '    printf("%s %d %s\\n", getenv("GREETING"), argc - 1, argv[2]); return 0;\n}\n',
    "cpp": "#include <bits/stdc++.h>\nint main(int argc, char **argv) {\n"
    '    std::cout << std::getenv("GREETING") << " " << argc - 1 << " " << argv[2] << "\\n";\n}\n',
    "java": "public class Main {\n    public static void main(String[] a) {\n"
    '        System.out.println(System.getenv("GREETING") + " " + a.length + " " + a[1]);\n'
    "    }\n}\n",
    "rust": "fn main() {\n    let a: Vec<String> = std::env::args().collect();\n"
    '    println!("{} {} {}", std::env::var("GREETING").unwrap(), a.len() - 1, a[2]);\n}\n',
    "ruby": 'puts "#{ENV["GREETING"]} #{ARGV.size} #{ARGV[1]}"\n',
}


@pytest.mark.parametrize("language", sorted(ARGS_ENV))
def test_args_and_env_reach_the_program(sandbox: Sandbox, language: str) -> None:
    result = sandbox.run(
        ARGS_ENV[language], language, env={"GREETING": "hi"}, args=["one", "two words"]
    )
    assert (result.outcome, result.stdout) == (Outcome.OK, "hi 2 two words\n"), result


RUNTIME_ERRORS = {
    "bash": ("echo before\nfrobnicate_the_thing\n", 127, "frobnicate_the_thing: command not found"),
    "c": ("int main(void) { volatile int *p = 0; return *p; }\n", 139, "status 139 (SIGSEGV)"),
    "cpp": (
        '#include <stdexcept>\nint main() { throw std::runtime_error("boom"); }\n',
        134,
        "status 134 (SIGABRT): what():  boom",
    ),
    "java": (
        "public class Main {\n    public static void main(String[] a) {\n"
        '        throw new IllegalStateException("boom");\n    }\n}\n',
        1,
        'Exception in thread "main" java.lang.IllegalStateException: boom',
    ),
    "rust": ('fn main() {\n    panic!("boom");\n}\n', 101, "panicked at main.rs:2:5: boom"),
    "ruby": ('def f = raise(ArgumentError, "boom")\nf\n', 1, "boom (ArgumentError)"),
    "r": ('f <- function() stop("boom")\nf()\n', 1, "Error in f() : boom"),
}


@pytest.mark.parametrize("language", sorted(RUNTIME_ERRORS))
def test_the_error_sentence_names_the_runtime_error(
    sandbox: Sandbox, runtime: str, language: str
) -> None:
    code, status, sentence = RUNTIME_ERRORS[language]
    result = sandbox.run(code, language, runtime=runtime)
    assert (result.outcome, result.exit_code) == (Outcome.ERROR, status), result
    assert result.error is not None and sentence in result.error, result.error


# --- graders' code, as graders write it -------------------------------------------------

GO_SOLUTION = "package main\n\nfunc Add(x, y int) int {\n\treturn x + y\n}\n"
GO_TEST = (
    'package main\n\nimport (\n\t"testing"\n\n\t"github.com/stretchr/testify/assert"\n)\n\n'
    "func TestAdd(t *testing.T) {\n\tassert := assert.New(t)\n"
    "\tassert.Equal(5, Add(2, 3))\n\tassert.Equal(@WANT@, Add(1, 1))\n}\n"
)


@pytest.fixture(scope="module")
def patient(engine: Engine) -> Iterator[Sandbox]:
    """A sandbox whose trusted level gives a build 10 minutes: linking a Go test binary with
    testify (which pulls in net/http) takes about 10 s of CPU, 22 s at half a CPU under runc
    and about 50 s under runsc on an idle machine (docs/benchmarks.md); a loaded machine must
    not turn that into a compile_timeout here."""
    policy = parse_policy({"trust": {"trusted": {"compile_timeout_s": 600}}})
    with Sandbox(as_asked(policy), backend=DockerBackend(engine)) as sandbox:
        yield sandbox


@pytest.mark.parametrize(("want", "outcome"), [("2", Outcome.OK), ("3", Outcome.ERROR)])
def test_go_tests_with_testify_run_as_go_test(
    patient: Sandbox, want: str, outcome: Outcome
) -> None:
    result = patient.run(
        GO_SOLUTION,
        "go",
        runtime="runc",
        trust="trusted",
        files={"main_test.go": GO_TEST.replace("@WANT@", want)},
    )
    assert result.outcome is outcome, result
    if outcome is Outcome.OK:
        assert result.stdout.strip() == "PASS"
    else:
        assert "--- FAIL: TestAdd" in result.stdout and "expected: 3" in result.stdout


GO_ALL_IN_ONE = """package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func Add(x, y int) int {
	return x + y
}

func TestAdd(t *testing.T) {
	assert := assert.New(t)
	assert.Equal(2, Add(1, 1))
}
"""


def test_go_test_functions_in_the_program_itself_run_as_a_test(patient: Sandbox) -> None:
    result = patient.run(GO_ALL_IN_ONE, "go", runtime="runc", trust="trusted")
    assert (result.outcome, result.stdout.strip()) == (Outcome.OK, "PASS"), result


CPP_BOOST_MD5 = """#include <bits/stdc++.h>
#include <boost/any.hpp>
#include <openssl/md5.h>
using namespace std;

string md5(const string &text) {
    unsigned char digest[MD5_DIGEST_LENGTH];
    MD5((const unsigned char *)text.data(), text.size(), digest);
    ostringstream out;
    for (auto byte : digest) out << hex << setw(2) << setfill('0') << (int)byte;
    return out.str();
}

int main() {
    boost::any value = string("hello");
    cout << md5(boost::any_cast<string>(value)) << endl;
}
"""


def test_cpp_with_boost_and_libcrypto_needs_no_flags(sandbox: Sandbox, runtime: str) -> None:
    result = sandbox.run(CPP_BOOST_MD5, "cpp", runtime=runtime)
    assert result.outcome is Outcome.OK, result
    assert result.stdout.strip() == hashlib.md5(b"hello").hexdigest()


JAVA_GRADER = """import java.util.*;

class Solution {
    public int add(int x, int y) {
        return x + y;
    }
}

public class Main {
    public static void main(String[] args) {
        Solution s = new Solution();
        List<Boolean> correct = Arrays.asList(s.add(2, 3) == 5, s.add(1, 1) == @WANT@);
        if (correct.contains(false)) {
            throw new AssertionError();
        }
        System.out.println("all passed");
    }
}
"""


@pytest.mark.parametrize(("want", "outcome"), [("2", Outcome.OK), ("3", Outcome.ERROR)])
def test_java_main_beside_a_solution_class(
    sandbox: Sandbox, runtime: str, want: str, outcome: Outcome
) -> None:
    result = sandbox.run(JAVA_GRADER.replace("@WANT@", want), "java", runtime=runtime)
    assert result.outcome is outcome, result
    if outcome is Outcome.ERROR:
        assert "java.lang.AssertionError" in (result.error or "")


def test_java_runs_a_public_class_of_any_name_in_a_package(sandbox: Sandbox) -> None:
    code = (
        "package org.example.tools;\n\nimport java.util.stream.*;\n\n"
        "public final class Summer {\n    public static void main(String[] args) {\n"
        "        System.out.println(IntStream.rangeClosed(1, 10).sum());\n    }\n}\n"
    )
    result = sandbox.run(code, "java")
    assert (result.outcome, result.stdout) == (Outcome.OK, "55\n"), result


def test_the_examples_run(sandbox: Sandbox) -> None:
    examples = Path(__file__).parents[2] / "examples"
    expected = {
        "collatz.c": "837799 has a chain of 525 terms\n",
        "topk.cpp": "9 7 5 \n",
        "Primes.java": "primes below 30: [2, 3, 5, 7, 11, 13, 17, 19, 23, 29]\n",
        "anagrams.rs": "google elgoog\nlisten silent enlist inlets\n",
        "report.rb": '{"warm":["Lisbon","Cairo"],"mean":14.666666666666666}\n',
    }
    for name, stdout in expected.items():
        path = examples / name
        result = sandbox.run(path.read_text(), language_of(name), trust="trusted")
        assert (result.outcome, result.stdout) == (Outcome.OK, stdout), (name, result)


def language_of(name: str) -> str:
    from hazmat.languages import language_for_path

    return language_for_path(name).name


# --- hostile programs, in the new languages ---------------------------------------------

C_FORK_BOMB = """#include <stdio.h>
#include <errno.h>
#include <unistd.h>
int main(void) {
    int n = 0;
    while (n < 10000) {
        pid_t pid = fork();
        if (pid == 0) { sleep(30); _exit(0); }
        if (pid < 0) { printf("FORKS %d\\nERRNO %d\\n", n, errno); fflush(stdout); return 3; }
        n++;
    }
    return 0;
}
"""


@pytest.mark.matrix
def test_a_c_fork_bomb_is_contained(sandbox: Sandbox, runtime: str) -> None:
    result = run(sandbox, runtime, C_FORK_BOMB, language="c", timeout=10)
    if runtime == "runc":
        assert (result.outcome, result.exit_code) == (Outcome.PIDS_LIMIT, 3), result
        assert "ERRNO 11" in result.stdout
    else:  # refused at the uid's budget inside gVisor; the host cannot count it: `error`
        assert (result.outcome, result.exit_code) == (Outcome.ERROR, 3), result
        assert "ERRNO 11" in result.stdout
    after = sandbox.run("echo fine", "bash", runtime=runtime)
    assert after.stdout == "fine\n"


@pytest.mark.matrix
def test_a_shell_fork_bomb_is_contained(sandbox: Sandbox, runtime: str) -> None:
    result = run(
        sandbox, runtime, "bomb() { bomb | bomb & }\nbomb\nsleep 3\n", language="bash", timeout=8
    )
    assert result.outcome is not Outcome.INFRA_ERROR, result
    after = sandbox.run("echo fine", "bash", runtime=runtime)
    assert (after.outcome, after.stdout) == (Outcome.OK, "fine\n")


HOST_IDENTITY = {
    "bash": "cat /proc/sys/kernel/random/boot_id /proc/cmdline 2>&1; hostname; id -u",
    "c": "#include <stdio.h>\n#include <unistd.h>\nint main(void) {\n"
    '    char b[4096]; FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");\n'
    '    if (f) { size_t n = fread(b, 1, sizeof b - 1, f); b[n] = 0; printf("%s", b); }\n'
    '    printf("uid %d\\n", (int)getuid()); return 0;\n}\n',
    "java": "import java.nio.file.*;\npublic class Main {\n"
    "    public static void main(String[] a) throws Exception {\n"
    '        System.out.println(Files.readString(Path.of("/proc/sys/kernel/random/boot_id")));\n'
    '        System.out.println(System.getProperty("user.name"));\n    }\n}\n',
    "rust": "fn main() {\n"
    '    println!("{:?}", std::fs::read_to_string("/proc/sys/kernel/random/boot_id"));\n'
    '    println!("{:?}", std::fs::read_to_string("/proc/cmdline"));\n}\n',
    "ruby": 'puts File.read("/proc/sys/kernel/random/boot_id") rescue puts $!\n'
    'puts File.read("/proc/cmdline") rescue puts $!\nputs Process.uid\n',
}


@pytest.mark.matrix
@pytest.mark.parametrize("language", sorted(HOST_IDENTITY))
def test_the_host_identity_is_not_readable(sandbox: Sandbox, runtime: str, language: str) -> None:
    host = [
        Path("/proc/sys/kernel/random/boot_id").read_text().strip(),
        Path("/proc/cmdline").read_text().strip(),
    ]
    result = run(sandbox, runtime, HOST_IDENTITY[language], language=language)
    assert result.outcome is Outcome.OK, result
    for value in host:
        assert value and value not in result.stdout, result.stdout


# --- Ruby's warm runner (backends/agent/runners.py): the program sees what `ruby main.rb` gives ---


def test_ruby_runs_in_its_warm_runner_as_ruby_main_rb_would(sandbox: Sandbox, runtime: str) -> None:
    code = (
        'puts ARGV.inspect, ENV["G"].inspect, $stdin.read.inspect, __FILE__ == $0\n'
        "puts defined?(JSON).inspect, local_variables.inspect, File.read('d/x.txt')\n"
        'at_exit { puts "bye" }\nwarn "err"\nexit 3\n'
    )
    result = sandbox.run(
        code,
        "ruby",
        runtime=runtime,
        stdin="in put",
        args=["a b", "é☃"],
        env={"G": 'q"\\\n'},
        files={"d/x.txt": "file"},
    )
    assert (result.outcome, result.exit_code) == (Outcome.ERROR, 3), result
    assert result.stdout == (
        '["a b", "é☃"]\n"q\\"\\\\\\n"\n"in put"\ntrue\nnil\n[]\nfile\nbye\n'
    ), result.stdout
    assert result.stderr == "err\n"


def test_ruby_errors_show_no_frame_of_the_runner(sandbox: Sandbox) -> None:
    raised = sandbox.run('def f = raise(ArgumentError, "boom")\nf\n', "ruby")
    assert raised.stderr == (
        "main.rb:1:in `f': boom (ArgumentError)\n\tfrom main.rb:2:in `<main>'\n"
    ), raised.stderr
    broken = sandbox.run("puts 1 +", "ruby")
    assert broken.exit_code == 1 and "-e:" not in broken.stderr, broken.stderr
    assert broken.error is not None and "syntax error" in broken.error
    assert broken.error.endswith("(SyntaxError)")


def test_the_warm_javac_is_gone_before_the_program_runs(sandbox: Sandbox, runtime: str) -> None:
    """The container's warm compiler (languages/java.py's JAVA_PREPARE) serves the build and
    exits: the program finds no process of it and none of its channels (their pids count
    against the program's budget)."""
    code = (
        "import java.nio.file.*;\npublic class Main {\n"
        "    public static void main(String[] a) {\n"
        "        long others = ProcessHandle.allProcesses()\n"
        '            .filter(p -> p.info().commandLine().orElse("").contains("HazmatJavac"))'
        ".count();\n"
        '        boolean left = Files.exists(Path.of("/tmp/.hazmat-javac/in"));\n'
        '        System.out.println(others + " " + left);\n'
        "    }\n}\n"
    )
    result = sandbox.run(code, "java", runtime=runtime)
    assert (result.outcome, result.stdout) == (Outcome.OK, "0 false\n"), result


RUNTIME_OOM = {  # the runtime raises its own out-of-memory error, before any kernel limit
    "python": "x = bytearray(1 << 50)\n",
    "java": "public class Main {\n    public static void main(String[] a) {\n"
    "        long[] x = new long[Integer.MAX_VALUE - 8];\n        System.out.println(x.length);\n"
    "    }\n}\n",
}


@pytest.mark.parametrize("language", sorted(RUNTIME_OOM))
def test_a_runtimes_out_of_memory_error_is_the_memory_limit(
    sandbox: Sandbox, runtime: str, language: str
) -> None:
    result = run(sandbox, runtime, RUNTIME_OOM[language], language=language)
    assert result.outcome is Outcome.MEMORY_LIMIT, result
    said = LANGUAGES[language].out_of_memory[0]
    assert result.error is not None and "ran out of memory" in result.error and said in result.error
