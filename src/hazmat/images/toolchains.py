"""Build steps that warm a compiler in its image, paid for once when the image is built.

C++: `bits/stdc++.h`, which graders' solutions include first, is precompiled for the exact flags
the `cpp` language builds with (a precompiled header is used only with the flags it was made
with); the step checks that g++ really uses it. testlib.h (checkers in testlib's convention,
grade/checkers.py) is put in /usr/include, from the upstream release shipped with hazmat
(images/testlib/, MIT), checked against its pinned SHA-256 first. Java: the JDK's default
class-data archive is made if the package left none, and a second archive holds the classes
javac itself loads, so a build maps them instead of loading and verifying them again; and the
runner of a kept build's Java tests (a JVM started before each test's job) is compiled into a
jar.
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

from hazmat._exceptions import ImageBuildError
from hazmat.backends.inside import program
from hazmat.images.chroot import Progress, in_chroot
from hazmat.languages.cpp import CXX_FLAGS
from hazmat.languages.java import (
    JAVA_PREPARE,
    JAVA_RUNNER_JAR,
    JAVAC_ARCHIVE,
    JAVAC_SERVER_ARCHIVE,
    JAVAC_SERVER_JAR,
    JVM_FLAGS,
)

__all__ = ["GCC_INPUTS", "JAVA_INPUTS", "prepare_gcc", "prepare_java"]

# testlib.h, upstream's release 0.9.41 (github.com/MikeMirzayanov/testlib, tag 0.9.41)
TESTLIB = Path(__file__).parent / "testlib" / "testlib.h"
TESTLIB_SHA256 = "70f74c570f2b45d63086ae6e4c41bbb5c5ffd4428cba9914bbc0396d29be10d8"
GCC_INPUTS = (CXX_FLAGS, TESTLIB_SHA256)
# The warm javac (backends/inside/HazmatJavac.java; languages/java.py's JAVA_PREPARE starts it
# ahead of the job, JAVA_BUILD asks it): reads one request (javac's arguments, a line each)
# from the FIFO `in`, removes it, compiles in process, writes the diagnostics to `out` and the
# status to `status`, says so by writing to `done` and exits. Before the request it compiles a small
# program once (the JIT and the compiler's classes warm), unless the request is already there
# (a container started for the job: it would only delay it).
JAVAC_SERVER_SOURCE = program("HazmatJavac.java")
# A kept build's next Java test, a JVM started before its job (backends/inside/HazmatRunner.java)
JAVA_RUNNER_SOURCE = program("HazmatRunner.java")
JAVA_INPUTS = (
    JAVAC_ARCHIVE,
    JVM_FLAGS,
    JAVA_PREPARE,
    JAVAC_SERVER_ARCHIVE,
    JAVAC_SERVER_SOURCE,
    JAVA_RUNNER_JAR,
    JAVA_RUNNER_SOURCE,
)
_PROBE = "#include <bits/stdc++.h>\nint main() { std::cout << 1 << std::endl; }\n"


def prepare_gcc(rootfs: Path, scratch: Path, progress: Progress) -> None:
    precompile_stdcxx(rootfs, scratch, progress)
    install_testlib(rootfs, progress)


def install_testlib(rootfs: Path, progress: Progress) -> None:
    """/usr/include/testlib.h, once the copy hazmat ships is the pinned release. (Not
    precompiled: a checker's build is mostly the code of testlib's functions, which a
    precompiled header does not save; it took 4.0 s against 4.5 s, for 76 MB more image.)"""
    data = TESTLIB.read_bytes()
    got = hashlib.sha256(data).hexdigest()
    if got != TESTLIB_SHA256:
        raise ImageBuildError(f"{TESTLIB}: SHA-256 {got}, not the pinned {TESTLIB_SHA256}")
    (rootfs / "usr/include/testlib.h").write_bytes(data)
    progress("[gcc] testlib.h 0.9.41 in /usr/include")


def precompile_stdcxx(rootfs: Path, scratch: Path, progress: Progress) -> None:
    """Precompile bits/stdc++.h beside itself, and check that g++ picks the result up."""
    headers = sorted(rootfs.glob("usr/include/*/c++/*/bits/stdc++.h"))
    if not headers:
        raise ImageBuildError("the gcc image has no bits/stdc++.h (is g++ installed?)")
    for header in headers:
        inside = "/" + str(header.relative_to(rootfs))
        progress(f"[gcc] precompiling {inside} ({CXX_FLAGS})")
        in_chroot(
            rootfs, "g++", *CXX_FLAGS.split(), "-x", "c++-header", inside, "-o", inside + ".gch"
        )
    probe = rootfs / "tmp/probe.cpp"
    probe.write_text(_PROBE)
    try:
        used = in_chroot(
            rootfs, "sh", "-c", f"g++ {CXX_FLAGS} -H -fsyntax-only /tmp/probe.cpp 2>&1"
        )
    finally:
        probe.unlink()
    if "! " not in used or ".gch" not in used:
        raise ImageBuildError(f"g++ does not use the precompiled bits/stdc++.h: {used[:400]}")


def prepare_java(rootfs: Path, scratch: Path, progress: Progress) -> None:
    """The JVM's default class-data archive, and one of the classes javac loads."""
    if not list(rootfs.glob("usr/lib/jvm/*/lib/server/classes*.jsa")):
        progress("[java] making the JVM's default class-data archive")
        in_chroot(rootfs, "java", "-Xshare:dump")
    archive = rootfs / JAVAC_ARCHIVE.lstrip("/")
    archive.parent.mkdir(parents=True, exist_ok=True)
    work = rootfs / "tmp/javac-probe"
    work.mkdir(parents=True)
    (work / "Main.java").write_text(
        "import java.util.*;\npublic class Main {\n"
        "    public static void main(String[] args) { System.out.println(List.of(1)); }\n}\n"
    )
    progress(f"[java] archiving javac's classes into {JAVAC_ARCHIVE}")
    flags = [f"-J{flag}" for flag in ("-XX:TieredStopAtLevel=1", *JVM_FLAGS.split())]
    try:
        in_chroot(
            rootfs,
            "javac",
            *flags,
            f"-J-XX:ArchiveClassesAtExit={JAVAC_ARCHIVE}",
            "-d",
            "/tmp/javac-probe/out",
            "/tmp/javac-probe/Main.java",
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if not archive.is_file():
        raise ImageBuildError(f"javac left no class-data archive at {JAVAC_ARCHIVE}")
    archive.chmod(0o644)
    progress(f"[java] {JAVAC_ARCHIVE}: {archive.stat().st_size / 1e6:.0f} MB")
    _javac_server(rootfs, progress)
    _java_runner(rootfs, progress)


def _java_runner(rootfs: Path, progress: Progress) -> None:
    """Compile the runner of a kept build's Java tests into a jar in the image."""
    work = rootfs / "tmp/java-runner"
    work.mkdir(parents=True)
    (work / "HazmatRunner.java").write_text(JAVA_RUNNER_SOURCE)
    progress(f"[java] compiling the tests' runner into {JAVA_RUNNER_JAR}")
    try:
        in_chroot(
            rootfs, "javac", "-d", "/tmp/java-runner/classes", "/tmp/java-runner/HazmatRunner.java"
        )
        in_chroot(rootfs, "jar", "cf", JAVA_RUNNER_JAR, "-C", "/tmp/java-runner/classes", ".")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    jar = rootfs / JAVA_RUNNER_JAR.lstrip("/")
    if not jar.is_file():
        raise ImageBuildError(f"the tests' runner was not built into {JAVA_RUNNER_JAR}")
    jar.chmod(0o644)


def _javac_server(rootfs: Path, progress: Progress) -> None:
    """Compile the warm javac into a jar in the image, and archive the classes it loads (a run
    of it on a request that is already there: `in` and `done` are plain files here)."""
    probe = rootfs / "tmp/javac-server-probe"
    probe.mkdir(parents=True)
    (probe / "HazmatJavac.java").write_text(JAVAC_SERVER_SOURCE)
    progress(f"[java] compiling the warm javac into {JAVAC_SERVER_JAR}")
    source, inside = "/tmp/javac-server-probe/HazmatJavac.java", "/tmp/javac-server-probe"
    try:
        in_chroot(rootfs, "javac", "-d", f"{inside}/server", source)
        in_chroot(rootfs, "jar", "cf", JAVAC_SERVER_JAR, "-C", f"{inside}/server", ".")
        (probe / "in").write_text(f"-proc:none\n-d\n{inside}/classes\n{source}\n")
        (probe / "done").write_text("")
        in_chroot(
            rootfs,
            "java",
            "-XX:TieredStopAtLevel=1",
            *JVM_FLAGS.split(),
            f"-XX:ArchiveClassesAtExit={JAVAC_SERVER_ARCHIVE}",
            "-cp",
            JAVAC_SERVER_JAR,
            "HazmatJavac",
            inside,
        )
        status = (probe / "status").read_text().strip()
    finally:
        shutil.rmtree(probe, ignore_errors=True)
    archive = rootfs / JAVAC_SERVER_ARCHIVE.lstrip("/")
    if status != "0" or not archive.is_file():
        raise ImageBuildError(f"the warm javac did not compile in the image (status {status})")
    for path in (archive, rootfs / JAVAC_SERVER_JAR.lstrip("/")):
        path.chmod(0o644)
