"""One spec per language: its image, its source file name, how to build it and how to run it.

Adding a language is one entry in `LANGUAGES`. `build` and `run` are shell command lines that the
agent runs in the working directory; a non-zero exit of `build` is a compile error and the
program does not run. A language with a `runner` (backends/agent/runners.py) has its interpreter
started with the container, before the job exists; it then runs `entry` instead of `run`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import PurePath
from types import MappingProxyType

from hazmat._exceptions import UnknownLanguage, quoted
from hazmat.language_builds import read
from hazmat.template import fill

__all__ = ["LANGUAGES", "Language", "get_language", "language_for_path"]

# Debian suite -> the tag hazmat's images built from it carry (images/recipes.py builds them)
SUITES: Mapping[str, str] = MappingProxyType({"trixie": "2", "bookworm": "1"})
DEFAULT_SUITE = "trixie"
IMAGE_VERSION = SUITES[DEFAULT_SUITE]  # the tag of the current images (Debian 13)
# The images beside each language's own: the data image (`image: python-data`)
EXTRA_IMAGES = ("python-data",)
# The Go image's build cache with the standard library compiled (images/recipes.py)
GO_CACHE = "/usr/lib/hazmat/gocache"
# Where compiled languages put their build (a tmpfs that allows exec: Language.exec_tmp)
BUILD_DIR = "/tmp/.hazmat-build"
# What the C and C++ images keep prepared: bits/stdc++.h precompiled for these exact flags
# (a precompiled header is used only with the flags it was made with), the JDK's class-data
# archive of javac's own classes
CXX_FLAGS = "-std=c++20 -O2"
JAVAC_ARCHIVE = "/usr/lib/hazmat/javac.jsa"
# Python code an image may carry that the runner executes before it says it is ready
PRELOAD_FILE = "/etc/hazmat/preload.py"

# Go: `go build`, or `go test -c` when the program comes with tests as graders write them (a
# `_test.go` file beside it, or test functions in the program itself: then it is built as
# main_test.go in a folder of its own, with the other files)
GO_BUILD = fill(read("go.sh"), BUILD=BUILD_DIR)
# The JVM as a sandbox wants it: one GC thread, no shared perf-data file in /tmp
JVM_FLAGS = "-XX:+UseSerialGC -XX:-UsePerfData -Xshare:auto"
# Java: a file with one public class of any name runs. javac wants the file named after its
# public class, so the source is copied under that name; the class to run is the one that
# declares `main` (a grader's Main beside a Solution), else the public class, else Main.
# The compiler: a warm one when the container has it (JAVAC_SERVER below), else javac.
JAVA_BUILD = read("java.sh")
# A javac kept warm in the container ahead of the job (Language.prepare, as the program's uid):
# a JVM that has loaded the compiler and compiled a small program once, so that the job's
# compile costs a fraction of a fresh javac's. It serves one compile through the FIFOs in its
# folder, removes them and exits before the program runs (images/toolchains.py).
JAVAC_SERVER = "/tmp/.hazmat-javac"
JAVAC_SERVER_JAR = "/usr/lib/hazmat/javac-server.jar"  # CDS archives classes from jars only
JAVAC_SERVER_ARCHIVE = "/usr/lib/hazmat/javac-server.jsa"
# A program's JVM: the heap may grow to the whole memory limit, so that a program that needs
# more than the limit is stopped by it (memory_limit), as in every other language, rather than
# by an OutOfMemoryError the JVM throws at a quarter of it
JAVA_RUN_FLAGS = f"{JVM_FLAGS} -XX:MaxRAMPercentage=100"
# A kept build's next test, a JVM started before its job (backends/inside/HazmatRunner.java,
# in the Java image: images/toolchains.py)
JAVA_RUNNER_JAR = "/usr/lib/hazmat/java-runner.jar"
JAVA_PREPARE = (
    f"[ -f {JAVAC_SERVER_JAR} ] && mkdir -m 0700 {JAVAC_SERVER}"
    f" && mkfifo {JAVAC_SERVER}/in {JAVAC_SERVER}/done"
    f" && {{ java -XX:TieredStopAtLevel=1 {JVM_FLAGS}"
    f" -XX:SharedArchiveFile={JAVAC_SERVER_ARCHIVE} -cp {JAVAC_SERVER_JAR}"
    f" HazmatJavac {JAVAC_SERVER} </dev/null >/dev/null 2>&1 &"
    f" echo $! > {JAVAC_SERVER}/pid; }}"
)
JAVA_BUILD = fill(
    JAVA_BUILD,
    BUILD=BUILD_DIR,
    ARCHIVE=JAVAC_ARCHIVE,
    SERVER=JAVAC_SERVER,
    JFLAGS=" ".join(f"-J{flag}" for flag in ("-XX:TieredStopAtLevel=1", *JVM_FLAGS.split())),
)


@dataclass(frozen=True)
class Language:
    """How hazmat runs one language."""

    name: str
    image: str
    source_name: str
    extensions: tuple[str, ...]
    run: str
    build: str = ""
    aliases: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    # Compiled languages run a binary from /tmp, so that tmpfs must allow exec.
    exec_tmp: bool = False
    runner: str = ""
    entry: str = ""
    # A shell command run as the program's uid in /tmp before the job exists (in the pool,
    # ahead of time); its failure is ignored.
    prepare: str = ""
    # The source file's name for a module system other than the default (JavaScript and
    # TypeScript: "esm", "commonjs"); the build step and the runner tell them apart by it.
    module_sources: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    # A program that prints 1: what `hazmat doctor` and `hazmat bench` run in this language.
    hello: str = ""

    @property
    def source_names(self) -> tuple[str, ...]:
        """Every name the program's source file may have (none is free for an input file)."""
        return (self.source_name, *self.module_sources.values())

    def source_for(self, module: str | None) -> str:
        """The source file's name for a module system (None: the language's default)."""
        return self.module_sources.get(module or "", self.source_name)


