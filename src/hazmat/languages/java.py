"""Java: the default JDK, a warm javac, and the class that declares `main` run."""

from types import MappingProxyType

from hazmat.language_builds import read
from hazmat.languages import BUILD_DIR, IMAGE_VERSION, Language, SelfTest
from hazmat.template import fill

# The JDK's class-data archive of javac's own classes (images/toolchains.py makes it)
JAVAC_ARCHIVE = "/usr/lib/hazmat/javac.jsa"
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

LANGUAGE = Language(
    name="java",
    image=f"hazmat/java:{IMAGE_VERSION}",
    source_name="Main.java",
    extensions=(".java",),
    build=JAVA_BUILD,
    prepare=JAVA_PREPARE,
    run=f"exec java {JAVA_RUN_FLAGS} -cp {BUILD_DIR}/classes"
    f' "$(cat {BUILD_DIR}/main-class)"',
    version=(
        'public class Main {\n'
        '    public static void main(String[] args) {\n'
        '        System.out.println(System.getProperty("java.version"));\n'
        '    }\n'
        '}\n'
    ),
    hello="public class Main {\n    public static void main(String[] args) {\n"
    "        System.out.println(1);\n    }\n}\n",
    rank=7,
    analysers=("java",),
    names=MappingProxyType(
        {
            "polygon": ("java",),
            "sandbox_fusion": ("java",),
            "piston": ("java",),
            "judge0": ("62",),
        }
    ),
    self_test=SelfTest(
        greet=(
            'import java.util.Scanner;\n\npublic class Main {\n'
            '    public static void main(String[] args) {\n'
            '        System.out.println("hello " + new Scanner(System.in).nextLine());\n    }\n'
            '}\n'
        ),
        streams=(
            "public class Main { public static void main(String[] a) {"
            ' System.out.println("out"); System.err.println("err"); System.exit(3); } }\n'
        ),
        compile_error=(
            "public class Main { void f() { int x = } }\n",
            "illegal start of expression",
        ),
    ),
    title="Java",
    out_of_memory=("java.lang.OutOfMemoryError",),
)
