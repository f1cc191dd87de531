"""Build steps that warm a compiler in its image, paid for once when the image is built.

C++: `bits/stdc++.h`, which graders' solutions include first, is precompiled for the exact flags
the `cpp` language builds with (a precompiled header is used only with the flags it was made
with); the step checks that g++ really uses it. Java: the JDK's default class-data archive is
made if the package left none, and a second archive holds the classes javac itself loads, so a
build maps them instead of loading and verifying them again.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from hazmat._exceptions import ImageBuildError
from hazmat.backends.chroot import Progress, in_chroot
from hazmat.languages import (
    CXX_FLAGS,
    JAVA_PREPARE,
    JAVAC_ARCHIVE,
    JAVAC_SERVER_ARCHIVE,
    JAVAC_SERVER_JAR,
    JVM_FLAGS,
)

__all__ = ["JAVA_INPUTS", "PCH_INPUTS", "precompile_stdcxx", "prepare_java"]

PCH_INPUTS = (CXX_FLAGS,)
# The warm javac (languages.JAVA_PREPARE starts it ahead of the job, JAVA_BUILD asks it): reads
# one request (javac's arguments, a line each) from the FIFO `in`, removes it, compiles in
# process, writes the diagnostics to `out` and the status to `status`, says so by writing to
# `done` and exits. Before the request it compiles a small program once (the JIT and the
# compiler's classes warm), unless the request is already there (a container started for the
# job: it would only delay it).
JAVAC_SERVER_SOURCE = """\
import java.io.ByteArrayOutputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.SynchronousQueue;
import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;

public final class HazmatJavac {
    public static void main(String[] argv) throws Exception {
        Path dir = Path.of(argv[0]);
        SynchronousQueue<List<String>> requests = new SynchronousQueue<>();
        Thread reader = new Thread(() -> {
            try {
                requests.put(Files.readAllLines(dir.resolve("in")));
            } catch (Exception e) {
                System.exit(2);
            }
        });
        reader.setDaemon(true);
        reader.start();
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        List<String> request = requests.poll();
        if (request == null) {
            warm(javac, dir);
            request = requests.take();
        }
        Files.deleteIfExists(dir.resolve("in"));
        ByteArrayOutputStream diagnostics = new ByteArrayOutputStream();
        int status = javac.run(null, diagnostics, diagnostics, request.toArray(new String[0]));
        Files.write(dir.resolve("out"), diagnostics.toByteArray());
        Files.writeString(dir.resolve("status"), status + "\\n");
        try (OutputStream done = Files.newOutputStream(dir.resolve("done"))) {
            done.write('\\n');
        }
        Files.deleteIfExists(dir.resolve("done"));
        System.exit(0);
    }

    private static void warm(JavaCompiler javac, Path dir) throws Exception {
        Path work = Files.createTempDirectory(dir, "warm");
        Path source = work.resolve("Main.java");
        Files.writeString(source, "import java.util.*;\\npublic class Main {\\n"
            + "    public static void main(String[] args) {\\n"
            + "        List<Integer> xs = new ArrayList<>(List.of(3, 1, 2));\\n"
            + "        Collections.sort(xs);\\n        System.out.println(xs);\\n    }\\n}\\n");
        OutputStream nothing = OutputStream.nullOutputStream();
        javac.run(null, nothing, nothing, "-proc:none", "-d", work.toString(), source.toString());
        try (var paths = Files.walk(work)) {
            paths.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
    }
}
"""
JAVA_INPUTS = (JAVAC_ARCHIVE, JVM_FLAGS, JAVA_PREPARE, JAVAC_SERVER_ARCHIVE, JAVAC_SERVER_SOURCE)
_PROBE = "#include <bits/stdc++.h>\nint main() { std::cout << 1 << std::endl; }\n"


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