LANGUAGES: Mapping[str, Language] = MappingProxyType(
    {
        "python": Language(
            name="python",
            image=f"hazmat/python:{IMAGE_VERSION}",
            source_name="main.py",
            extensions=(".py",),
            run="exec python3 main.py",
            runner="python",
            entry="main.py",
            aliases=("py", "python3"),
            hello="print(1)",
            env=MappingProxyType({"PYTHONDONTWRITEBYTECODE": "1", "PYTHONIOENCODING": "utf-8"}),
        ),
        "javascript": Language(
            name="javascript",
            image=f"hazmat/node:{IMAGE_VERSION}",
            source_name="main.js",
            extensions=(".js", ".mjs", ".cjs"),
            run="exec node main.js",
            runner="node",
            entry="main.js",
            aliases=("js", "node", "nodejs"),
            hello="console.log(1)",
            module_sources=MappingProxyType({"esm": "main.mjs", "commonjs": "main.cjs"}),
        ),
        "typescript": Language(
            name="typescript",
            image=f"hazmat/node:{IMAGE_VERSION}",
            source_name="main.ts",
            extensions=(".ts", ".mts", ".cts"),
            # main.mts is bundled as an ES module (main.mjs), main.ts and main.cts as CommonJS
            build=(
                "if [ -f main.mts ]; then set -- main.mts esm mjs;"
                " elif [ -f main.cts ]; then set -- main.cts cjs js;"
                " else set -- main.ts cjs js; fi;"
                ' exec esbuild "$1" --bundle --platform=node --format="$2" --packages=external'
                ' --log-level=warning --outfile="/tmp/.hazmat-build/main.$3"'
            ),
            run="exec node /tmp/.hazmat-build/main.js",
            runner="node",
            entry="/tmp/.hazmat-build/main.js",
            aliases=("ts",),
            hello="const one: number = 1;\nconsole.log(one);",
            module_sources=MappingProxyType({"esm": "main.mts", "commonjs": "main.cts"}),
        ),
        "go": Language(
            name="go",
            image=f"hazmat/go:{IMAGE_VERSION}",
            source_name="main.go",
            extensions=(".go",),
            # -s -w: no symbol table or DWARF; panics keep file:line (from pclntab) and the
            # link is ~100 ms shorter at half a CPU (docs/benchmarks.md)
            build=GO_BUILD,
            run="exec /tmp/.hazmat-build/main",
            aliases=("golang",),
            env=MappingProxyType(
                {
                    "GOCACHE": "/tmp/.gocache",
                    # Debian's Go packages (testify) live in /usr/share/gocode
                    "GOPATH": "/tmp/go:/usr/share/gocode",
                    "GOFLAGS": "-buildvcs=false",
                    "GO111MODULE": "off",
                    "CGO_ENABLED": "0",
                    "GOTOOLCHAIN": "local",
                    "GOPROXY": "off",
                }
            ),
            exec_tmp=True,
            hello='package main\n\nimport "fmt"\n\nfunc main() { fmt.Println(1) }\n',
            # a writable build cache that links to the image's compiled standard library
            prepare=(
                f"[ -d {GO_CACHE} ] && mkdir -p .gocache && cp -rs {GO_CACHE}/. .gocache/"
                " && date +%s > .gocache/trim.txt"
            ),
        ),
        "bash": Language(
            name="bash",
            image=f"hazmat/shell:{IMAGE_VERSION}",
            source_name="main.sh",
            extensions=(".sh", ".bash"),
            run="exec bash main.sh",
            aliases=("sh", "shell"),
            hello="echo 1",
        ),
        "c": Language(
            name="c",
            image=f"hazmat/gcc:{IMAGE_VERSION}",
            source_name="main.c",
            extensions=(".c",),
            # C17 with POSIX and GNU's declarations (fork, strdup, getline), as graders expect;
            # libcrypto is linked only when the program uses it (--as-needed): graders pass
            # no flags, and a program may include <openssl/md5.h>
            build=f"mkdir -p {BUILD_DIR} && exec gcc -std=gnu17 -O2 -pipe -o {BUILD_DIR}/main"
            " ./*.c -Wl,--as-needed -lcrypto -lm",
            run=f"exec {BUILD_DIR}/main",
            exec_tmp=True,
            hello='#include <stdio.h>\nint main(void) { printf("1\\n"); return 0; }\n',
        ),
        "cpp": Language(
            name="cpp",
            image=f"hazmat/gcc:{IMAGE_VERSION}",
            source_name="main.cpp",
            extensions=(".cpp", ".cc", ".cxx", ".c++"),
            build=f"mkdir -p {BUILD_DIR} && exec g++ {CXX_FLAGS} -pipe -o {BUILD_DIR}/main"
            " ./*.cpp -Wl,--as-needed -lcrypto",
            run=f"exec {BUILD_DIR}/main",
            aliases=("c++", "cxx"),
            exec_tmp=True,
            hello="#include <bits/stdc++.h>\nint main() { std::cout << 1 << std::endl; }\n",
        ),
        "java": Language(
            name="java",
            image=f"hazmat/java:{IMAGE_VERSION}",
            source_name="Main.java",
            extensions=(".java",),
            build=JAVA_BUILD,
            prepare=JAVA_PREPARE,
            run=f"exec java {JAVA_RUN_FLAGS} -cp {BUILD_DIR}/classes"
            f' "$(cat {BUILD_DIR}/main-class)"',
            hello="public class Main {\n    public static void main(String[] args) {\n"
            "        System.out.println(1);\n    }\n}\n",
        ),
        "rust": Language(
            name="rust",
            image=f"hazmat/rust:{IMAGE_VERSION}",
            source_name="main.rs",
            extensions=(".rs",),
            build=f"mkdir -p {BUILD_DIR} && exec rustc --edition 2021 -O -C debuginfo=0"
            f" -C strip=symbols -o {BUILD_DIR}/main main.rs",
            run=f"exec {BUILD_DIR}/main",
            aliases=("rs",),
            exec_tmp=True,
            hello='fn main() {\n    println!("1");\n}\n',
        ),
        "ruby": Language(
            name="ruby",
            image=f"hazmat/ruby:{IMAGE_VERSION}",
            source_name="main.rb",
            extensions=(".rb",),
            run="exec ruby main.rb",
            runner="ruby",
            entry="main.rb",
            aliases=("rb",),
            hello="puts 1",
        ),
    }
)

_BY_ALIAS = {alias: lang for lang in LANGUAGES.values() for alias in (lang.name, *lang.aliases)}


def get_language(name: str) -> Language:
    """The language called `name` (or one of its aliases, such as `py` or `ts`)."""
    lang = _BY_ALIAS.get(name.strip().lower()) if isinstance(name, str) else None
    if lang is None:
        known = ", ".join(sorted(LANGUAGES))
        raise UnknownLanguage(f"unknown language {quoted(name)} (known: {known})")
    return lang


def language_for_path(path: str | PurePath) -> Language:
    """The language a file's extension names."""
    suffix = PurePath(path).suffix.lower()
    for lang in LANGUAGES.values():
        if suffix in lang.extensions:
            return lang
    raise UnknownLanguage(
        f"cannot tell the language of {quoted(str(path))} from its extension; pass --lang"
    )


def standard_images() -> frozenset[str]:
    """The names of the images `hazmat images build` makes (`hazmat/<name>:<tag>`): each
    language's, and the extra ones (tests/images/test_images.py checks them against the recipes)."""
    names = {lang.image.partition(":")[0].removeprefix("hazmat/") for lang in LANGUAGES.values()}
    return frozenset(names | set(EXTRA_IMAGES))
